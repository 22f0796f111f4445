"""The release graph: release_snapshot → tool_catalog → eval_tasks → agent_runs → judge_votes → task_scores →
release_scores → baseline.

Every asset is partitioned by release (a dynamic partition). ``release_snapshot`` resolves the release's request,
suite and run configuration once and pins them (:mod:`toolchoice_pipeline.releases.snapshot`); every later asset
works from its upstream outputs only, never from the suite or configuration files, so re-materialising any asset
of an existing partition evaluates that partition's pinned inputs. Every output carries a data version computed
from its content, so Dagster's staleness follows the data. Stage outputs are staged per release by
:class:`~.io_manager.StagedRecordsIOManager`; ``release_scores`` commits the release's warehouse tables all at
once and writes ``scores.json`` last; ``baseline`` promotes the release, and runs only when the blocking gate
check on ``release_scores`` passed.
"""

from collections import Counter

import dagster as dg

from toolchoice_pipeline.defs.jobs import RELEASE_GROUP
from toolchoice_pipeline.defs.launchpad import LaunchpadRequest
from toolchoice_pipeline.defs.metadata import (
    catalog_diff_against_baseline,
    episode_metadata,
    judge_metadata,
    scores_markdown,
)
from toolchoice_pipeline.defs.partitions import release_partitions
from toolchoice_pipeline.defs.resources import ProgressReporter, ToolchoiceResource, logged_progress
from toolchoice_pipeline.defs.staging import records_version
from toolchoice_pipeline.records.episodes import Episode, JudgeVote, TaskScore
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.snapshot import ReleaseSnapshot, pin_snapshot
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.suites.catalog import ToolDefinition, catalog_version
from toolchoice_pipeline.suites.tasks import Task
from toolchoice_pipeline.util.canonical import short_hash
from toolchoice_pipeline.util.errors import InputError

CODE_VERSION = "2"
COMMON = dict(
    partitions_def=release_partitions, group_name=RELEASE_GROUP, code_version=CODE_VERSION, io_manager_key="staged_io"
)


def bad_input(release_id: str, exc: InputError) -> dg.Failure:
    """The failure of a step stopped by bad input: its problems, one per line (``toolchoice run`` exits 2 on the
    "bad input" prefix)."""
    return dg.Failure(description=f"bad input for release {release_id}:\n{exc}")


def versioned(records: list, metadata: dict) -> dg.Output:
    """``records`` as an output whose data version is the hash of their content (:func:`~.staging.records_version`)."""
    return dg.Output(records, data_version=dg.DataVersion(records_version(records)), metadata=metadata)


def lineage(context: dg.AssetExecutionContext, snapshot: ReleaseSnapshot) -> Lineage:
    return Lineage(
        release_id=snapshot.release_id,
        suite=snapshot.suite_name,
        catalog_version=snapshot.catalog_version,
        run_id=context.op_execution_context.run_id,
    )


@dg.asset(
    **COMMON,
    kinds={"json"},
    deps=["suite_files"],
    description="What the release evaluates, resolved once and pinned in releases/<id>/snapshot.json: the "
    "request, the merged catalog (curated + live dumps), the tasks, the matching profile and the "
    "run configuration (models, params, judge, polls, cache policy) with their versions. "
    "Re-materialised, it returns the pin: a suite edit never changes a release that exists.",
)
def release_snapshot(
    context: dg.AssetExecutionContext, toolchoice: ToolchoiceResource, config: LaunchpadRequest
) -> dg.Output[ReleaseSnapshot]:
    try:
        config.write_if_new(toolchoice.path, context.partition_key)
        snapshot, resolved_now = pin_snapshot(toolchoice.path, context.partition_key)
    except InputError as exc:
        raise bad_input(context.partition_key, exc) from None
    return dg.Output(
        snapshot,
        data_version=dg.DataVersion(snapshot.content_version()),
        metadata={
            "suite": snapshot.suite_name,
            "kind": snapshot.request.kind,
            "catalog_version": snapshot.catalog_version,
            "fixture_version": snapshot.fixture_version,
            "models": dg.MetadataValue.json(snapshot.config.model_names()),
            "judge": (
                f"{snapshot.config.judge.model.model} x{snapshot.config.judge.polls}"
                if snapshot.request.judge
                else "skipped (--no-judge)"
            ),
            "cache_policy": snapshot.cache_policy,
            "resolved_at": snapshot.resolved_at,
            "pinned": "resolved from the files now" if resolved_now else "the partition's existing pin",
        },
    )


