"""Asset checks: the release gate (blocking), judge calibration, row counts and table schemas. The gate and the
calibration take ``release_scores``' output, the typed release document, as it was handed over."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg

from toolchoice_pipeline.defs.assets import agent_runs, release_scores, release_snapshot, task_scores
from toolchoice_pipeline.defs.io_manager import gate_report
from toolchoice_pipeline.defs.partitions import release_partitions
from toolchoice_pipeline.defs.resources import ToolchoiceResource
from toolchoice_pipeline.defs.staging import Records
from toolchoice_pipeline.releases.confusion import confusion_lines
from toolchoice_pipeline.releases.document import ReleaseDocument
from toolchoice_pipeline.releases.gate import MAX_DROP_POINTS, Comparison, comparisons_markdown
from toolchoice_pipeline.releases.lineage import LINEAGE_COLUMNS
from toolchoice_pipeline.releases.snapshot import ReleaseSnapshot
from toolchoice_pipeline.releases.store import ReleaseStore

ERROR = dg.AssetCheckSeverity.ERROR
#: The release's pinned snapshot, for the checks that need what the release evaluates (never the suite files).
SNAPSHOT_IN = {"release_snapshot": dg.AssetIn(key=release_snapshot.key)}

#: The columns DESIGN §3 promises per table (every table also has the lineage columns).
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "task_scores": ("model", "task_id", "right_tool", "right_args", "calls", "first_tool", "tsq", "error", "flags"),
    "release_scores": ("model", "n_tasks", "right_tool_pct", "right_args_pct", "calls_per_task", "tsq_mean"),
    "agent_calls": (
        "model",
        "task_id",
        "step",
        "tool_name",
        "arguments_json",
        "arguments_valid",
        "latency_ms",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "error",
    ),
    "judge_votes": (
        "model",
        "task_id",
        "poll",
        "verdict",
        "reasoning",
        "valid",
        "judge_model",
        "rubric_version",
        "cost_usd",
    ),
    "tool_catalog": ("tool_name", "description", "parameters_json", "definition_hash"),
}


# Dagster runs a generator check (the result is recorded when yielded, then the raise fails the step) but its
# AssetCheckFunction type admits a returned result only.
@dg.asset_check(  # type: ignore[arg-type]
    asset=release_scores,
    blocking=True,
    partitions_def=release_partitions,
    description="The regression gate: fails when a model's right-tool or right-arguments share drops "
    "more than 2 points below the baseline, or more than 5% of its tasks had "
    "infrastructure errors. Blocking: a failed gate stops promotion to baseline.",
)
def release_gate(
    context: dg.AssetCheckExecutionContext, toolchoice: ToolchoiceResource, release_scores: ReleaseDocument
) -> Iterator[dg.AssetCheckResult]:
    scores = release_scores  # the document release_scores published, as it handed it over
    gate = scores.gate
    failures = gate.failures if gate is not None else []
    lines = [f"{f.model}: {f.metric} {f.baseline} → {f.now} (drop {f.drop})" for f in failures]
    moved = confusion_lines(gate, 1) if gate is not None else []
    limit = gate.max_drop_points if gate is not None else MAX_DROP_POINTS
    result = dg.AssetCheckResult(
        passed=scores.gate_passed,
        severity=ERROR,
        description=("gate passed" if scores.gate_passed else "gate failed: " + "; ".join(lines))
        + (f"; largest confusion change: {moved[0]}" if moved else ""),
        metadata={
            "baseline_release_id": scores.baseline_release_id or "none yet",
            # the limit, named as such; "max_drop_points" kept for readers of the earlier key
            "drop_limit_points": limit,
            "max_drop_points": limit,
            **_largest_drop(gate.comparisons if gate is not None else []),
            "n_failures": len(failures),
            "noise": gate.noise if gate is not None else "report",
            "n_within_noise_warnings": len(gate.warnings) if gate is not None else 0,
            "not_gated": ", ".join(gate.not_gated) if gate is not None and gate.not_gated else "none",
            "comparisons": dg.MetadataValue.md(comparisons_markdown(gate.comparisons if gate is not None else [])),
            "flaky_tasks": dg.MetadataValue.json({m: s.flaky_tasks for m, s in scores.models.items()}),
            "gate_report": dg.MetadataValue.md(gate_report(toolchoice.path, scores)),
            "gate_report_file": dg.MetadataValue.path(_gate_report_file(toolchoice.path, context.partition_key)),
        },
    )
    yield result
    if not result.passed:
        raise gate_failure(context.partition_key, result)


#: The metadata key that marks a step failure as the gate's verdict (``toolchoice run`` prints the verdict itself).
GATE_FAILURE_KEY = "gate_failed"


def gate_failure(release_id: str, result: dg.AssetCheckResult) -> dg.Failure:
    """The failure a failed gate ends its step (and run) with: the gate's reason as the description and its
    figures as metadata, rather than Dagster's blocking-check error and its stack trace. The evaluation was
    recorded before it (the Checks tab shows the gate failed); the failed step still keeps ``baseline`` from
    running. Never retried: the same scores fail the same gate."""
    wanted = ("baseline_release_id", "drop_limit_points", "largest_drop_points", "largest_drop_at", "n_failures")
    return dg.Failure(
        description=f"release {release_id}: {result.description} (the gate report is on release_scores' "
        "release_gate check)",
        metadata={GATE_FAILURE_KEY: True, **{key: result.metadata[key] for key in wanted}},
        allow_retries=False,
    )


def _largest_drop(comparisons: list[Comparison]) -> dict[str, Any]:
    """``largest_drop_points`` (baseline − now, points; negative: every metric rose) and ``largest_drop_at``
    (model and metric) over the gate's comparisons; "n/a" with nothing compared (no baseline yet)."""
    if not comparisons:
        return {"largest_drop_points": "n/a (nothing compared)", "largest_drop_at": "n/a"}
    worst = max(comparisons, key=lambda c: c.drop)
    return {"largest_drop_points": float(worst.drop), "largest_drop_at": f"{worst.model} {worst.metric}"}


