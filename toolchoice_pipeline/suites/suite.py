"""Suites: ``data/suites/<suite>/suite.yaml`` with its catalog, tasks and matching profile (DESIGN §3).

``suite.yaml``::

    name: coding_agent              # must equal the directory name
    description: ...
    catalog: catalog.yaml           # curated tool definitions
    tasks: tasks.jsonl
    match_profile: key_args         # or bfcl
    live_catalogs: [live/mcp.json]  # optional live dumps, merged under the curated catalog
    models: [replay/replay.jsonl]   # optional: overrides the run configuration's models

The merged catalog (curated first; live tools only where the curated catalog lacks the name) is the one
versioned. ``fixture_version`` hashes the tasks and the matching profile, so a changed expectation is lineage too.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from toolchoice_pipeline.suites import read_once
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.catalog_files import load_catalog_file, load_tool_dump
from toolchoice_pipeline.suites.model import EMPTY_SUITE, SUITE_FILE, SUITE_NAME, MatchProfile, Suite, SuiteSpec
from toolchoice_pipeline.suites.tasks import Task, read_numbered_tasks
from toolchoice_pipeline.suites.validate import suite_problems
from toolchoice_pipeline.util.confined_paths import confinement_problem
from toolchoice_pipeline.util.errors import InputError, Problem, display_path, field_path, validation_errors
from toolchoice_pipeline.util.yaml_lines import Lines, line_of, load_yaml

__all__ = [
    "EMPTY_SUITE",
    "SUITE_FILE",
    "MatchProfile",
    "Suite",
    "SuiteSpec",
    "list_suites",
    "load_suite",
    "load_suite_spec",
    "suite_dir",
]


def suite_dir(data_dir: Path, name: str) -> Path:
    return data_dir / "suites" / name


def list_suites(data_dir: Path) -> list[str]:
    """Names of the suites under ``<data_dir>/suites`` (directories holding a ``suite.yaml``)."""
    root = data_dir / "suites"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / SUITE_FILE).is_file())


def load_suite_spec(directory: Path) -> SuiteSpec:
    """Read and check ``<directory>/suite.yaml``. Raises :class:`InputError` listing every problem."""
    return _load_spec(directory)[0]


def _load_spec(directory: Path) -> tuple[SuiteSpec, Lines]:
    path = directory / SUITE_FILE
    shown = display_path(path)
    data, lines = load_yaml(path)
    if not isinstance(data, dict):
        raise InputError(
            Problem(file=shown, line=1, message=f"suite.yaml must be a mapping with at least 'name: {directory.name}'")
        )
    problems: list[Problem] = []
    name = data.get("name")
    if isinstance(name, str) and name and name != directory.name:
        problems.append(
            Problem(
                file=shown,
                line=line_of(lines, ("name",)),
                field="name",
                message=f"suite name '{name}' differs from its directory '{directory.name}'",
            )
        )
    try:
        spec = SuiteSpec.model_validate(data)
    except ValidationError as exc:
        problems.extend(
            Problem(file=shown, line=line_of(lines, loc), field=field_path(loc) or None, message=message)
            for loc, message in validation_errors(exc, SuiteSpec)
        )
        problems.sort(key=lambda p: p.line or 0)
        raise InputError(problems) from None
    if problems:
        raise InputError(problems)
    return spec, lines


def load_suite(data_dir: Path, name: str, *, check: bool = True) -> Suite:
    """Load a suite by name from ``<data_dir>/suites/<name>``.

    With ``check`` (the default) the semantic checks of :func:`toolchoice_pipeline.suites.validate.suite_problems` run
    too, on every task that parsed even when other lines or files have problems. Raises :class:`InputError`
    listing every problem found: ``suite.yaml`` first, then the catalog, the live dumps and the tasks by line.
    Parsed once while :func:`~.read_once.inputs_read_once` is active and no file of the suite's directory changed
    (a suite loaded with ``check`` also serves a load without).
    """
    if not read_once.active() or not SUITE_NAME.fullmatch(name or ""):
        return _load_suite(data_dir, name, check=check)
    directory = suite_dir(data_dir, name)
    key = str(directory.resolve())
    found = read_once.held("suite", key, accept=lambda checked: checked or not check)
    if found is not None:
        return found
    # every file under the directory: the files suite.yaml names are confined to it
    files = read_once.signature(sorted(p for p in directory.rglob("*") if p.is_file()) if directory.is_dir() else [])
    return read_once.hold("suite", key, files, _load_suite(data_dir, name, check=check), extra=check)


def _load_suite(data_dir: Path, name: str, *, check: bool) -> Suite:
    if not SUITE_NAME.fullmatch(name or ""):
        raise InputError(
            Problem(
                file="<command line>",
                field="--suite",
                message=f"{name!r} is not a valid suite name (letters, digits, '_', '.', '-'; "
                "starting with a letter or digit)",
            )
        )
    directory = suite_dir(data_dir, name)
    if directory.is_dir() and not (directory / SUITE_FILE).is_file():
        held = ", ".join(sorted(p.name for p in directory.iterdir())[:6]) or "nothing"
        raise InputError(
            Problem(
                file=display_path(directory / SUITE_FILE),
                message=f"the suite folder '{name}' has no {SUITE_FILE} (it holds: {held}); write "
                f"one naming the catalog and tasks files (docs/DESIGN.md §3)",
            )
        )
    if not (directory / SUITE_FILE).is_file():
        known = ", ".join(list_suites(data_dir)) or "none"
        raise InputError(
            Problem(
                file=display_path(directory / SUITE_FILE),
                message=f"no suite '{name}' (suites in {display_path(data_dir)}: {known})",
            )
        )
    spec, lines = _load_spec(directory)
    spec_file = display_path(directory / SUITE_FILE)
    problems: list[Problem] = []

    def listed(field: str, path: tuple, relative: str) -> bool:
        """True when the file ``suite.yaml`` names is inside the suite directory (:mod:`.confined_paths`) and
        exists; else a problem on the suite.yaml line naming it."""
        outside = confinement_problem(relative, "suite directory")
        if outside is not None:
            problems.append(Problem(file=spec_file, line=line_of(lines, path), field=field, message=outside))
            return False
        target = directory / relative
        if target.is_file():
            return True
        why = "is a directory, not a file" if target.is_dir() else "file not found"
        problems.append(
            Problem(file=spec_file, line=line_of(lines, path), field=field, message=f"{why}: {display_path(target)}")
        )
        return False

    curated: list[ToolDefinition] = []
    catalog_loaded = False
    if listed("catalog", ("catalog",), spec.catalog):
        try:
            curated = load_catalog_file(directory / spec.catalog)
            catalog_loaded = True
        except InputError as exc:
            problems.extend(exc.problems)
    live: list[ToolDefinition] = []
    for index, dump in enumerate(spec.live_catalogs):
        if not listed(f"live_catalogs[{index}]", ("live_catalogs", index), dump):
            catalog_loaded = False
            continue
        try:
            live.extend(load_tool_dump(directory / dump))
        except InputError as exc:
            problems.extend(exc.problems)
            catalog_loaded = False
    numbered: list[tuple[int, Task]] = []
    task_problems: list[Problem] = []
    tasks_read = listed("tasks", ("tasks",), spec.tasks)
    if tasks_read:
        try:
            numbered, task_problems = read_numbered_tasks(directory / spec.tasks)
        except InputError as exc:
            task_problems = list(exc.problems)
    suite = Suite(
        spec=spec,
        directory=directory,
        curated=curated,
        live=live,
        tasks=[t for _, t in numbered],
        task_lines={t.id: n for n, t in numbered},
    )
    if check and tasks_read:
        semantic = suite_problems(suite, catalog_loaded=catalog_loaded)
        if task_problems:  # lines that did not parse: the suite is not empty, only broken
            empty = Problem(file=display_path(suite.tasks_file), message=EMPTY_SUITE)
            semantic = [p for p in semantic if p != empty]
        task_problems = sorted(task_problems + semantic, key=lambda p: p.line or 0)
    problems.extend(task_problems)
    if problems:
        raise InputError(problems)
    return suite