@dg.asset(
    **COMMON,
    kinds={"json", "python"},
    description="The tool catalog the agents choose from, as pinned by release_snapshot: the suite's curated "
    "tools merged with its live dumps (curated wins). Its data version is the catalog_version, "
    "so every score downstream traces back to the exact tool descriptions.",
)
def tool_catalog(
    context: dg.AssetExecutionContext, toolchoice: ToolchoiceResource, release_snapshot: ReleaseSnapshot
) -> dg.Output[list[ToolDefinition]]:
    snapshot = release_snapshot
    tools = snapshot.suite().all_tools()
    try:
        diff_md, baseline_id = catalog_diff_against_baseline(toolchoice.path, snapshot.suite(), tools)
    except InputError as exc:  # a damaged baseline.json or warehouse commit record
        raise bad_input(snapshot.release_id, exc) from None
    return dg.Output(
        tools,
        data_version=dg.DataVersion(snapshot.catalog_version),
        metadata={
            "suite": snapshot.suite_name,
            "catalog_version": snapshot.catalog_version,
            "n_tools": len(tools),
            "live_tools": len(snapshot.live),
            "snapshot_resolved_at": snapshot.resolved_at,
            "baseline_release_id": baseline_id or "none",
            "catalog_diff_vs_baseline": dg.MetadataValue.md(diff_md),
        },
    )


@dg.asset(
    **COMMON,
    kinds={"python"},
    deps=[tool_catalog],
    description="The eval tasks as pinned by release_snapshot: a conversation and the tool (with key "
    "arguments) a good agent calls first, or none. Its data version is the fixture_version "
    "(the tasks and the matching profile).",
)
def eval_tasks(context: dg.AssetExecutionContext, release_snapshot: ReleaseSnapshot) -> dg.Output[list[Task]]:
    snapshot = release_snapshot
    tasks = snapshot.tasks
    tags = Counter(tag for task in tasks for tag in task.tags)
    return dg.Output(
        tasks,
        data_version=dg.DataVersion(snapshot.fixture_version),
        metadata={
            "suite": snapshot.suite_name,
            "catalog_version": snapshot.catalog_version,
            "fixture_version": snapshot.fixture_version,
            "match_profile": snapshot.suite_spec.match_profile,
            "n_tasks": len(tasks),
            "n_no_call_tasks": sum(1 for t in tasks if t.expected is not None and t.expected.tool is None),
            "n_unlabelled_tasks": sum(1 for t in tasks if t.expected is None),
            "tags": dg.MetadataValue.json(dict(sorted(tags.items()))),
            # where each task's catalog came from (ingested suites: trace, file, live-dump, curated)
            "catalog_sources": dg.MetadataValue.json(
                {tag.split(":", 1)[1]: count for tag, count in sorted(tags.items()) if tag.startswith("catalog:")}
            ),
        },
    )


def staged_catalog_version(tools: list[ToolDefinition]) -> str:
    """The ``catalog_version`` of a staged ``tool_catalog`` (same-name inline tools ordered by hash, as
    :attr:`~toolchoice_pipeline.suites.model.Suite.catalog_version` does)."""
    return catalog_version(sorted(tools, key=lambda tool: tool.definition_hash))


