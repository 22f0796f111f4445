"""Recorded calls to tools outside the catalog: kept as the agent's choice, flagged, their results dropped.

A recorded first step that calls a tool its task's catalog does not list (a hallucinated tool) is what a
tool-choice eval must score, so the turn stays a task: its replay line keeps the call as recorded (scoring
flags it ``hallucinated_tool`` and the judge can never call it right), the task is tagged
:data:`~toolchoice_pipeline.suites.tasks.FLAG_HALLUCINATED_TOOL`, and the recorded result of any call to a tool
outside the catalog is dropped from ``tool_results`` (a suite may only hold canned results for tools it offers;
a model under test that makes the same call gets the engine's answer for an unknown tool, like any other
hallucination, never the recorded one). ``ingest.json`` counts them under ``hallucinated``.

A task whose catalog is inline (an OpenTelemetry span that lists its definitions) is checked when its turn is
read; a task graded against the suite catalog (sessions; traces without definitions) once that catalog is
known, in one streamed pass over the written files (see :meth:`.writer.SuiteWriter.rewrite_tasks`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from toolchoice_pipeline.suites.tasks import FLAG_HALLUCINATED_TOOL, Task


@dataclass
class HallucinationCounts:
    """Per ingest: tasks tagged, calls outside the catalog, canned results dropped, and the tool names."""

    tasks: int = 0
    calls: int = 0
    results_dropped: int = 0
    tools: set[str] = field(default_factory=set)

    def as_manifest(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks,
            "calls": self.calls,
            "tool_results_dropped": self.results_dropped,
            "tools": sorted(self.tools),
        }


def flag_task(task: Task, called: Iterable[str], offered: set[str], counts: HallucinationCounts) -> Task:
    """``task`` with the canned results of tools outside ``offered`` dropped and, when a first-step call
    (``called``: its tool names in order) names such a tool, the hallucinated-tool tag; counted in ``counts``."""
    outside = [name for name in called if name not in offered]
    results = task.tool_results or {}
    dropped = [name for name in results if name not in offered]
    if not outside and not dropped:
        return task
    counts.calls += len(outside)
    counts.results_dropped += len(dropped)
    counts.tools.update(outside)
    counts.tools.update(dropped)
    update: dict[str, Any] = {}
    if dropped:
        kept = {name: text for name, text in results.items() if name in offered}
        update["tool_results"] = kept or None
    if outside and FLAG_HALLUCINATED_TOOL not in task.tags:
        counts.tasks += 1
        update["tags"] = [*task.tags, FLAG_HALLUCINATED_TOOL]
    return task.model_copy(update=update)