def _gate_report_file(data_dir, release_id: str) -> str:
    """Where the release's ``gate.md`` is: an absolute local path, or its object-store URL."""
    store = ReleaseStore(data_dir)
    path = store.scores_path(release_id).with_name("gate.md")
    return str(path) if store.remote else str(path.resolve())


@dg.asset_check(
    asset=release_scores,
    partitions_def=release_partitions,
    description="Judge calibration (DESIGN §5): the canary session (1 good, 3 bad choices), judged with "
    "the release under the same budget, must score TSQ 0.25 (fails above 0.5), and on 20+ "
    "labelled tasks the judge's majority verdict must agree with right tool better than "
    "chance (fails at Cohen's kappa ≤ 0.2). A failure fails the run (exit 4) and blocks "
    "promotion unless judge.calibration is warn.",
)
def judge_calibration(context: dg.AssetCheckExecutionContext, release_scores: ReleaseDocument) -> dg.AssetCheckResult:
    scores = release_scores
    calibration = scores.judge.calibration if scores.judge is not None else None
    if calibration is None:
        return dg.AssetCheckResult(passed=True, description="not applicable: the judge did not run (--no-judge)")
    return dg.AssetCheckResult(
        passed=calibration.passed and not calibration.warnings,
        severity=ERROR if calibration.blocks_promotion else dg.AssetCheckSeverity.WARN,
        description=calibration.message,
        metadata={
            "suite": scores.suite,
            "mode": calibration.mode,
            "blocks_promotion": calibration.blocks_promotion,
            "canary_tsq": calibration.canary_tsq if calibration.canary_tsq is not None else "none",
            "canary_judge_cost_usd": calibration.canary_judge_cost_usd,
            "n_labelled": calibration.n_labelled,
            "accuracy": calibration.accuracy if calibration.accuracy is not None else "n/a",
            "cohen_kappa": calibration.kappa if calibration.kappa is not None else "n/a",
            "per_model": dg.MetadataValue.json({m: a.model_dump() for m, a in calibration.per_model.items()}),
            "failed_models": ", ".join(m for m, a in calibration.per_model.items() if not a.passed) or "none",
        },
    )


