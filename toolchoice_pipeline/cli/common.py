"""Shared CLI plumbing: the ``--data-dir`` option, exit codes, and printing bad input as one line per problem."""

from __future__ import annotations

import errno
from pathlib import Path

import click
from rich.console import Console

from toolchoice_pipeline.util.errors import InputError, display_path

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_BAD_INPUT = 2

data_dir_option = click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default="data",
    show_default=True,
    envvar="TOOLCHOICE_DATA_DIR",
    show_envvar=True,
    help="Project data directory (suites, releases, warehouse, Dagster instance).",
)


def stdout_console() -> Console:
    """A console on stdout for tables; 160 columns wide when stdout is not a terminal (a pipe, a CI log)."""
    console = Console()
    return console if console.is_terminal else Console(width=160)


def run_guarded(group: click.Group, argv: list[str] | None) -> int:
    """Run ``group``; an :class:`InputError` prints each problem on stderr and gives exit code 2, as does a file
    system that refuses a read or write (read-only, no permission, no space)."""
    try:
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
        if exc.errno not in _FILE_SYSTEM_REFUSALS:
            raise
        where = display_path(exc.filename) if exc.filename else "<data-dir>"
        click.echo(f"error: {where}: {exc.strerror}", err=True)
        return EXIT_BAD_INPUT
    return result if isinstance(result, int) else EXIT_OK


# The file system refused: a read-only data directory, no permission, no space. Bad input (the environment the
# user gave), not a bug: one line naming the path, not a traceback. Our writes are atomic (temp file + rename).
_FILE_SYSTEM_REFUSALS = {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT}
