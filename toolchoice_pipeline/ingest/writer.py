"""Writing an ingested suite: streamed into a temporary directory, checked, then moved into place at once.

The suite is ``<data-dir>/suites/<suite>/`` with ``suite.yaml`` (match profile ``key_args``; ``models`` =
the suite's own replay file, ``replay/suites/<suite>/replay.jsonl``, a path relative to the data directory),
``catalog.yaml`` (the point-in-time catalog snapshot), ``tasks.jsonl``, ``replay.jsonl`` and ``ingest.json``
(what was ingested: files, sessions, counts, redaction counts by kind, warnings). Until :meth:`commit`
finishes, nothing is visible under ``suites/``: a failed or interrupted ingest leaves the previous state.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.catalog_files import check_catalog, write_catalog_file
from toolchoice_pipeline.suites.suite import SUITE_FILE, SuiteSpec, load_suite_spec
from toolchoice_pipeline.suites.tasks import Task, iter_numbered_tasks
from toolchoice_pipeline.suites.validate import task_problems
from toolchoice_pipeline.util.errors import InputError, Problem, display_path

TASKS_FILE = "tasks.jsonl"
REPLAY_FILE = "replay.jsonl"
CATALOG_FILE = "catalog.yaml"
MANIFEST_FILE = "ingest.json"


def replay_model(suite: str) -> str:
    """The model name of an ingested suite's recorded choices: ``replay/suites/<suite>/replay.jsonl``."""
    return f"replay/suites/{suite}/{REPLAY_FILE}"


