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
from pathlib import Path

import dagster as dg

from toolchoice_pipeline.defs.io_manager import hand_over
from toolchoice_pipeline.defs.jobs import RELEASE_GROUP
from toolchoice_pipeline.defs.launchpad import LaunchpadRequest
from toolchoice_pipeline.defs.metadata import (
    catalog_diff_against_baseline,
    per_model_figures,
    scores_markdown,
    warehouse_table_metadata,
)
from toolchoice_pipeline.defs.partitions import add_run_partition, release_partitions
from toolchoice_pipeline.defs.pools import WAREHOUSE_POOL, ensure_pool_limits
from toolchoice_pipeline.defs.resources import ToolchoiceResource
from toolchoice_pipeline.defs.run_tags import tag_run
from toolchoice_pipeline.defs.schedules import NIGHTLY_FRESHNESS
from toolchoice_pipeline.defs.shards import (
    ShardResult,
    bad_input,
    gather_agent_runs,
    gather_judge_votes,
    gathered,
    judge_shard,
    plan_agent_shards,
    plan_judge_shards,
    run_agent_shard,
    shard_tasks,
    stage_shard,
)
from toolchoice_pipeline.defs.sources import pinned_input
from toolchoice_pipeline.defs.staging import Records, StagedRecords, staging_dir
from toolchoice_pipeline.defs.versions import code_version
from toolchoice_pipeline.records.episodes import TaskScore
from toolchoice_pipeline.releases.document import ReleaseDocument
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.object_store import warehouse_url
from toolchoice_pipeline.releases.snapshot import ReleaseSnapshot, pin_snapshot
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.read_once import forget_inputs
from toolchoice_pipeline.util.canonical import short_hash
from toolchoice_pipeline.util.errors import InputError

#: Who answers for the release assets, and their tags (shown on every asset's page and searchable in the UI).
OWNERS = ["team:toolchoice"]
TAGS = {"domain": "llm-eval", "pipeline": "toolchoice"}


def described(name: str, **extra) -> dict:
    """The arguments every release asset shares: the release partitions, the group, owners, tags, its code
    version (:mod:`~.versions`) and, for an asset whose rows land in a warehouse table, that table's name and
    column schema."""
    return dict(
        partitions_def=release_partitions,
        group_name=RELEASE_GROUP,
        code_version=code_version(name),
        owners=OWNERS,
        tags=TAGS,
        metadata=warehouse_table_metadata(name),
        **extra,
    )


def staged(name: str) -> dict:
    """:func:`described` for an asset whose output is staged by the ``staged_io`` IO manager."""
    return described(name, io_manager_key="staged_io")


def lineage(context: dg.AssetExecutionContext, snapshot: ReleaseSnapshot) -> Lineage:
    return Lineage(
        release_id=snapshot.release_id,
        suite=snapshot.suite_name,
        catalog_version=snapshot.catalog_version,
        run_id=context.op_execution_context.run_id,
    )