@dg.asset(
    **COMMON,
    kinds={"litellm", "python"},
    description="Every configured model on every task through LiteLLM: episodes of up to max_steps model "
    "calls, every call recorded with tokens, cost (USD) and latency (ms). Runs the staged "
    "tool_catalog and eval_tasks of the pinned snapshot (fails when they disagree with it). "
    "Served from the call journal where the cache policy allows.",
)
def agent_runs(
    context: dg.AssetExecutionContext,
    toolchoice: ToolchoiceResource,
    progress: dg.ResourceParam[ProgressReporter],
    release_snapshot: ReleaseSnapshot,
    tool_catalog: list[ToolDefinition],
    eval_tasks: list[Task],
) -> dg.Output[list[Episode]]:
    from toolchoice_pipeline.execution.runner import run_suite_sync

    snapshot = release_snapshot
    staged = staged_catalog_version(tool_catalog)
    if staged != snapshot.catalog_version or [t.id for t in eval_tasks] != [t.id for t in snapshot.tasks]:
        raise dg.Failure(
            description=(
                f"release {snapshot.release_id}: the staged tool_catalog (catalog {staged}) or eval_tasks differ from "
                f"the release's pinned snapshot (catalog {snapshot.catalog_version}): re-materialise tool_catalog and "
                "eval_tasks of this partition first"
            )
        )
    unavailable: dict[str, str] = {}
    try:
        episodes = run_suite_sync(
            snapshot.suite(tasks=eval_tasks),
            snapshot.config,
            data_dir=toolchoice.path,
            models=snapshot.config.models,
            cache_policy=snapshot.cache_policy,
            progress=logged_progress(context, progress, "agents"),
            resume_key=snapshot.release_id,
            unavailable=unavailable,
        )
    except InputError as exc:
        raise bad_input(snapshot.release_id, exc) from None
    if unavailable:
        # Scoring a model that never answered would fail the gate for the wrong reason; every finished call is
        # journaled, so the run after the fix asks only what is missing.
        raise dg.Failure(
            description=f"model unavailable for release {snapshot.release_id}, nothing scored: "
            + "; ".join(unavailable.values())
            + " (the other calls are journaled: fix it and run the same command again)",
            metadata={"unavailable": dg.MetadataValue.json(unavailable)},
        )
    return versioned(
        episodes,
        {
            "catalog_version": staged,
            "fixture_version": snapshot.fixture_version,
            "models": dg.MetadataValue.json(snapshot.config.model_names()),
            "cache_policy": snapshot.cache_policy,
            **episode_metadata(episodes),
        },
    )