@contextlib.contextmanager
def _named(handle: Any) -> Iterator[None]:
    """Re-raise an OSError of a write to ``handle`` (a full disk: ENOSPC, EFBIG) naming its file."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror, handle.name) from None
        raise


class SuiteWriter:
    """Streams tasks and replay lines of a new suite to a temporary directory; see the module doc.

    Raises :class:`InputError` at construction when the suite name is not valid or the suite exists and
    ``force`` is not set (re-ingesting replaces a suite whole; there is no merge).
    """

    def __init__(self, data_dir: Path, suite: str, *, force: bool = False):
        try:
            SuiteSpec(name=suite)
        except ValidationError:
            raise InputError(
                Problem(
                    file="<command line>",
                    field="--suite",
                    message=f"'{suite}' is not a valid suite name (letters, digits, _ . -)",
                )
            ) from None
        self.suite = suite
        self.target = data_dir / "suites" / suite
        if self.target.exists() and not force:
            raise InputError(
                Problem(
                    file=display_path(self.target),
                    field="--suite",
                    message=f"suite '{suite}' exists; pass --force to replace it with this ingest",
                )
            )
        self.tmp_root = data_dir / ".ingest-tmp" / f"{suite}-{uuid.uuid4().hex[:8]}"
        self.directory = self.tmp_root / "suites" / suite
        self.directory.mkdir(parents=True)
        self._tasks = (self.directory / TASKS_FILE).open("w", encoding="utf-8", newline="\n")
        self._replay = (self.directory / REPLAY_FILE).open("w", encoding="utf-8", newline="\n")
        self.task_count = 0
        self._done = False

    def __enter__(self) -> SuiteWriter:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if not self._done:
            self.abort()

    def add(self, task: Task, replay_line: dict[str, Any]) -> None:
        """Append one task and its replay line (DESIGN §3 replay format)."""
        with _named(self._tasks):
            self._tasks.write(task.to_json_line() + "\n")
        with _named(self._replay):
            self._replay.write(json.dumps(replay_line, ensure_ascii=False) + "\n")
        self.task_count += 1

    def rewrite_tasks(self, fix: Callable[[Task, dict[str, Any]], Task | None]) -> int:
        """Pass every written task with its replay line through ``fix`` (a task back: kept, maybe changed; None:
        dropped with its replay line), one line at a time; returns the number of tasks dropped. Only before
        :meth:`commit`."""
        self._tasks.close()
        self._replay.close()
        tasks_path, replay_path = self.directory / TASKS_FILE, self.directory / REPLAY_FILE
        dropped = 0
        with (
            tasks_path.open(encoding="utf-8") as tasks_in,
            replay_path.open(encoding="utf-8") as replay_in,
            (self.directory / (TASKS_FILE + ".new")).open("w", encoding="utf-8", newline="\n") as tasks_out,
            (self.directory / (REPLAY_FILE + ".new")).open("w", encoding="utf-8", newline="\n") as replay_out,
        ):
            for task_line, replay_line in zip(tasks_in, replay_in, strict=True):
                read = Task.model_validate_json(task_line)
                task = fix(read, json.loads(replay_line))
                if task is None:
                    dropped += 1
                    continue
                tasks_out.write(task_line if task is read else task.to_json_line() + "\n")  # unchanged: as written
                replay_out.write(replay_line)
        os.replace(self.directory / (TASKS_FILE + ".new"), tasks_path)
        os.replace(self.directory / (REPLAY_FILE + ".new"), replay_path)
        self.task_count -= dropped
        self._tasks = tasks_path.open("a", encoding="utf-8", newline="\n")
        self._replay = replay_path.open("a", encoding="utf-8", newline="\n")
        return dropped

    def commit(self, *, catalog: list[ToolDefinition], description: str, manifest: dict[str, Any]) -> Path:
        """Write the catalog, ``suite.yaml`` and the manifest, check the suite, and move it into place.

        The check reads ``tasks.jsonl`` back line by line with the same functions :func:`~..suite.load_suite`
        uses (task format, then :func:`~..validate.task_problems` against the task's catalog), so memory does
        not grow with the number of tasks. Raises :class:`InputError` (and leaves nothing behind) on a problem.
        """
        for handle in (self._tasks, self._replay):
            with _named(handle):  # a full disk shows at the last flush or at fsync, never later
                handle.flush()
                os.fsync(handle.fileno())
                handle.close()
        write_catalog_file(self.directory / CATALOG_FILE, catalog)
        spec = SuiteSpec(name=self.suite, description=description, models=[replay_model(self.suite)])
        (self.directory / SUITE_FILE).write_text(
            yaml.safe_dump(spec.model_dump(exclude={"live_catalogs"}), sort_keys=False, allow_unicode=True, width=110),
            encoding="utf-8",
        )
        (self.directory / MANIFEST_FILE).write_text(
            json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        self._check(catalog)
        self.target.parent.mkdir(parents=True, exist_ok=True)
        old = self.tmp_root / "replaced"
        if self.target.exists():
            os.replace(self.target, old)
        try:
            os.replace(self.directory, self.target)
        except OSError:
            if old.exists():
                os.replace(old, self.target)
            raise
        self._done = True
        shutil.rmtree(self.tmp_root, ignore_errors=True)
        _remove_if_empty(self.tmp_root.parent)
        return self.target

    def abort(self) -> None:
        """Drop everything written so far."""
        for handle in (self._tasks, self._replay):
            with contextlib.suppress(OSError):  # its unwritten buffer (a full disk) is dropped anyway
                handle.close()
        shutil.rmtree(self.tmp_root, ignore_errors=True)
        _remove_if_empty(self.tmp_root.parent)
        self._done = True

    def _check(self, catalog: list[ToolDefinition]) -> None:
        load_suite_spec(self.directory)
        problems = check_catalog(catalog, display_path(self.directory / CATALOG_FILE))
        tasks_file = self.directory / TASKS_FILE
        shown = display_path(tasks_file)
        # One task at a time: holding them all would make ingest memory grow with the transcripts.
        for number, task in iter_numbered_tasks(tasks_file, problems):
            problems.extend(task_problems(task, task.tools if task.tools is not None else catalog, shown, number))
        if problems:
            raise InputError(problems)


def _remove_if_empty(directory: Path) -> None:
    try:
        directory.rmdir()
    except OSError:
        pass
