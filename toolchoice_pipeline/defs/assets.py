"""The release graph: tool_catalog → eval_tasks → agent_runs → judge_votes → task_scores → release_scores → baseline.

Every asset is partitioned by release (a dynamic partition). The assets only wire the pure core: they load
the release's request and suite, call the core, and put the numbers in Dagster metadata. Stage outputs are
staged per release by :class:`~.io_manager.StagedRecordsIOManager`; ``release_scores`` commits the release's
warehouse tables all at once and writes ``scores.json`` last; ``baseline`` promotes the release, and runs
only when the blocking gate check on ``release_scores`` passed.
"""


from collections import Counter

import dagster as dg

from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.records.episodes import Episode, JudgeVote, TaskScore
from toolchoice_pipeline.releases.request import ReleaseRequest
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.suites.suite import Suite
from toolchoice_pipeline.suites.tasks import Task
from toolchoice_pipeline.defs.jobs import RELEASE_GROUP
from toolchoice_pipeline.defs.metadata import catalog_diff_against_baseline, episode_metadata, judge_metadata, scores_markdown
from toolchoice_pipeline.defs.partitions import release_partitions
from toolchoice_pipeline.defs.resources import ProgressReporter, ToolchoiceResource, logged_progress

CODE_VERSION = "1"
COMMON = dict(partitions_def=release_partitions, group_name=RELEASE_GROUP, code_version=CODE_VERSION,
              io_manager_key="staged_io")


def bad_input(release_id: str, exc: InputError) -> dg.Failure:
    """The failure of a step stopped by bad input: its problems, one per line (``toolchoice run`` exits 2 on the
    "bad input" prefix)."""
    return dg.Failure(description=f"bad input for release {release_id}:\n{exc}")


class ReleaseContext:
    """The release request, suite and lineage of one partition, loaded once per asset."""

    def __init__(self, context: dg.AssetExecutionContext, toolchoice: ToolchoiceResource):
        self.release_id = context.partition_key
        try:
            self.request: ReleaseRequest = toolchoice.request(self.release_id)
            self.suite: Suite = toolchoice.suite(self.request)
            self.config = toolchoice.run_config(self.request, self.suite)
        except InputError as exc:
            raise bad_input(self.release_id, exc) from None
        self.lineage = Lineage(release_id=self.release_id, suite=self.suite.name,
                               catalog_version=self.suite.catalog_version, run_id=context.op_execution_context.run_id)


@dg.asset(**COMMON, kinds={"yaml", "python"},
          description="The tool catalog the agents choose from: the suite's curated tools merged with its live "
                      "dumps (curated wins). Its data version is the catalog_version, so every score downstream "
                      "traces back to the exact tool descriptions.")
def tool_catalog(context: dg.AssetExecutionContext, toolchoice: ToolchoiceResource) -> dg.Output[list[ToolDefinition]]:
    release = ReleaseContext(context, toolchoice)
    suite = release.suite
    tools = suite.all_tools()
    try:
        diff_md, baseline_id = catalog_diff_against_baseline(toolchoice.path, suite, tools)
    except InputError as exc:  # a damaged baseline.json or warehouse commit record
        raise bad_input(release.release_id, exc) from None
    return dg.Output(
        tools,
        data_version=dg.DataVersion(suite.catalog_version),
        metadata={
            "suite": suite.name,
            "catalog_version": suite.catalog_version,
            "n_tools": len(tools),
            "live_tools": len(suite.live),
            "baseline_release_id": baseline_id or "none",
            "catalog_diff_vs_baseline": dg.MetadataValue.md(diff_md),
        },
    )


@dg.asset(**COMMON, kinds={"python"}, deps=[tool_catalog],
          description="The suite's eval tasks: a conversation and the tool (with key arguments) a good agent "
                      "calls first, or none. fixture_version hashes the tasks and the matching profile.")
def eval_tasks(context: dg.AssetExecutionContext, toolchoice: ToolchoiceResource) -> dg.Output[list[Task]]:
    release = ReleaseContext(context, toolchoice)
    suite = release.suite
    tags = Counter(tag for task in suite.tasks for tag in task.tags)
    return dg.Output(
        suite.tasks,
        metadata={
            "suite": suite.name,
            "catalog_version": suite.catalog_version,
            "fixture_version": suite.fixture_version,
            "match_profile": suite.match_profile,
            "n_tasks": len(suite.tasks),
            "n_no_call_tasks": sum(1 for t in suite.tasks if t.expected is not None and t.expected.tool is None),
            "n_unlabelled_tasks": sum(1 for t in suite.tasks if t.expected is None),
            "tags": dg.MetadataValue.json(dict(sorted(tags.items()))),
            # where each task's catalog came from (ingested suites: trace, file, live-dump, curated)
            "catalog_sources": dg.MetadataValue.json({tag.split(":", 1)[1]: count for tag, count
                                                      in sorted(tags.items()) if tag.startswith("catalog:")}),
        },
    )