@dg.asset(
    **COMMON,
    kinds={"litellm", "python"},
    description="ChainPoll: the judge grades each episode's first step several times (independent "
    "chain-of-thought votes, never cached); every vote is kept with its reasoning. TSQ = "
    "yes-votes / valid votes.",
)
def judge_votes(
    context: dg.AssetExecutionContext,
    toolchoice: ToolchoiceResource,
    progress: dg.ResourceParam[ProgressReporter],
    release_snapshot: ReleaseSnapshot,
    agent_runs: list[Episode],
) -> dg.Output[list[JudgeVote]]:
    from toolchoice_pipeline.execution.llm import run_sync
    from toolchoice_pipeline.ingest.canary import canary_turns
    from toolchoice_pipeline.judge import RUBRIC_VERSION, JudgeBudget, judge_episodes_sync
    from toolchoice_pipeline.judge.calibration import judge_canary
    from toolchoice_pipeline.judge.journal import PollJournal
    from toolchoice_pipeline.judge.preflight import JudgePreflightError, preflight_judge_sync

    snapshot = release_snapshot
    judge, retries = snapshot.config.judge, snapshot.config.retries
    if not snapshot.request.judge:
        return versioned([], {"judge": "skipped (--no-judge)", "rubric_version": RUBRIC_VERSION})
    try:
        preflight_judge_sync(judge, data_dir=toolchoice.path, retries=retries)
    except JudgePreflightError as exc:  # every vote would be invalid: say why once (the agent calls are journaled)
        raise dg.Failure(
            description=f"judge unavailable for release {snapshot.release_id}, nothing scored: {exc}"
        ) from None
    report = logged_progress(context, progress, "judge")
    budget = JudgeBudget(judge.budget_usd)  # one budget for the episodes and the canary
    journal = PollJournal(toolchoice.path, snapshot.release_id)
    try:
        votes = judge_episodes_sync(
            snapshot.suite(),
            agent_runs,
            judge,
            retries=retries,
            journal=journal,
            progress=lambda done, total: report("all models", done, total),
            budget=budget,
        )
    finally:
        journal.close()
    try:
        canary = canary_turns(toolchoice.path)
    except InputError as exc:  # calibration (release_scores) says so plainly; the episodes' votes are kept
        canary, canary_note = [], f"missing: {exc.problems[0]}"
    else:
        canary_note = f"{len(canary)} turns judged"
    canary_votes = run_sync(judge_canary(canary, judge, retries=retries, budget=budget))
    return versioned(
        votes + canary_votes,
        {
            "judge_model": judge.model.model,
            "polls": judge.polls,
            "rubric_version": RUBRIC_VERSION,
            "canary": canary_note,
            "judge_spend_usd": round(budget.spent_usd, 6),
            "judge_polls_asked": journal.asked,
            "judge_polls_resumed": journal.resumed,
            **judge_metadata(votes),
        },
    )


@dg.asset(
    **COMMON,
    kinds={"python"},
    description="One score per episode: right tool and right arguments of the first call (matching "
    "profile of the suite), calls per task, TSQ, flags.",
)
def task_scores(
    context: dg.AssetExecutionContext,
    release_snapshot: ReleaseSnapshot,
    agent_runs: list[Episode],
    judge_votes: list[JudgeVote],
) -> dg.Output[list[TaskScore]]:
    from toolchoice_pipeline.releases.store import score_records

    try:
        scores = score_records(release_snapshot.suite(), lineage(context, release_snapshot), agent_runs, judge_votes)
    except InputError as exc:
        raise bad_input(release_snapshot.release_id, exc) from None
    flags = Counter(flag for score in scores for flag in score.flags)
    return versioned(
        scores,
        {
            "n_scores": len(scores),
            "n_infrastructure_errors": sum(1 for s in scores if s.error),
            "flags": dg.MetadataValue.json(dict(sorted(flags.items()))),
        },
    )


