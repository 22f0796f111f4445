"""The ops of the sharded stages: ``agent_runs`` and ``judge_votes`` fan out over shards and fan back in.

Each of the two assets is a graph: a planning op yields one dynamic output per shard (a model × a block of
tasks, :mod:`toolchoice_pipeline.execution.shards`), a mapped op runs one shard and stages its records in
``_staging/release_id=<id>/<asset>/<shard>.parquet``, and a gathering op lists the shard files, in shard order,
as the asset's output (:class:`~.staging.StagedRecords`). Every step reads and writes the data directory only,
so the run's executor may run the shards in the run's process (the default), in worker processes
(``toolchoice run --workers N``: Dagster's multiprocess executor) or on a cluster (docs/scale.md). Budgets
hold across shards through one spend ledger per run (:mod:`toolchoice_pipeline.execution.spend`; Redis across
machines). With the warehouse on an object store, staging and each shard's journal rows are there too
(:func:`~.staging.shard_journal`), so a step needs no shared volume.
"""

import functools
from collections.abc import Sequence
from pathlib import Path

import dagster as dg
from pydantic import BaseModel

from toolchoice_pipeline.defs.metadata import episode_metadata, judge_metadata
from toolchoice_pipeline.defs.pools import PROVIDERS_POOL
from toolchoice_pipeline.defs.resources import ProgressReporter, ToolchoiceResource, logged_progress
from toolchoice_pipeline.defs.run_tags import tag_run
from toolchoice_pipeline.defs.staging import (
    Records,
    RowsDigest,
    StagedRecords,
    location,
    rows_version,
    shard_journal,
    shard_path,
    staging_dir,
    write_records,
)
from toolchoice_pipeline.execution.shards import Shard, plan_shards
from toolchoice_pipeline.execution.spend import RedisSpendLedger, SpendLedger, open_spend_ledger
from toolchoice_pipeline.records.episodes import Episode, JudgeVote
from toolchoice_pipeline.releases.object_store import is_remote
from toolchoice_pipeline.releases.snapshot import ReleaseSnapshot
from toolchoice_pipeline.suites.catalog import catalog_version
from toolchoice_pipeline.suites.tasks import Task
from toolchoice_pipeline.util.canonical import short_hash
from toolchoice_pipeline.util.errors import InputError

CANARY_SHARD = "canary"

#: A shard step that fails unexpectedly (a worker process or pod lost, a store hiccup) is tried again, twice, after
#: 10 s and 20 s. A retry is nearly free: every finished call and poll is journaled, so it asks only what the failed
#: try had not finished. Failures that are verdicts (bad input, a model or judge unavailable after the calls'
#: own retries) say ``allow_retries=False`` and fail at once.
SHARD_RETRY_POLICY = dg.RetryPolicy(max_retries=2, delay=10, backoff=dg.Backoff.EXPONENTIAL)


def interrupts_not_retried(compute_fn):
    """Under a ``RetryPolicy`` Dagster retries a step that was interrupted (it reads a preempted pod so), which would
    keep a ``toolchoice run`` stopped with Ctrl-C or SIGTERM running its shard again and again. An interrupt is the
    user's stop: it fails the step at once, never retried, named as Dagster names an interrupt (the CLI reports
    "interrupted" and exits 130/143; nothing is published, the journals keep what finished)."""

    @functools.wraps(compute_fn)
    def stopped_on_interrupt(*args, **kwargs):
        try:
            return compute_fn(*args, **kwargs)
        except (KeyboardInterrupt, dg.DagsterExecutionInterruptedError):
            raise dg.Failure(
                description="DagsterExecutionInterruptedError: interrupted (not retried)", allow_retries=False
            ) from None

    return stopped_on_interrupt


PREFLIGHT_SHARD = "preflight"


class ShardResult(BaseModel):
    """What one shard step staged: its file, row count and the hash of its records (12 hex)."""

    order: int
    key: str
    path: str
    rows: int
    version: str
    counts: dict[str, int] = {}


