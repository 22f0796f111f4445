"""Shared CLI plumbing: the ``--data-dir`` option, exit codes, and printing bad input as one line per problem."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import click

from toolchoice_pipeline.util.environment import flag
from toolchoice_pipeline.util.errors import InputError, Problem, display_path

if TYPE_CHECKING:  # rich is imported by the commands that print tables, not by every start of the CLI
    from rich.console import Console

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_FAILED = 3  # neither the gate nor the input: a bug or a failure we did not foresee (one line, no traceback)
DEBUG_VARIABLE = "TOOLCHOICE_DEBUG"  # set to 1 to get the traceback of an unforeseen failure

# The --data-dir of the command running, for an error that does not say which file system failed.
_data_dir: list[Path] = []


def _remember_data_dir(_context: click.Context, _parameter: click.Parameter, value: Path) -> Path:
    _data_dir[:] = [value]
    return value


data_dir_option = click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default="data",
    show_default=True,
    envvar="TOOLCHOICE_DATA_DIR",
    show_envvar=True,
    help="Project data directory (suites, releases, warehouse, Dagster instance).",
    callback=_remember_data_dir,
)


def stdout_console() -> Console:
    """A console on stdout for tables; when stdout is not a terminal (a pipe, a CI log), 160 columns wide for
    tables and no line of text broken (a path or a run id cut in two cannot be copied or grepped)."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=160, soft_wrap=True)


def echo_markdown(text: str) -> None:
    """Print Markdown on stdout: rendered (headings, tables, lists) when stdout is a terminal, the text itself
    otherwise, so a pipe, a CI log or ``> file`` gets Markdown that another tool can render."""
    from rich.console import Console
    from rich.markdown import Markdown

    console = Console()
    if console.is_terminal:
        console.print(Markdown(text))
    else:
        click.echo(text, nl=False)


def run_guarded(group: click.Group, argv: list[str] | None) -> int:
    """Run ``group``; an :class:`InputError` prints each problem on stderr and gives exit code 2, as does an OS
    error (read-only, no permission, no space, a missing directory) and input nested too deeply to read; any
    other failure is one line and exit code 3 (``TOOLCHOICE_DEBUG=1`` re-raises it with its traceback)."""
    try:
        check_environment()
        result = group.main(args=argv, prog_name="toolchoice", standalone_mode=False)
    except InputError as exc:
        for problem in exc.problems:
            click.echo(f"error: {problem}", err=True)
        return EXIT_BAD_INPUT
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return EXIT_BAD_INPUT if exc.exit_code == 2 else exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except OSError as exc:
        where = display_path(exc.filename) if exc.filename else "<data-dir>"
        click.echo(f"error: {where}: {exc.strerror or exc}", err=True)
        return EXIT_BAD_INPUT
    except RuntimeError as exc:
        if not str(exc).startswith("Symlink loop"):  # pathlib's resolve() on a link cycle (Python < 3.13)
            return _unexpected(exc)
        where = str(exc).removeprefix("Symlink loop from ").strip("'")
        click.echo(f"error: {display_path(where)}: symlink loop (a link leads back to itself)", err=True)
        return EXIT_BAD_INPUT
    except RecursionError:
        click.echo(
            "error: the input is nested too deeply to read (more levels than Python's recursion limit)", err=True
        )
        return EXIT_BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - no traceback from any command: one line, exit 3
        return _unexpected(exc)
    return result if isinstance(result, int) else EXIT_OK


def _unexpected(exc: Exception) -> int:
    """One line for a failure nobody foresaw (exit 3), or the environment's (exit 2); the traceback with
    ``TOOLCHOICE_DEBUG=1``."""
    if debugging():
        raise exc
    text = " ".join(str(exc).split())[:300]
    if is_environment_failure(text):
        text = full_disk_named(text)
        click.echo(f"error: bad environment: {type(exc).__name__}: {text}", err=True)
        return EXIT_BAD_INPUT
    click.echo(
        f"error: unexpected {type(exc).__name__}: {text} (a bug, please report it; "
        f"{DEBUG_VARIABLE}=1 shows the traceback)",
        err=True,
    )
    return EXIT_FAILED


