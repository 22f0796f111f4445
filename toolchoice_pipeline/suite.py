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

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .canonical import short_hash
from .catalog import ToolDefinition, catalog_version, merge_live
from .catalog_files import load_catalog_file, load_tool_dump
from .errors import InputError, Problem, display_path, field_path, validation_errors
from .tasks import Task, read_numbered_tasks
from .yaml_lines import Lines, line_of, load_yaml

MatchProfile = Literal["key_args", "bfcl"]
SUITE_FILE = "suite.yaml"
SUITE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # a directory under suites/, never a path


class SuiteSpec(BaseModel):
    """The contents of ``suite.yaml``. Paths are relative to the suite directory."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, pattern=SUITE_NAME.pattern)
    description: str = ""
    catalog: str = "catalog.yaml"
    tasks: str = "tasks.jsonl"
    match_profile: MatchProfile = "key_args"
    live_catalogs: list[str] = Field(default_factory=list)
    models: list[str] | None = None

    @field_validator("models")
    @classmethod
    def _models_listed_once(cls, models: list[str] | None) -> list[str] | None:
        repeated = sorted({name for name in models or () if models.count(name) > 1})
        if repeated:
            raise ValueError(f"model listed twice: {', '.join(repeated)}")
        return models


@dataclass
class Suite:
    """A loaded suite. ``catalog`` is the merged catalog; ``task_lines`` maps task id to its line in the file."""

    spec: SuiteSpec
    directory: Path
    curated: list[ToolDefinition]
    live: list[ToolDefinition]
    tasks: list[Task]
    task_lines: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def match_profile(self) -> MatchProfile:
        return self.spec.match_profile

    @property
    def catalog(self) -> list[ToolDefinition]:
        return merge_live(self.curated, self.live)

    def all_tools(self) -> list[ToolDefinition]:
        """The merged catalog, then every distinct inline tool of the tasks (by definition), in first-seen order."""
        tools = list(self.catalog)
        seen = {tool.definition_hash for tool in tools}
        for task in self.tasks:
            for tool in task.tools or ():
                if tool.definition_hash not in seen:
                    seen.add(tool.definition_hash)
                    tools.append(tool)
        return tools

    @property
    def catalog_version(self) -> str:
        """DESIGN §2's ``catalog_version`` of :meth:`all_tools`: for a suite without inline catalogs exactly the
        merged catalog's version; inline tools (BFCL-style suites) count too, same-name tools ordered by hash."""
        return catalog_version(sorted(self.all_tools(), key=lambda tool: tool.definition_hash))

    @property
    def fixture_version(self) -> str:
        """12-hex hash of the tasks (sorted by id, inline catalogs included) and the matching profile."""
        tasks = sorted(self.tasks, key=lambda t: t.id)
        return short_hash({"match_profile": self.match_profile,
                           "tasks": [t.model_dump(mode="json") for t in tasks]})

    @property
    def tasks_file(self) -> Path:
        return self.directory / self.spec.tasks

    def task_catalog(self, task: Task) -> list[ToolDefinition]:
        """The catalog a task is run with: its inline ``tools`` or the suite's merged catalog."""
        return task.tools if task.tools is not None else self.catalog


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
        raise InputError(Problem(file=shown, line=1, message="suite.yaml must be a mapping with at least "
                                                             f"'name: {directory.name}'"))
    problems: list[Problem] = []
    name = data.get("name")
    if isinstance(name, str) and name and name != directory.name:
        problems.append(Problem(file=shown, line=line_of(lines, ("name",)), field="name",
                                message=f"suite name '{name}' differs from its directory '{directory.name}'"))
    try:
        spec = SuiteSpec.model_validate(data)
    except ValidationError as exc:
        problems.extend(Problem(file=shown, line=line_of(lines, loc), field=field_path(loc) or None, message=message)
                        for loc, message in validation_errors(exc, SuiteSpec))
        problems.sort(key=lambda p: p.line or 0)
        raise InputError(problems) from None
    if problems:
        raise InputError(problems)
    return spec, lines


def load_suite(data_dir: Path, name: str, *, check: bool = True) -> Suite:
    """Load a suite by name from ``<data_dir>/suites/<name>``.

    With ``check`` (the default) the semantic checks of :func:`toolchoice_pipeline.validate.suite_problems` run
    too, on every task that parsed even when other lines or files have problems. Raises :class:`InputError`
    listing every problem found: ``suite.yaml`` first, then the catalog, the live dumps and the tasks by line.
    """
    if not SUITE_NAME.match(name or ""):
        raise InputError(Problem(file="<command line>", field="--suite",
                                 message=f"'{name}' is not a valid suite name (letters, digits, '_', '.', '-'; "
                                         "starting with a letter or digit)"))
    directory = suite_dir(data_dir, name)
    if directory.is_dir() and not (directory / SUITE_FILE).is_file():
        held = ", ".join(sorted(p.name for p in directory.iterdir())[:6]) or "nothing"
        raise InputError(Problem(file=display_path(directory / SUITE_FILE),
                                 message=f"the suite folder '{name}' has no {SUITE_FILE} (it holds: {held}); write "
                                         f"one naming the catalog and tasks files (docs/DESIGN.md §3)"))
    if not (directory / SUITE_FILE).is_file():
        known = ", ".join(list_suites(data_dir)) or "none"
        raise InputError(Problem(file=display_path(directory / SUITE_FILE),
                                 message=f"no suite '{name}' (suites in {display_path(data_dir)}: {known})"))
    spec, lines = _load_spec(directory)
    spec_file = display_path(directory / SUITE_FILE)
    problems: list[Problem] = []

    def listed(field: str, path: tuple, relative: str) -> bool:
        """True when the file ``suite.yaml`` names exists; else a problem on the suite.yaml line naming it."""
        target = directory / relative
        if target.is_file():
            return True
        why = "is a directory, not a file" if target.is_dir() else "file not found"
        problems.append(Problem(file=spec_file, line=line_of(lines, path), field=field,
                                message=f"{why}: {display_path(target)}"))
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
    suite = Suite(spec=spec, directory=directory, curated=curated, live=live,
                  tasks=[t for _, t in numbered], task_lines={t.id: n for n, t in numbered})
    if check and tasks_read:
        from .validate import suite_problems

        semantic = suite_problems(suite, catalog_loaded=catalog_loaded)
        if task_problems:  # lines that did not parse: the suite is not empty, only broken
            empty = Problem(file=display_path(suite.tasks_file), message=EMPTY_SUITE)
            semantic = [p for p in semantic if p != empty]
        task_problems = sorted(task_problems + semantic, key=lambda p: p.line or 0)
    problems.extend(task_problems)
    if problems:
        raise InputError(problems)
    return suite


EMPTY_SUITE = "the suite has no tasks: add one task per line as a JSON object (see docs/formats.md)"