def bad_input(release_id: str, exc: InputError) -> dg.Failure:
    """The failure of a step stopped by bad input: its problems, one per line (``toolchoice run`` exits 2 on the
    "bad input" prefix)."""
    return dg.Failure(description=f"bad input for release {release_id}:\n{exc}", allow_retries=False)


def judge_rate_limits(data_dir: Path, snapshot: ReleaseSnapshot):
    """The run's rate limiters for the judge's calls (None without ``rate_limits``); bad store is bad input."""
    from toolchoice_pipeline.execution.rate_limits import rate_limiters

    try:
        return rate_limiters(snapshot.config.rate_limits, data_dir)
    except InputError as exc:
        raise bad_input(snapshot.release_id, exc) from None


def spend_ledger(context: dg.OpExecutionContext, data_dir: Path, release_id: str) -> SpendLedger | RedisSpendLedger:
    """The run's spend ledger, shared by its shard steps (one per run: a re-run starts from nothing spent): in
    Redis when ``TOOLCHOICE_SPEND_URL`` (or a Redis rate-limit URL) is set, else a SQLite file in the release's
    staging directory, or in ``<data_dir>/cache/spend/`` when staging is on an object store (one host only)."""
    staging = staging_dir(data_dir, release_id)
    local = data_dir / "cache" / "spend" / f"release_id={release_id}" if is_remote(staging) else staging
    try:
        return open_spend_ledger(local / f"spend-{context.run_id}.sqlite", release_id, context.run_id)
    except InputError as exc:
        raise bad_input(release_id, exc) from None


def stage_shard(
    data_dir: Path, release_id: str, asset: str, order: int, key: str, records, record_type, **counts: int
) -> ShardResult:
    """Write one shard's records to its staged file; the version hashes their rows in a canonical order
    (:class:`~.staging.RowsDigest`): the same rows in another order are the same version."""
    digest = RowsDigest()
    path = shard_path(data_dir, release_id, asset, key)
    rows = write_records(path, records, record_type, digest)
    return ShardResult(order=order, key=key, path=str(path), rows=rows, version=digest.hexdigest()[:12], counts=counts)


def gathered(results: list[ShardResult]) -> tuple[StagedRecords, dg.DataVersion]:
    """The shards' files in shard order, and a data version from their content."""
    ordered = sorted(results, key=lambda result: result.order)
    return StagedRecords([location(r.path) for r in ordered]), dg.DataVersion(short_hash([r.version for r in ordered]))


def shard_tasks(snapshot: ReleaseSnapshot, key: str) -> Sequence[Task]:
    """The tasks of the agent_runs shard ``key`` (its block of the pinned tasks, read alone from a staged
    snapshot); all the tasks for a key that names no shard (an output not staged per shard)."""
    for shard in plan_shards(snapshot.config, snapshot.config.models, len(snapshot.tasks)):
        if shard.key == key:
            return snapshot.tasks[shard.task_start : shard.task_stop]
    return snapshot.tasks


# --- agent_runs ------------------------------------------------------------------------------------------------


def _same_ids(staged: Records, pinned: Sequence[Task]) -> bool:
    """Whether the staged eval_tasks are the pinned tasks, in order (both read as a stream)."""
    if isinstance(staged, StagedRecords) and isinstance(pinned, StagedRecords) and staged.files == pinned.files:
        return True  # eval_tasks lists the snapshot's own staged tasks
    return len(staged) == len(pinned) and all(a.id == b.id for a, b in zip(staged, pinned, strict=True))


class AgentShard(Shard):
    order: int