@dg.asset(**COMMON, kinds={"litellm", "python"},
          description="Every configured model on every task through LiteLLM: episodes of up to max_steps model "
                      "calls, every call recorded with tokens, cost (USD) and latency (ms). Served from the call "
                      "journal where the cache policy allows.")
def agent_runs(context: dg.AssetExecutionContext, toolchoice: ToolchoiceResource, progress: dg.ResourceParam[ProgressReporter],
               eval_tasks: list[Task]) -> dg.Output[list[Episode]]:
    from toolchoice_pipeline.execution.runner import run_suite_sync

    release = ReleaseContext(context, toolchoice)
    policy = release.request.cache_policy or release.config.cache.policy
    unavailable: dict[str, str] = {}
    try:
        episodes = run_suite_sync(release.suite, release.config, data_dir=toolchoice.path,
                                  models=release.config.models, cache_policy=policy,
                                  progress=logged_progress(context, progress, "agents"),
                                  resume_key=release.release_id, unavailable=unavailable)
    except InputError as exc:
        raise bad_input(release.release_id, exc) from None
    if unavailable:
        # Scoring a model that never answered would fail the gate for the wrong reason; every finished call is
        # journaled, so the run after the fix asks only what is missing.
        raise dg.Failure(description=f"model unavailable for release {release.release_id}, nothing scored: "
                                     + "; ".join(unavailable.values())
                                     + " (the other calls are journaled: fix it and run the same command again)",
                         metadata={"unavailable": dg.MetadataValue.json(unavailable)})
    return dg.Output(episodes, metadata={
        "catalog_version": release.suite.catalog_version,
        "fixture_version": release.suite.fixture_version,
        "models": dg.MetadataValue.json(release.config.model_names()),
        "cache_policy": policy,
        **episode_metadata(episodes),
    })


@dg.asset(**COMMON, kinds={"litellm", "python"},
          description="ChainPoll: the judge grades each episode's first step several times (independent "
                      "chain-of-thought votes, never cached); every vote is kept with its reasoning. TSQ = "
                      "yes-votes / valid votes.")
def judge_votes(context: dg.AssetExecutionContext, toolchoice: ToolchoiceResource, progress: dg.ResourceParam[ProgressReporter],
                agent_runs: list[Episode]) -> dg.Output[list[JudgeVote]]:
    from toolchoice_pipeline.judge import RUBRIC_VERSION, judge_episodes_sync
    from toolchoice_pipeline.judge import JudgeBudget
    from toolchoice_pipeline.ingest.canary import canary_turns
    from toolchoice_pipeline.judge.calibration import judge_canary
    from toolchoice_pipeline.execution.llm import run_sync

    from toolchoice_pipeline.judge.preflight import JudgePreflightError, preflight_judge_sync

    release = ReleaseContext(context, toolchoice)
    judge = release.config.judge
    if not release.request.judge:
        return dg.Output([], metadata={"judge": "skipped (--no-judge)", "rubric_version": RUBRIC_VERSION})
    try:
        preflight_judge_sync(judge, data_dir=toolchoice.path, retries=release.config.retries)
    except JudgePreflightError as exc:  # every vote would be invalid: say why once (the agent calls are journaled)
        raise dg.Failure(description=f"judge unavailable for release {release.release_id}, nothing scored: "
                                     f"{exc}") from None
    report = logged_progress(context, progress, "judge")
    budget = JudgeBudget(judge.budget_usd)  # one budget for the episodes and the canary
    votes = judge_episodes_sync(release.suite, agent_runs, judge, retries=release.config.retries,
                                progress=lambda done, total: report("all models", done, total), budget=budget)
    try:
        canary = canary_turns(toolchoice.path)
    except InputError as exc:  # calibration (release_scores) says so plainly; the episodes' votes are kept
        canary, canary_note = [], f"missing: {exc.problems[0]}"
    else:
        canary_note = f"{len(canary)} turns judged"
    canary_votes = run_sync(judge_canary(canary, judge, retries=release.config.retries, budget=budget))
    return dg.Output(votes + canary_votes, metadata={
        "judge_model": judge.model.model,
        "polls": judge.polls,
        "rubric_version": RUBRIC_VERSION,
        "canary": canary_note,
        "judge_spend_usd": round(budget.spent_usd, 6),
        **judge_metadata(votes),
    })


@dg.asset(**COMMON, kinds={"python"},
          description="One score per episode: right tool and right arguments of the first call (matching "
                      "profile of the suite), calls per task, TSQ, flags.")
