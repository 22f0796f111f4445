"""What a matching profile is: a rule that grades a first-step reply against a task's expectation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from toolchoice_pipeline.records.calls import Reply
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.tasks import Expected


@dataclass(frozen=True)
class MatchResult:
    """``right_tool`` / ``right_args`` for one reply, and a one-line ``reason`` for reports."""

    right_tool: bool
    right_args: bool
    reason: str = ""


@dataclass(frozen=True)
class MatchProfile:
    """A named matching rule (DESIGN §4). ``match(expected, reply, catalog)`` never raises for a model's reply;
    ``uses_catalog`` says whether the rule reads the task's catalog (types of parameters), so the columnar path
    knows whether scores depend on each task's inline catalog."""

    name: str
    match: Callable[[Expected, Reply, list[ToolDefinition]], MatchResult]
    uses_catalog: bool