@dg.op(out=dg.DynamicOut(AgentShard), description="Check the staged inputs against the pin; one output per shard.")
def plan_agent_shards(
    context: dg.OpExecutionContext,
    release_snapshot: ReleaseSnapshot,
    tool_catalog: Records,
    eval_tasks: Records,
):
    snapshot = release_snapshot
    tag_run(context, snapshot)  # a run of agent_runs alone
    staged = catalog_version(sorted(tool_catalog, key=lambda tool: tool.definition_hash))
    if staged != snapshot.catalog_version or not _same_ids(eval_tasks, snapshot.tasks):
        raise dg.Failure(
            description=(
                f"release {snapshot.release_id}: the staged tool_catalog (catalog {staged}) or eval_tasks differ from "
                f"the release's pinned snapshot (catalog {snapshot.catalog_version}): re-materialise tool_catalog and "
                "eval_tasks of this partition first"
            )
        )
    shards = plan_shards(snapshot.config, snapshot.config.models, len(snapshot.tasks))
    context.log.info(
        f"agent_runs: {len(shards)} shards of at most {snapshot.config.concurrency.shard_episodes} episodes"
    )
    for order, shard in enumerate(shards):
        yield dg.DynamicOutput(AgentShard(order=order, **shard.model_dump()), mapping_key=shard.key)


@dg.op(
    description="Run one model on one block of tasks through LiteLLM; stage the episodes.",
    retry_policy=SHARD_RETRY_POLICY,
    pool=PROVIDERS_POOL,
)
@interrupts_not_retried
def run_agent_shard(
    context: dg.OpExecutionContext,
    toolchoice: ToolchoiceResource,
    progress: dg.ResourceParam[ProgressReporter],
    release_snapshot: ReleaseSnapshot,
    shard: AgentShard,
) -> ShardResult:
    from toolchoice_pipeline.execution.runner import run_suite_sync

    snapshot = release_snapshot
    spec = snapshot.config.models[shard.model_index]
    k = snapshot.config.repeats_for(spec)
    offset, model_total = shard.task_start * k, len(snapshot.tasks) * k
    report = logged_progress(context, progress, "agents")
    report(spec.model, offset, model_total)  # the stage has begun: its bar's clock starts now
    unavailable: dict[str, str] = {}
    ledger = spend_ledger(context, toolchoice.path, snapshot.release_id)
    tasks = snapshot.tasks[shard.task_start : shard.task_stop]
    journal = toolchoice.path / snapshot.config.cache.path
    try:
        with shard_journal(
            toolchoice.path,
            snapshot.release_id,
            "agent_runs",
            shard.key,
            journal=journal,
            table="agent_calls",
            models=[spec.model],
            task_ids=[task.id for task in tasks],
        ):
            episodes = run_suite_sync(
                snapshot.suite(tasks=tasks),
                snapshot.config,
                data_dir=toolchoice.path,
                models=[spec],
                cache_policy=snapshot.cache_policy,
                progress=lambda model, done, total: report(model, offset + done, model_total),
                resume_key=snapshot.release_id,
                unavailable=unavailable,
                ledger=ledger,
            )
    except InputError as exc:
        raise bad_input(snapshot.release_id, exc) from None
    finally:
        ledger.close()
    if unavailable:
        failed = getattr(progress, "failed", None)  # the bar must not read n/n for a model that never answered
        for model, cause in unavailable.items():
            if failed is not None:
                failed("agents", model, cause)
        # Scoring a model that never answered would fail the gate for the wrong reason; every finished call is
        # journaled, so the run after the fix asks only what is missing.
        raise dg.Failure(
            description=f"model unavailable for release {snapshot.release_id}, nothing scored: "
            + "; ".join(unavailable.values())
            + " (the other calls are journaled: fix it and run the same command again)",
            metadata={"unavailable": dg.MetadataValue.json(unavailable)},
            allow_retries=False,  # asked with retries already (execution.retries): a verdict, not a hiccup
        )
    return stage_shard(toolchoice.path, snapshot.release_id, "agent_runs", shard.order, shard.key, episodes, Episode)


@dg.op(out=dg.Out(io_manager_key="staged_io"), description="List the staged shards of agent_runs in shard order.")
def gather_agent_runs(
    context: dg.OpExecutionContext, release_snapshot: ReleaseSnapshot, shards: list[ShardResult]
) -> dg.Output[StagedRecords]:
    snapshot = release_snapshot
    episodes, version = gathered(shards)
    return dg.Output(
        episodes,
        data_version=version,
        metadata={
            "catalog_version": snapshot.catalog_version,
            "fixture_version": snapshot.fixture_version,
            "models": dg.MetadataValue.json(snapshot.config.model_names()),
            "cache_policy": snapshot.cache_policy,
            "shards": len(shards),
            **episode_metadata(episodes),
        },
    )


