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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .canonical import short_hash
from .catalog import ToolDefinition, catalog_version, merge_live
from .catalog_files import load_catalog_file, load_tool_dump
from .errors import InputError, Problem, display_path, pydantic_problems
from .tasks import Task, load_numbered_tasks
from .yaml_lines import line_of, load_yaml

MatchProfile = Literal["key_args", "bfcl"]
SUITE_FILE = "suite.yaml"


class SuiteSpec(BaseModel):
    """The contents of ``suite.yaml``. Paths are relative to the suite directory."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    catalog: str = "catalog.yaml"
    tasks: str = "tasks.jsonl"
    match_profile: MatchProfile = "key_args"
    live_catalogs: list[str] = Field(default_factory=list)
    models: list[str] | None = None


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

    @property
    def catalog_version(self) -> str:
        return catalog_version(self.catalog)

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
    path = directory / SUITE_FILE
    shown = display_path(path)
    data, lines = load_yaml(path)
    if not isinstance(data, dict):
        raise InputError(Problem(file=shown, line=1, message="suite.yaml must be a mapping"))
    try:
        spec = SuiteSpec.model_validate(data)
    except ValidationError as exc:
        problems = [Problem(file=shown, line=line_of(lines, tuple(err["loc"])), field=p.field, message=p.message)
                    for err, p in zip(exc.errors(), pydantic_problems(exc, file=shown))]
        raise InputError(problems) from None
    if spec.name != directory.name:
        raise InputError(Problem(file=shown, line=line_of(lines, ("name",)), field="name",
                                 message=f"suite name '{spec.name}' differs from its directory '{directory.name}'"))
    return spec


def load_suite(data_dir: Path, name: str, *, check: bool = True) -> Suite:
    """Load a suite by name from ``<data_dir>/suites/<name>``.

    With ``check`` (the default) the semantic checks of :func:`toolchoice_pipeline.validate.suite_problems` run
    too. Raises :class:`InputError` listing every problem found.
    """
    directory = suite_dir(data_dir, name)
    if not (directory / SUITE_FILE).is_file():
        known = ", ".join(list_suites(data_dir)) or "none"
        raise InputError(Problem(file=display_path(directory / SUITE_FILE),
                                 message=f"no suite '{name}' (suites in {display_path(data_dir)}: {known})"))
    spec = load_suite_spec(directory)
    problems: list[Problem] = []
    curated: list[ToolDefinition] = []
    live: list[ToolDefinition] = []
    numbered: list[tuple[int, Task]] = []
    try:
        curated = load_catalog_file(directory / spec.catalog)
    except InputError as exc:
        problems.extend(exc.problems)
    for dump in spec.live_catalogs:
        try:
            live.extend(load_tool_dump(directory / dump))
        except InputError as exc:
            problems.extend(exc.problems)
    try:
        numbered = load_numbered_tasks(directory / spec.tasks)
    except InputError as exc:
        problems.extend(exc.problems)
    if problems:
        raise InputError(problems)
    suite = Suite(spec=spec, directory=directory, curated=curated, live=live,
                  tasks=[t for _, t in numbered], task_lines={t.id: n for n, t in numbered})
    if check:
        from .validate import suite_problems

        found = suite_problems(suite)
        if found:
            raise InputError(found)
    return suite
