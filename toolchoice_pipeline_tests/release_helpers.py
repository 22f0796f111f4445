"""Small releases built from records, for the warehouse, release and gate tests (real files, no mocks)."""

from __future__ import annotations

from pathlib import Path

from toolchoice_pipeline.records.calls import Reply, make_call
from toolchoice_pipeline.records.episodes import Episode, JudgeVote, StepRecord
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.publish import PublishedRelease, publish_release
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