# --- judge_votes -----------------------------------------------------------------------------------------------


class JudgeShard(BaseModel):
    order: int
    key: str
    path: str
    offset: int = 0  # episodes of the shards before it, for one progress count over the release
    total: int = 0  # episodes of the release


@dg.op(
    out=dg.DynamicOut(JudgeShard),
    description="Check the judge once (preflight, exactly what a poll sends); one output per agent_runs shard.",
)
def plan_judge_shards(
    context: dg.OpExecutionContext,
    toolchoice: ToolchoiceResource,
    release_snapshot: ReleaseSnapshot,
    agent_runs: Records,
):
    from toolchoice_pipeline.judge import JudgeBudget
    from toolchoice_pipeline.judge.preflight import JudgePreflightError, preflight_judge_sync

    snapshot = release_snapshot
    if not snapshot.request.judge:
        return  # --no-judge: no preflight call and no shard (gather_judge_votes stages no votes)
    judge = snapshot.config.judge
    ledger = spend_ledger(context, toolchoice.path, snapshot.release_id)
    try:
        vote = preflight_judge_sync(
            judge,
            data_dir=toolchoice.path,
            retries=snapshot.config.retries,
            budget=JudgeBudget(judge.budget_usd, ledger),
            rate_limits=judge_rate_limits(toolchoice.path, snapshot),
        )
    except JudgePreflightError as exc:  # every vote would be invalid: say why once (the agent calls are journaled)
        raise dg.Failure(
            description=f"judge unavailable for release {snapshot.release_id}, nothing scored: {exc}",
            allow_retries=False,
        ) from None
    finally:
        ledger.close()
    # the preflight call is stored with the votes (its cost is judge cost): gathered after the shards and the canary
    write_records(
        shard_path(toolchoice.path, snapshot.release_id, "judge_votes", PREFLIGHT_SHARD),
        [vote] if vote is not None else [],
        JudgeVote,
    )
    parts = agent_runs.parts()
    total, offset = sum(len(part) for part in parts), 0  # each file's footer read once
    for order, part in enumerate(parts):
        path = part.files[0]
        shard = JudgeShard(order=order, key=path.stem, path=str(path), offset=offset, total=total)
        offset += len(part)
        yield dg.DynamicOutput(shard, mapping_key=path.stem)


@dg.op(
    description="ChainPoll over one shard's episodes (first steps); stage the votes.",
    retry_policy=SHARD_RETRY_POLICY,
    pool=PROVIDERS_POOL,
)
@interrupts_not_retried
def judge_shard(
    context: dg.OpExecutionContext,
    toolchoice: ToolchoiceResource,
    progress: dg.ResourceParam[ProgressReporter],
    release_snapshot: ReleaseSnapshot,
    shard: JudgeShard,
) -> ShardResult:
    from toolchoice_pipeline.judge import JudgeBudget, judge_episodes_sync
    from toolchoice_pipeline.judge.journal import JOURNAL_FILE as POLL_JOURNAL_FILE
    from toolchoice_pipeline.judge.journal import PollJournal

    snapshot = release_snapshot  # planned only when the release is judged (plan_judge_shards)
    judge = snapshot.config.judge
    episodes = list(StagedRecords([location(shard.path)]))
    report = logged_progress(context, progress, "judge")
    report("all models", shard.offset, shard.total)
    ledger = spend_ledger(context, toolchoice.path, snapshot.release_id)
    with shard_journal(
        toolchoice.path,
        snapshot.release_id,
        "judge_votes",
        shard.key,
        journal=toolchoice.path / POLL_JOURNAL_FILE,
        table="judge_polls",
        models={episode.model for episode in episodes},
        task_ids={episode.task_id for episode in episodes},
    ):
        try:
            journal = PollJournal(toolchoice.path, snapshot.release_id)
        except InputError as exc:  # a damaged journal file: bad input (exit 2), named
            raise bad_input(snapshot.release_id, exc) from None
        try:
            votes = judge_episodes_sync(
                snapshot.suite(tasks=shard_tasks(snapshot, shard.key)),
                episodes,
                judge,
                retries=snapshot.config.retries,
                journal=journal,
                progress=lambda done, total: report("all models", shard.offset + done, shard.total),
                budget=JudgeBudget(judge.budget_usd, ledger),
                rate_limits=judge_rate_limits(toolchoice.path, snapshot),
            )
        finally:
            journal.close()
            ledger.close()
    asked, resumed = journal.asked, journal.resumed
    return stage_shard(
        toolchoice.path,
        snapshot.release_id,
        "judge_votes",
        shard.order,
        shard.key,
        votes,
        JudgeVote,
        polls_asked=asked,
        polls_resumed=resumed,
    )