def task_scores(context: dg.AssetExecutionContext, toolchoice: ToolchoiceResource, agent_runs: list[Episode],
                judge_votes: list[JudgeVote]) -> dg.Output[list[TaskScore]]:
    from toolchoice_pipeline.scoring import score_episodes

    release = ReleaseContext(context, toolchoice)
    scores = score_episodes(release.suite, agent_runs, judge_votes)
    flags = Counter(flag for score in scores for flag in score.flags)
    return dg.Output(scores, metadata={
        "n_scores": len(scores),
        "n_infrastructure_errors": sum(1 for s in scores if s.error),
        "flags": dg.MetadataValue.json(dict(sorted(flags.items()))),
    })


@dg.asset(partitions_def=release_partitions, group_name=RELEASE_GROUP, code_version=CODE_VERSION,
          kinds={"duckdb", "parquet"},
          description="Per-model release scores (shares in points, Wilson intervals, cost, latency), gated "
                      "against the baseline. Commits the release's Parquet tables and DuckDB views at once and "
                      "writes `releases/<release_id>/scores.json` last. Its metadata shows the scores, the gate "
                      "report and the trend over releases as Markdown.")
def release_scores(context: dg.AssetExecutionContext, toolchoice: ToolchoiceResource, agent_runs: list[Episode],
                   judge_votes: list[JudgeVote],
                   task_scores: list[TaskScore]) -> dg.MaterializeResult:
    from toolchoice_pipeline.judge import RUBRIC_VERSION
    from toolchoice_pipeline.releases.store import publish_release
    from toolchoice_pipeline.ingest.canary import canary_problem
    from toolchoice_pipeline.judge.calibration import release_calibration
    from toolchoice_pipeline.releases.report import TREND_WINDOW, load_trend, render_chart, trend_markdown

    release = ReleaseContext(context, toolchoice)
    judge = release.config.judge
    judge_document = None
    if release.request.judge:
        right_tool = {(s.model, s.task_id): s.right_tool for s in task_scores if s.sample == 0}
        judge_document = {"model": judge.model.model, "polls": judge.polls, "rubric_version": RUBRIC_VERSION,
                          "budget_usd": judge.budget_usd,
                          "calibration": release_calibration(judge_votes, right_tool, canary_problem(toolchoice.path),
                                                             judge.calibration)}
    try:
        published = publish_release(
            toolchoice.path, release.suite, release.lineage, release.request.kind, agent_runs, judge_votes,
            scores=task_scores, force=release.request.force, promote=False, judge=judge_document,
        )
    except InputError as exc:  # the id finished meanwhile (another run), a damaged baseline or warehouse file
        raise bad_input(release.release_id, exc) from None
    trend = load_trend(toolchoice.path, release.suite.name, last=TREND_WINDOW)
    current_baseline = ReleaseStore(toolchoice.path).baseline(release.suite.name)
    chart = render_chart(trend, published.scores_path.parent / "trend.png",
                         title=f"{release.suite.name}: tool choice over the last releases", baseline=current_baseline)
    gate = published.gate
    metadata = {
        "catalog_version": release.suite.catalog_version,
        "fixture_version": release.suite.fixture_version,
        "kind": release.request.kind,
        "baseline_release_id": gate.baseline_release_id or "none yet",
        "gate_passed": gate.passed,
        "scores": dg.MetadataValue.md(scores_markdown(published.scores)),
        "gate_report": dg.MetadataValue.md(published.gate_markdown),
        "trend": dg.MetadataValue.md(trend_markdown(trend, current_baseline)),
        "scores_json": dg.MetadataValue.path(str(published.scores_path.resolve())),
        "agent_cost_usd": round(sum(m.agent_cost_usd for m in published.scores.models.values()), 6),
        "judge_cost_usd": round(sum(m.judge_cost_usd for m in published.scores.models.values())
                                + ((judge_document or {}).get("calibration") or {}).get("canary_judge_cost_usd", 0.0),
                                6),
    }
    if chart is not None:
        metadata["trend_chart"] = dg.MetadataValue.path(str(chart.resolve()))
    return dg.MaterializeResult(metadata=metadata)


@dg.asset(partitions_def=release_partitions, group_name=RELEASE_GROUP, code_version=CODE_VERSION,
          kinds={"python"}, deps=[release_scores],
          description="Promotion: a `release`-kind release whose gate passed becomes its suite's baseline. Runs "
                      "only after the blocking gate check passed; nightly, catalog-change and adhoc runs never "
                      "become the baseline.")
def baseline(context: dg.AssetExecutionContext, toolchoice: ToolchoiceResource) -> dg.MaterializeResult:
    store = ReleaseStore(toolchoice.path)
    release_id = context.partition_key
    promoted = store.promote(release_id)
    suite = store.read_scores(release_id).suite
    return dg.MaterializeResult(metadata={
        "promoted": promoted,
        "baseline_release_id": store.baseline(suite) or "none yet",
        "suite": suite,
    })


release_assets = [tool_catalog, eval_tasks, agent_runs, judge_votes, task_scores, release_scores, baseline]