@dg.asset(
    **staged("release_snapshot"),
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
    release_id = context.partition_key
    add_run_partition(context.instance, release_id)  # the nightly schedule's run brings its partition as a tag
    ensure_pool_limits(context.instance)  # a run launched from the UI finds the pools' limits before its shards
    try:
        config.write_if_new(toolchoice.path, release_id)
        snapshot, resolved_now = pin_snapshot(toolchoice.path, release_id)
    except InputError as exc:
        raise bad_input(release_id, exc) from None
    tag_run(context, snapshot)
    input_tags = pinned_input(context, toolchoice.path, snapshot)  # the input recorded is the files pinned
    forget_inputs("suite")  # pinned: the later stages work from the pin, the suite read for it is not held any longer
    return dg.Output(
        snapshot,
        data_version=dg.DataVersion(snapshot.content_version()),
        tags=input_tags,
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
    **staged("tool_catalog"),
    kinds={"json", "python"},
    description="The tool catalog the agents choose from, as pinned by release_snapshot: the suite's curated "
    "tools merged with its live dumps (curated wins). Its data version is the catalog_version, "
    "so every score downstream traces back to the exact tool descriptions.",
)
def tool_catalog(
    context: dg.AssetExecutionContext, toolchoice: ToolchoiceResource, release_snapshot: ReleaseSnapshot
) -> dg.Output[list[ToolDefinition]]:
    snapshot = release_snapshot
    tag_run(context, snapshot)
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
    **staged("eval_tasks"),
    kinds={"python"},
    deps=[tool_catalog],
    description="The eval tasks as pinned by release_snapshot: a conversation and the tool (with key "
    "arguments) a good agent calls first, or none. Its data version is the fixture_version "
    "(the tasks and the matching profile).",
)
def eval_tasks(context: dg.AssetExecutionContext, release_snapshot: ReleaseSnapshot) -> dg.Output[Records]:
    snapshot = release_snapshot
    tag_run(context, snapshot)
    tasks = snapshot.tasks  # in a run, the snapshot's staged tasks: listed, not copied
    tags: Counter[str] = Counter()
    n_tasks = no_call = unlabelled = 0
    for task in tasks:
        n_tasks += 1
        tags.update(task.tags)
        no_call += task.expected is not None and task.expected.tool is None
        unlabelled += task.expected is None
    return dg.Output(
        tasks,
        data_version=dg.DataVersion(snapshot.fixture_version),
        metadata={
            "suite": snapshot.suite_name,
            "catalog_version": snapshot.catalog_version,
            "fixture_version": snapshot.fixture_version,
            "match_profile": snapshot.suite_spec.match_profile,
            "n_tasks": n_tasks,
            "n_no_call_tasks": no_call,
            "n_unlabelled_tasks": unlabelled,
            "tags": dg.MetadataValue.json(dict(sorted(tags.items()))),
            # where each task's catalog came from (ingested suites: trace, file, live-dump, curated)
            "catalog_sources": dg.MetadataValue.json(
                {tag.split(":", 1)[1]: count for tag, count in sorted(tags.items()) if tag.startswith("catalog:")}
            ),
        },
    )


@dg.graph_asset(
    **described("agent_runs"),
    kinds={"litellm", "python"},
    description="Every configured model on every task through LiteLLM: episodes of up to max_steps model "
    "calls, every call recorded with tokens, cost (USD) and latency (ms). Fans out over shards (a model × "
    "a block of at most concurrency.shard_episodes episodes), each a step the run's executor places, and "
    "stages them per shard. Runs the staged tool_catalog and eval_tasks of the pinned snapshot (fails when "
    "they disagree with it). Served from the call journal where the cache policy allows.",
)
def agent_runs(release_snapshot, tool_catalog, eval_tasks):
    shards = plan_agent_shards(release_snapshot, tool_catalog, eval_tasks)
    results = shards.map(lambda shard: run_agent_shard(release_snapshot, shard))
    return gather_agent_runs(release_snapshot, results.collect())


@dg.graph_asset(
    **described("judge_votes"),
    kinds={"litellm", "python"},
    description="ChainPoll: the judge grades each episode's first step several times (independent "
    "chain-of-thought votes, never cached), one step per agent_runs shard, then the canary session; every "
    "vote is kept with its reasoning. TSQ = yes-votes / valid votes.",
)
def judge_votes(release_snapshot, agent_runs):
    shards = plan_judge_shards(release_snapshot, agent_runs)
    results = shards.map(lambda shard: judge_shard(release_snapshot, shard))
    return gather_judge_votes(release_snapshot, results.collect())


def shard_pairs(agent_runs: Records, judge_votes: Records):
    """``(shard key, episodes, votes)`` per agent_runs shard: staged shards pair by file name (the canary's votes
    belong to no shard); plain lists (assets called directly) are one shard."""
    if isinstance(agent_runs, StagedRecords) and isinstance(judge_votes, StagedRecords):
        votes = {path.stem: path for path in judge_votes.files}
        for path in agent_runs.files:
            yield (
                path.stem,
                list(StagedRecords([path])),
                list(StagedRecords([votes[path.stem]])) if path.stem in votes else [],
            )
    else:
        yield "all", list(agent_runs), list(judge_votes)


def unpaired_votes(agent_runs: Records, judge_votes: Records) -> list[Records]:
    """The staged votes of no agent_runs shard (the canary's, the judge preflight's), one list per file."""
    if not (isinstance(agent_runs, StagedRecords) and isinstance(judge_votes, StagedRecords)):
        return []  # plain lists: shard_pairs gave every vote with the one shard
    shards = {path.stem for path in agent_runs.files}
    return [StagedRecords([path]) for path in judge_votes.files if path.stem not in shards]


