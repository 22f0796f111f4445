"""Asset checks: the release gate (blocking), judge calibration, row counts and table schemas."""


from pathlib import Path

import dagster as dg

from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline.releases.lineage import LINEAGE_COLUMNS
from toolchoice_pipeline.records.episodes import Episode, JudgeVote, TaskScore
from toolchoice_pipeline.releases.gate import MAX_DROP_POINTS
from toolchoice_pipeline.releases.snapshot import ReleaseSnapshot
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.defs.assets import agent_runs, judge_votes, release_scores, release_snapshot, task_scores
from toolchoice_pipeline.defs.partitions import release_partitions
from toolchoice_pipeline.defs.resources import ToolchoiceResource

ERROR = dg.AssetCheckSeverity.ERROR
#: The release's pinned snapshot, for the checks that need what the release evaluates (never the suite files).
SNAPSHOT_IN = {"release_snapshot": dg.AssetIn(key=release_snapshot.key)}

#: The columns DESIGN §3 promises per table (every table also has the lineage columns).
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "task_scores": ("model", "task_id", "right_tool", "right_args", "calls", "first_tool", "tsq", "error", "flags"),
    "release_scores": ("model", "n_tasks", "right_tool_pct", "right_args_pct", "calls_per_task", "tsq_mean"),
    "agent_calls": ("model", "task_id", "step", "tool_name", "arguments_json", "arguments_valid", "latency_ms",
                    "prompt_tokens", "completion_tokens", "cost_usd", "error"),
    "judge_votes": ("model", "task_id", "poll", "verdict", "reasoning", "valid", "judge_model", "rubric_version",
                    "cost_usd"),
    "tool_catalog": ("tool_name", "description", "parameters_json", "definition_hash"),
}


@dg.asset_check(asset=release_scores, blocking=True, partitions_def=release_partitions,
                description="The regression gate: fails when a model's right-tool or right-arguments share drops "
                            "more than 2 points below the baseline, or more than 5% of its tasks had "
                            "infrastructure errors. Blocking: a failed gate stops promotion to baseline.")
def release_gate(context: dg.AssetCheckExecutionContext, toolchoice: ToolchoiceResource) -> dg.AssetCheckResult:
    scores = ReleaseStore(toolchoice.path).read_scores(context.partition_key)
    gate = scores.gate
    failures = gate.failures if gate is not None else []
    lines = [f"{f.model}: {f.metric} {f.baseline} → {f.now} (drop {f.drop})" for f in failures]
    return dg.AssetCheckResult(
        passed=scores.gate_passed,
        severity=ERROR,
        description=("gate passed" if scores.gate_passed else "gate failed: " + "; ".join(lines)),
        metadata={
            "baseline_release_id": scores.baseline_release_id or "none",
            "max_drop_points": gate.max_drop_points if gate is not None else MAX_DROP_POINTS,
            "n_failures": len(failures),
            "gate_report": dg.MetadataValue.path(str(ReleaseStore(toolchoice.path).scores_path(
                context.partition_key).with_name("gate.md"))),
        },
    )


@dg.asset_check(asset=judge_votes, partitions_def=release_partitions,
                additional_ins={"task_scores": dg.AssetIn(key=task_scores.key), **SNAPSHOT_IN},
                description="Judge calibration (DESIGN §5): the canary session (1 good, 3 bad choices) must score "
                            "TSQ 0.25 (fails above 0.5), and on 20+ labelled tasks the judge's majority verdict must "
                            "agree with right tool better than chance (fails at Cohen's kappa ≤ 0.2).")
