"""Small releases built from records, for the warehouse, release and gate tests (real files, no mocks)."""

from __future__ import annotations

import os
from pathlib import Path

from toolchoice_pipeline.records.calls import Reply, make_call
from toolchoice_pipeline.records.episodes import Episode, JudgeVote, StepRecord
from toolchoice_pipeline.releases.document import ReleaseDocument
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.publish import PublishedRelease, publish_release
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.scoring.summary import ModelScores
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.suite import Suite, SuiteSpec
from toolchoice_pipeline.suites.tasks import Task

CATALOG = [
    ToolDefinition(
        name="Read",
        description="Show one file.",
        parameters={"type": "object", "properties": {"file_path": {"type": "string"}}},
    ),
    ToolDefinition(
        name="Grep",
        description="Search file contents.",
        parameters={"type": "object", "properties": {"pattern": {"type": "string"}}},
    ),
]


def make_suite(n_tasks: int = 40, name: str = "unit") -> Suite:
    """``n_tasks`` tasks ``t00``, ``t01``...: each expects ``Read`` of ``<i>.py``; even ones tagged ``even``."""
    tasks = [
        Task.model_validate(
            {
                "id": f"t{i:02d}",
                "messages": [{"role": "user", "content": f"show {i}.py"}],
                "expected": {"tool": "Read", "arguments": {"file_path": f"{i}.py"}},
                "tags": ["even"] if i % 2 == 0 else ["odd"],
            }
        )
        for i in range(n_tasks)
    ]
    return Suite(spec=SuiteSpec(name=name), directory=Path("suites") / name, curated=CATALOG, live=[], tasks=tasks)


def model_episodes(suite: Suite, model: str, wrong_tool=(), wrong_args=(), errors=()) -> list[Episode]:
    """One episode per task: right unless the task id is in ``wrong_tool`` / ``wrong_args`` / ``errors``."""
    episodes = []
    for task in suite.tasks:
        path = task.expected.arguments["file_path"]
        if task.id in errors:
            episodes.append(
                Episode(
                    model=model,
                    task_id=task.id,
                    error="APIConnectionError: connection reset",
                    steps=[StepRecord(step=0, error="APIConnectionError: connection reset")],
                )
            )
            continue
        if task.id in wrong_tool:
            call = make_call("Grep", {"pattern": path})
        elif task.id in wrong_args:
            call = make_call("Read", {"file_path": "other.py"})
        else:
            call = make_call("Read", {"file_path": path})
        steps = [
            StepRecord(
                step=0,
                reply=Reply(calls=[call]),
                latency_ms=5.0 + len(task.id),
                prompt_tokens=100,
                completion_tokens=10,
                cost_usd=0.0001,
            )
        ]
        episodes.append(Episode(model=model, task_id=task.id, steps=steps))
    return episodes


def votes_for(episodes: list[Episode], polls: int = 3) -> list[JudgeVote]:
    return [
        JudgeVote(
            model=e.model,
            task_id=e.task_id,
            poll=p,
            verdict="correct" if p else "incorrect",
            reasoning=f"poll {p}",
            valid=True,
            judge_model="local/judge",
            rubric_version="rv1",
            cost_usd=0.00001,
        )
        for e in episodes
        if e.error is None
        for p in range(polls)
    ]


def publish(
    data_dir: Path,
    suite: Suite,
    release_id: str,
    kind: str = "release",
    models: dict[str, dict] | None = None,
    force: bool = False,
    promote: bool = True,
    ungated: tuple[str, ...] = (),
    noise: str = "report",
) -> PublishedRelease:
    """Publish a release in which each model gets the outcomes given by :func:`model_episodes` keywords;
    ``ungated`` models are reported without gating it; ``noise`` is the gate's noise mode (as pinned)."""
    models = models if models is not None else {"local/a": {}, "local/b": {}}
    episodes = [e for model, outcome in models.items() for e in model_episodes(suite, model, **outcome)]
    lineage = Lineage(
        release_id=release_id, suite=suite.name, catalog_version=suite.catalog_version, run_id=f"run-{release_id}"
    )
    return publish_release(
        data_dir,
        suite,
        lineage,
        kind,
        episodes,
        votes_for(episodes),
        judge={"model": "local/judge", "polls": 3, "rubric_version": "rv1"},
        force=force,
        promote=promote,
        ungated=ungated,
        noise=noise,  # type: ignore[arg-type]
    )


def write_scored(
    data_dir: Path, release_id: str, suite: str = "unit", kind: str = "nightly", *, written: int | None = None
) -> Path:
    """A finished release as a minimal ``scores.json`` written straight to the store (no run, no scoring, no
    warehouse commit), for tests of what reads stored releases (listing, the trend) rather than of publishing.
    One model (``local/a``); ``written`` (an ordinal) sets its ``evaluated_at`` and the file's modification
    time, so the order of releases never rests on the file system's clock."""
    figures = ModelScores(
        n_tasks=2,
        errors=0,
        right_tool_pct=50.0,
        right_args_pct=50.0,
        calls_per_task=1.0,
        tsq_mean=None,
        agent_cost_usd=0.0,
        judge_cost_usd=0.0,
        latency_ms_p50=None,
        latency_ms_p95=None,
    )
    evaluated_at = None if written is None else f"2026-01-01T00:{written // 60:02d}:{written % 60:02d}Z"
    document = ReleaseDocument(
        release_id=release_id, kind=kind, suite=suite, evaluated_at=evaluated_at, models={"local/a": figures}
    )
    path = ReleaseStore(data_dir).write_scores(document)
    if written is not None:
        os.utime(path, (1_700_000_000 + written, 1_700_000_000 + written))
    return path