def table_files_dir(data_dir: Path, release_id: str) -> Path:
    """Where ``task_scores`` writes the release's warehouse tables as it scores (:mod:`...releases.staged_tables`)."""
    return staging_dir(data_dir, release_id) / "tables"


@dg.asset(
    **staged("task_scores"),
    kinds={"python"},
    description="One score per episode: right tool and right arguments of the first call (matching "
    "profile of the suite), calls per task, TSQ, flags. Scored shard by shard on the columnar path.",
)
def task_scores(
    context: dg.AssetExecutionContext,
    toolchoice: ToolchoiceResource,
    release_snapshot: ReleaseSnapshot,
    agent_runs: Records,
    judge_votes: Records,
) -> dg.Output[StagedRecords]:
    from toolchoice_pipeline.releases.release_tables import score_shard
    from toolchoice_pipeline.releases.staged_tables import TableFiles
    from toolchoice_pipeline.releases.warehouse_tables import judge_votes_table

    snapshot = release_snapshot
    tag_run(context, snapshot)
    release_lineage = lineage(context, snapshot)
    results: list[ShardResult] = []
    flags: Counter[str] = Counter()
    errors = 0
    # The episodes and votes are converted to Arrow once, here: scored, and written as the warehouse's tables
    # (release_scores commits those files by rename). On an object store the tables are built when publishing.
    table_files = (
        None
        if warehouse_url(toolchoice.path)
        else TableFiles(table_files_dir(toolchoice.path, snapshot.release_id), release_lineage)
    )
    try:
        for order, (key, episodes, votes) in enumerate(shard_pairs(agent_runs, judge_votes)):
            suite = snapshot.suite(tasks=shard_tasks(snapshot, key))
            scores, tables = score_shard(suite, release_lineage, episodes, votes)
            if table_files is not None:
                for name, table in tables.items():
                    table_files.append(name, table)
            flags.update(flag for score in scores for flag in score.flags)
            errors += sum(1 for score in scores if score.error)
            results.append(
                stage_shard(toolchoice.path, snapshot.release_id, "task_scores", order, key, scores, TaskScore)
            )
        if table_files is not None:
            for votes in unpaired_votes(agent_runs, judge_votes):
                table_files.append("judge_votes", judge_votes_table(votes, release_lineage))
            table_files.close()
    except InputError as exc:
        if table_files is not None:
            table_files.abort()
        raise bad_input(snapshot.release_id, exc) from None
    staged, version = gathered(results)
    return dg.Output(
        staged,
        data_version=version,
        metadata={
            "n_scores": sum(result.rows for result in results),
            "n_infrastructure_errors": errors,
            "flags": dg.MetadataValue.json(dict(sorted(flags.items()))),
        },
    )