@dg.asset(
    partitions_def=release_partitions,
    group_name=RELEASE_GROUP,
    code_version=CODE_VERSION,
    kinds={"duckdb", "parquet"},
    description="Per-model release scores (shares in points, Wilson intervals, cost, latency), gated "
    "against the baseline. Commits the release's Parquet tables and DuckDB views at once and "
    "writes `releases/<release_id>/scores.json` last. Its metadata shows the scores, the gate "
    "report and the trend over releases as Markdown.",
)
def release_scores(
    context: dg.AssetExecutionContext,
    toolchoice: ToolchoiceResource,
    release_snapshot: ReleaseSnapshot,
    agent_runs: list[Episode],
    judge_votes: list[JudgeVote],
    task_scores: list[TaskScore],
) -> dg.MaterializeResult:
    from toolchoice_pipeline.execution.llm import is_priced
    from toolchoice_pipeline.ingest.canary import canary_problem
    from toolchoice_pipeline.judge import RUBRIC_VERSION
    from toolchoice_pipeline.judge.calibration import release_calibration
    from toolchoice_pipeline.judge.preflight import preflight_judge_cost
    from toolchoice_pipeline.releases.report import TREND_WINDOW, load_trend, render_chart, trend_markdown
    from toolchoice_pipeline.releases.store import publish_release

    snapshot = release_snapshot
    judge, request = snapshot.config.judge, snapshot.request
    judge_document = None
    if request.judge:
        right_tool = {(s.model, s.task_id): s.right_tool for s in task_scores if s.sample == 0}
        judge_document = {
            "model": judge.model.model,
            "polls": judge.polls,
            "rubric_version": RUBRIC_VERSION,
            "budget_usd": judge.budget_usd,
            "calibration": release_calibration(
                judge_votes, right_tool, canary_problem(toolchoice.path), judge.calibration
            ),
            **preflight_judge_cost(judge_votes),
        }
    try:
        published = publish_release(
            toolchoice.path,
            snapshot.suite(),
            lineage(context, snapshot),
            request.kind,
            agent_runs,
            judge_votes,
            scores=task_scores,
            force=request.force,
            promote=False,
            judge=judge_document,
            unpriced_agents=[spec.model for spec in snapshot.config.models if not is_priced(spec)],
            judge_unpriced=request.judge and not is_priced(judge.model),
        )
    except InputError as exc:  # the id finished meanwhile (another run), a damaged baseline or warehouse file
        raise bad_input(snapshot.release_id, exc) from None
    trend = load_trend(toolchoice.path, snapshot.suite_name, last=TREND_WINDOW)
    current_baseline = ReleaseStore(toolchoice.path).baseline(snapshot.suite_name)
    chart = render_chart(
        trend,
        published.scores_path.parent / "trend.png",
        title=f"{snapshot.suite_name}: tool choice over the last releases",
        baseline=current_baseline,
    )
    gate = published.gate
    metadata = {
        "catalog_version": snapshot.catalog_version,
        "fixture_version": snapshot.fixture_version,
        "kind": request.kind,
        "baseline_release_id": gate.baseline_release_id or "none yet",
        "gate_passed": gate.passed,
        "scores": dg.MetadataValue.md(scores_markdown(published.scores)),
        "gate_report": dg.MetadataValue.md(published.gate_markdown),
        "trend": dg.MetadataValue.md(trend_markdown(trend, current_baseline)),
        "scores_json": dg.MetadataValue.path(str(published.scores_path.resolve())),
        "agent_cost_usd": round(sum(m.agent_cost_usd for m in published.scores.models.values()), 6),
        "judge_cost_usd": round(
            sum(m.judge_cost_usd for m in published.scores.models.values())
            + ((judge_document or {}).get("calibration") or {}).get("canary_judge_cost_usd", 0.0)
            + (judge_document or {}).get("preflight_judge_cost_usd", 0.0),
            6,
        ),
    }
    if chart is not None:
        metadata["trend_chart"] = dg.MetadataValue.path(str(chart.resolve()))
    document = published.scores.model_dump(mode="json", exclude={"run_id", "evaluated_at"})
    return dg.MaterializeResult(metadata=metadata, data_version=dg.DataVersion(short_hash(document)))


@dg.asset(
    partitions_def=release_partitions,
    group_name=RELEASE_GROUP,
    code_version=CODE_VERSION,
    kinds={"python"},
    deps=[release_scores],
    description="Promotion: a `release`-kind release whose gate passed becomes its suite's baseline. Runs "
    "only after the blocking gate check passed; nightly, catalog-change and adhoc runs never "
    "become the baseline.",
)
def baseline(context: dg.AssetExecutionContext, toolchoice: ToolchoiceResource) -> dg.MaterializeResult:
    store = ReleaseStore(toolchoice.path)
    release_id = context.partition_key
    promoted = store.promote(release_id)
    suite = store.read_scores(release_id).suite
    current = store.baseline(suite) or "none yet"
    return dg.MaterializeResult(
        metadata={"promoted": promoted, "baseline_release_id": current, "suite": suite},
        data_version=dg.DataVersion(short_hash({"promoted": promoted, "baseline_release_id": current})),
    )


release_assets = [
    release_snapshot,
    tool_catalog,
    eval_tasks,
    agent_runs,
    judge_votes,
    task_scores,
    release_scores,
    baseline,
]