def judge_calibration(context: dg.AssetCheckExecutionContext, toolchoice: ToolchoiceResource,
                      judge_votes: list[JudgeVote], task_scores: list[TaskScore],
                      release_snapshot: ReleaseSnapshot) -> dg.AssetCheckResult:
    from toolchoice_pipeline.judge import majority_verdicts
    from toolchoice_pipeline.ingest.canary import canary_turns
    from toolchoice_pipeline.judge.calibration import calibrate, canary_tsq

    data_dir = toolchoice.path
    request, config = release_snapshot.request, release_snapshot.config
    if not request.judge:
        return dg.AssetCheckResult(passed=True, description="not applicable: the judge did not run (--no-judge)")
    try:
        items = canary_turns(data_dir)
    except InputError as exc:
        return dg.AssetCheckResult(passed=False, severity=ERROR,
                                   description=f"the canary session could not be read: {exc.problems[0]}")
    canary = canary_tsq(items, config.judge, config.retries)
    right_tool = {(s.model, s.task_id): s.right_tool for s in task_scores}
    result = calibrate(majority_verdicts(judge_votes), right_tool, canary)
    return dg.AssetCheckResult(
        passed=result.passed and not result.warnings,
        severity=ERROR if not result.passed else dg.AssetCheckSeverity.WARN,
        description=result.message,
        metadata={
            "suite": request.suite,
            "canary_tsq": result.canary_tsq if result.canary_tsq is not None else "none",
            "n_labelled": result.n_labelled,
            "accuracy": result.accuracy if result.accuracy is not None else "n/a",
            "cohen_kappa": result.kappa if result.kappa is not None else "n/a",
        },
    )


def _expected_episodes(snapshot: ReleaseSnapshot) -> tuple[int, int]:
    return len(snapshot.config.models), len(snapshot.tasks)


@dg.asset_check(asset=agent_runs, partitions_def=release_partitions, additional_ins=SNAPSHOT_IN,
                description="Row count: exactly one episode per (model, task), none lost or duplicated.")
def agent_runs_complete(context: dg.AssetCheckExecutionContext, agent_runs: list[Episode],
                        release_snapshot: ReleaseSnapshot) -> dg.AssetCheckResult:
    n_models, n_tasks = _expected_episodes(release_snapshot)
    keys = {(e.model, e.task_id) for e in agent_runs}
    expected = n_models * n_tasks
    return dg.AssetCheckResult(
        passed=len(agent_runs) == expected and len(keys) == expected, severity=ERROR,
        description=f"{len(agent_runs)} episodes ({len(keys)} distinct) for {n_models} models × {n_tasks} tasks",
        metadata={"episodes": len(agent_runs), "expected": expected},
    )


@dg.asset_check(asset=task_scores, partitions_def=release_partitions, additional_ins=SNAPSHOT_IN,
                description="Row count: one task score per episode; shares' inputs complete.")
def task_scores_complete(context: dg.AssetCheckExecutionContext, task_scores: list[TaskScore],
                         release_snapshot: ReleaseSnapshot) -> dg.AssetCheckResult:
    n_models, n_tasks = _expected_episodes(release_snapshot)
    expected = n_models * n_tasks
    distinct = len({(s.model, s.task_id) for s in task_scores})
    return dg.AssetCheckResult(
        passed=len(task_scores) == expected == distinct, severity=ERROR,
        description=f"{len(task_scores)} task scores for {n_models} models × {n_tasks} tasks",
        metadata={"task_scores": len(task_scores), "expected": expected},
    )


@dg.asset_check(asset=release_scores, partitions_def=release_partitions,
                description="Schema: every committed warehouse table of the release has the DESIGN §3 columns "
                            "and the lineage columns (release_id, suite, catalog_version, run_id).")
def warehouse_schema(context: dg.AssetCheckExecutionContext, toolchoice: ToolchoiceResource) -> dg.AssetCheckResult:
    from toolchoice_pipeline.releases.warehouse import Warehouse

    warehouse = Warehouse(Path(toolchoice.path))
    missing: dict[str, list[str]] = {}
    rows: dict[str, int] = {}
    for table, columns in REQUIRED_COLUMNS.items():
        data = warehouse.read_table(table, context.partition_key)
        rows[table] = data.num_rows
        absent = [c for c in (*columns, *LINEAGE_COLUMNS) if c not in data.column_names]
        if absent:
            missing[table] = absent
    return dg.AssetCheckResult(
        passed=not missing, severity=ERROR,
        description="all tables have their columns" if not missing else f"missing columns: {missing}",
        metadata={f"rows_{table}": n for table, n in rows.items()},
    )


release_checks = [release_gate, judge_calibration, agent_runs_complete, task_scores_complete, warehouse_schema]