def _expected_episodes(snapshot: ReleaseSnapshot) -> tuple[int, int, int]:
    """(models, tasks, expected episodes: tasks × each model's repeats, summed) of the pinned snapshot."""
    config = snapshot.config
    return (
        len(config.models),
        len(snapshot.tasks),
        sum(len(snapshot.tasks) * config.repeats_for(spec) for spec in config.models),
    )


@dg.asset_check(
    asset=agent_runs,
    partitions_def=release_partitions,
    additional_ins=SNAPSHOT_IN,
    description="Row count: exactly one episode per (model, task, sample), none lost or duplicated.",
)
def agent_runs_complete(
    context: dg.AssetCheckExecutionContext, agent_runs: Records, release_snapshot: ReleaseSnapshot
) -> dg.AssetCheckResult:
    n_models, n_tasks, expected = _expected_episodes(release_snapshot)
    keys = {(e.model, e.task_id, e.sample) for e in agent_runs}
    return dg.AssetCheckResult(
        passed=len(agent_runs) == expected and len(keys) == expected,
        severity=ERROR,
        description=f"{len(agent_runs)} episodes ({len(keys)} distinct) of {expected} expected for {n_models} "
        f"models × {n_tasks} tasks × their repeats",
        metadata={"episodes": len(agent_runs), "expected": expected},
    )


@dg.asset_check(
    asset=task_scores,
    partitions_def=release_partitions,
    additional_ins=SNAPSHOT_IN,
    description="Row count: one task score per episode; shares' inputs complete.",
)
def task_scores_complete(
    context: dg.AssetCheckExecutionContext, task_scores: Records, release_snapshot: ReleaseSnapshot
) -> dg.AssetCheckResult:
    n_models, n_tasks, expected = _expected_episodes(release_snapshot)
    distinct = len({(s.model, s.task_id, s.sample) for s in task_scores})
    return dg.AssetCheckResult(
        passed=len(task_scores) == expected == distinct,
        severity=ERROR,
        description=f"{len(task_scores)} task scores of {expected} expected for {n_models} models × {n_tasks} "
        "tasks × their repeats",
        metadata={"task_scores": len(task_scores), "expected": expected},
    )


@dg.asset_check(
    asset=release_scores,
    partitions_def=release_partitions,
    description="Schema: every committed warehouse table of the release has the DESIGN §3 columns "
    "and the lineage columns (release_id, suite, catalog_version, run_id).",
)
def warehouse_schema(context: dg.AssetCheckExecutionContext, toolchoice: ToolchoiceResource) -> dg.AssetCheckResult:
    from toolchoice_pipeline.releases.warehouse import Warehouse

    warehouse = Warehouse(Path(toolchoice.path))
    missing: dict[str, list[str]] = {}
    rows: dict[str, int] = {}
    for table, columns in REQUIRED_COLUMNS.items():
        names, rows[table] = warehouse.table_shape(table, context.partition_key)  # the footer: no row read
        absent = [c for c in (*columns, *LINEAGE_COLUMNS) if c not in names]
        if absent:
            missing[table] = absent
    return dg.AssetCheckResult(
        passed=not missing,
        severity=ERROR,
        description="all tables have their columns" if not missing else f"missing columns: {missing}",
        metadata={f"rows_{table}": n for table, n in rows.items()},
    )


release_checks = [release_gate, judge_calibration, agent_runs_complete, task_scores_complete, warehouse_schema]
