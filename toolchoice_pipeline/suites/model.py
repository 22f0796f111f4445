"""The suite as loaded: ``suite.yaml``'s contents (:class:`SuiteSpec`) and a :class:`Suite` with its merged
catalog, tasks and versions (DESIGN §2-3). Loading and checking it is :mod:`.suite`."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolchoice_pipeline.suites.catalog import ToolDefinition, catalog_version, merge_live
from toolchoice_pipeline.suites.tasks import Task
from toolchoice_pipeline.util.canonical import canonical_json

MatchProfile = Literal["key_args", "bfcl"]
SUITE_FILE = "suite.yaml"
SUITE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # a directory under suites/, never a path


class SuiteSpec(BaseModel):
    """The contents of ``suite.yaml``. Paths are relative to the suite directory. Types are strict, as in the run
    configuration: a YAML ``!!set`` is not a list (its order is lost), ``!!binary`` is not a string."""

    model_config = ConfigDict(extra="forbid", strict=True)

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
        listed = models or []
        repeated = sorted({name for name in listed if listed.count(name) > 1})
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
        # short_hash({"match_profile": ..., "tasks": [...]}) fed to the hash one task at a time: the same digest
        # without a second copy of every task as dicts and one string of them all (a suite of a million tasks).
        digest = hashlib.sha256(f'{{"match_profile":{canonical_json(self.match_profile)},"tasks":['.encode())
        for index, task in enumerate(sorted(self.tasks, key=lambda t: t.id)):
            digest.update((b"," if index else b"") + canonical_json(task.model_dump(mode="json")).encode("utf-8"))
        digest.update(b"]}")
        return digest.hexdigest()[:12]

    @property
    def tasks_file(self) -> Path:
        return self.directory / self.spec.tasks

    def task_catalog(self, task: Task) -> list[ToolDefinition]:
        """The catalog a task is run with: its inline ``tools`` or the suite's merged catalog."""
        return task.tools if task.tools is not None else self.catalog


EMPTY_SUITE = "the suite has no tasks: add one task per line as a JSON object (see docs/formats.md)"