@dg.op(
    out=dg.Out(io_manager_key="staged_io"),
    description="Judge the canary session under the run's budget; list the staged votes in shard order.",
)
def gather_judge_votes(
    context: dg.OpExecutionContext,
    toolchoice: ToolchoiceResource,
    release_snapshot: ReleaseSnapshot,
    shards: list[ShardResult],
) -> dg.Output[StagedRecords]:
    from toolchoice_pipeline.execution.llm import run_sync
    from toolchoice_pipeline.ingest.canary import canary_turns
    from toolchoice_pipeline.judge import RUBRIC_VERSION, JudgeBudget
    from toolchoice_pipeline.judge.calibration import judge_canary

    snapshot = release_snapshot
    judge = snapshot.config.judge
    if not snapshot.request.judge:
        votes, version = gathered(shards)
        return dg.Output(
            votes, data_version=version, metadata={"judge": "skipped (--no-judge)", "rubric_version": RUBRIC_VERSION}
        )
    try:
        canary = canary_turns(toolchoice.path)
    except InputError as exc:  # calibration (release_scores) says so plainly; the episodes' votes are kept
        canary, canary_note = [], f"missing: {exc.problems[0]}"
    else:
        canary_note = f"{len(canary)} turns judged"
    ledger = spend_ledger(context, toolchoice.path, snapshot.release_id)
    budget = JudgeBudget(judge.budget_usd, ledger)
    try:
        canary_votes = run_sync(
            judge_canary(
                canary,
                judge,
                retries=snapshot.config.retries,
                budget=budget,
                rate_limits=judge_rate_limits(toolchoice.path, snapshot),
            )
        )
        spent = budget.spent_usd
    finally:
        ledger.close()
    canary_result = stage_shard(
        toolchoice.path, snapshot.release_id, "judge_votes", len(shards), CANARY_SHARD, canary_votes, JudgeVote
    )
    preflight = shard_path(toolchoice.path, snapshot.release_id, "judge_votes", PREFLIGHT_SHARD)
    preflight_votes = list(StagedRecords([preflight]))
    preflight_result = ShardResult(
        order=len(shards) + 1,
        key=PREFLIGHT_SHARD,
        path=str(preflight),
        rows=len(preflight_votes),
        version=rows_version(preflight_votes),
    )
    votes, version = gathered([*shards, canary_result, preflight_result])
    summary = judge_metadata(gathered(shards)[0])  # the episodes' votes (the canary's and the preflight's apart)
    return dg.Output(
        votes,
        data_version=version,
        metadata={
            "judge_model": judge.model.model,
            "polls": judge.polls,
            "rubric_version": RUBRIC_VERSION,
            "canary": canary_note,
            "shards": len(shards),
            "judge_spend_usd": round(spent, 6) if judge.budget_usd is not None else summary["judge_cost_usd"],
            "judge_polls_asked": sum(result.counts.get("polls_asked", 0) for result in shards),
            "judge_polls_resumed": sum(result.counts.get("polls_resumed", 0) for result in shards),
            **summary,
        },
    )