@dg.asset(
    **described("release_scores", io_manager_key="release_document_io"),
    freshness_policy=NIGHTLY_FRESHNESS,
    pool=WAREHOUSE_POOL,  # one warehouse writer at a time, across runs (CLI runs too)
    kinds={"duckdb", "parquet"},
    description="Per-model release scores (shares in points, Wilson intervals, cost, latency), gated "
    "against the baseline. Commits the release's Parquet tables and DuckDB views at once and "
    "writes `releases/<release_id>/scores.json` last; its output is that typed document, which the checks "
    "and baseline take as it is. Its metadata shows the scores, the gate report and the trend over releases "
    "as Markdown.",
)
def release_scores(
    context: dg.AssetExecutionContext,
    toolchoice: ToolchoiceResource,
    release_snapshot: ReleaseSnapshot,
    agent_runs: Records,
    judge_votes: Records,
    task_scores: Records,
) -> dg.Output[ReleaseDocument]:
    from toolchoice_pipeline.execution.llm import is_priced
    from toolchoice_pipeline.ingest.canary import canary_expected_tsq, canary_problem
    from toolchoice_pipeline.judge import RUBRIC_VERSION
    from toolchoice_pipeline.judge.calibration import release_calibration
    from toolchoice_pipeline.judge.preflight import preflight_judge_cost
    from toolchoice_pipeline.releases.publish import publish_release
    from toolchoice_pipeline.releases.report import TREND_WINDOW, load_trend, trend_markdown
    from toolchoice_pipeline.releases.staged_tables import staged_table_files

    snapshot = release_snapshot
    tag_run(context, snapshot)
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
                judge_votes,
                right_tool,
                lambda: canary_problem(toolchoice.path),  # read only when the judge had no canary to judge
                judge.calibration_mode(snapshot.suite_spec.match_profile),
                canary_expected_tsq=canary_expected_tsq(toolchoice.path),
            ),
            **preflight_judge_cost(judge_votes),
        }
    release_lineage = lineage(context, snapshot)
    # the tables task_scores wrote in this run, committed by rename (None: built here from the staged records)
    staged = (
        None
        if warehouse_url(toolchoice.path)  # staging on an object store: task_scores staged no tables
        else staged_table_files(table_files_dir(toolchoice.path, snapshot.release_id), release_lineage)
    )
    try:
        published = publish_release(
            toolchoice.path,
            snapshot.suite(),
            release_lineage,
            request.kind,
            agent_runs,
            judge_votes,
            scores=task_scores,
            force=request.force,
            promote=False,
            judge=judge_document,
            unpriced_agents=[spec.model for spec in snapshot.config.models if not is_priced(spec)],
            judge_unpriced=request.judge and not is_priced(judge.model),
            ungated=snapshot.config.ungated_models(),
            noise=snapshot.config.gate.noise,  # as pinned: never the live toolchoice.yaml
            staged=staged,
        )
    except InputError as exc:  # the id finished meanwhile (another run), a damaged baseline or warehouse file
        raise bad_input(snapshot.release_id, exc) from None
    skipped: list[str] = []  # a damaged scores.json of another release: named, not silently left out
    trend = load_trend(
        toolchoice.path, snapshot.suite_name, last=TREND_WINDOW, current=published.scores, skipped=skipped
    )
    for line in skipped:
        context.log.warning(line)
    current_baseline = ReleaseStore(toolchoice.path).baseline(snapshot.suite_name)
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
        "scores_json": dg.MetadataValue.path(_shown(published.scores_path)),
        "dagster/row_count": len(published.scores.models),  # the release's rows of the release_scores table
        "agent_cost_usd": round(sum(m.agent_cost_usd for m in published.scores.models.values()), 6),
        "judge_cost_usd": round(
            sum(m.judge_cost_usd for m in published.scores.models.values())
            + ((judge_document or {}).get("calibration") or {}).get("canary_judge_cost_usd", 0.0)
            + (judge_document or {}).get("preflight_judge_cost_usd", 0.0),
            6,
        ),
        # flat numbers per model, "<model>/right_tool_pct" etc.: the Plots tab charts them over releases
        **per_model_figures(published.scores),
    }
    content = published.scores.model_dump(mode="json", exclude={"run_id", "evaluated_at"})
    hand_over(toolchoice.path, published.scores, published.gate_markdown)  # with its gate report, for the checks
    return dg.Output(published.scores, metadata=metadata, data_version=dg.DataVersion(short_hash(content)))


@dg.asset(
    **described("baseline"),
    kinds={"python"},
    pool=WAREHOUSE_POOL,
    description="Promotion: a `release`-kind release whose gate passed becomes its suite's baseline. Runs "
    "only after the blocking gate check passed; nightly, catalog-change and adhoc runs never "
    "become the baseline. Takes release_scores' document as it is.",
)
def baseline(
    context: dg.AssetExecutionContext, toolchoice: ToolchoiceResource, release_scores: ReleaseDocument
) -> dg.MaterializeResult:
    store = ReleaseStore(toolchoice.path)
    promoted, document = store.promote_document(release_scores)
    if document is not release_scores:  # gated again against the baseline in force: the CLI prints this one
        hand_over(toolchoice.path, document)
    current = store.baseline(document.suite) or "none yet"
    return dg.MaterializeResult(
        metadata={"promoted": promoted, "baseline_release_id": current, "suite": document.suite},
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


def _shown(path) -> str:
    """A release file's place for the UI: an absolute local path, or its object-store URL as it is."""
    return str(path.resolve()) if isinstance(path, Path) else str(path)