FLAG_VARIABLES = (DEBUG_VARIABLE, "TOOLCHOICE_ALLOW_OUTSIDE_PATHS", "TOOLCHOICE_RERUN_EVALUATED_CATALOGS")
STORE_VARIABLES = ("TOOLCHOICE_WAREHOUSE_URL", "TOOLCHOICE_RELEASES_URL")


def debugging() -> bool:
    """``TOOLCHOICE_DEBUG`` on (checked before any command runs, so never a bad value here)."""
    try:
        return flag(DEBUG_VARIABLE)
    except InputError:
        return False


def check_environment() -> None:
    """Refuse (exit 2) before any command runs when a variable of ours holds a value we cannot read: a flag that
    is not yes/no (``TOOLCHOICE_DEBUG=maybe``), a store location that is not a usable URL or path. Every problem
    is one line naming the variable."""
    problems = []
    for name in FLAG_VARIABLES:
        try:
            flag(name)
        except InputError as exc:
            problems.extend(exc.problems)
    for name in STORE_VARIABLES:
        if not os.environ.get(name, "").strip():
            continue  # unset: nothing to check, and the object-store module (Arrow) is not imported for it
        from toolchoice_pipeline.releases.object_store import location_problem

        problem = location_problem(name)
        if problem is not None:
            problems.append(Problem(file="<environment>", field=name, message=problem))
    if problems:
        raise InputError(problems)


def check_output_file(path: Path, option: str) -> None:
    """Refuse (exit 2) an output file given on the command line whose directory does not exist (it is never
    created: a typo in a CI path should fail, not write somewhere new) or that is not a regular file."""
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(
            Problem(
                file="<command line>",
                field=option,
                message=f"{display_path(path)}: the directory {display_path(parent)} does not exist "
                "(it is not created)",
            )
        )
    if path.exists() and not path.is_file():
        raise InputError(
            Problem(file="<command line>", field=option, message=f"{display_path(path)}: not a regular file")
        )


# The file system refused: a read-only data directory, no permission, no space. Bad input (the environment the
# user gave), not a bug: one line naming the path, not a traceback. Our writes are atomic (temp file + rename).
FILE_SYSTEM_REFUSALS = {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT}


# What storage libraries (SQLite through SQLAlchemy, DuckDB, Arrow) say when the disk, not the input, failed.
ENVIRONMENT_MARKERS = (
    "No space left on device",
    "Read-only file system",
    "Permission denied",
    "Disk quota exceeded",
    "database or disk is full",
    "disk I/O error",
    "attempt to write a readonly database",
    "File too large",
    "Input/output error",
    "Symlink loop",
    "Too many levels of symbolic links",
)


# Less room than this left on the data directory's file system (a hundredth of a small one, 64 KiB at least): a
# write failed because the disk is full.
FULL_DISK_FREE_BYTES = 1 << 20


def full_disk_named(text: str) -> str:
    """An environment failure's ``text``, saying the disk is full when the command's data directory has less than
    :data:`FULL_DISK_FREE_BYTES` free (a small disk: a hundredth of it): SQLite reports some writes a full disk
    refused (its shared-memory file's, say) as a "disk I/O error"."""
    if not _data_dir or "No space left on device" in text or "disk is full" in text:
        return text
    try:
        total, _, free = shutil.disk_usage(_data_dir[0])
    except OSError:
        return text
    if free >= min(FULL_DISK_FREE_BYTES, max(total // 100, 1 << 16)):
        return text
    return f"{text} (No space left on device: {free:,} bytes free in {display_path(_data_dir[0])})"


def is_environment_failure(text: str) -> bool:
    """True when an error's text says the file system failed (full, read-only, no permission, I/O error)."""
    return any(marker in text for marker in ENVIRONMENT_MARKERS)
