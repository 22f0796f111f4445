"""The scoring's reference implementation, row by row in plain Python: one
:class:`~toolchoice_pipeline.records.episodes.TaskScore` per episode (:func:`score_episodes`) and the per-model
scores of a release (:func:`summarise`). The pipeline scores with :mod:`toolchoice_pipeline.scoring.columnar`
(DuckDB over Arrow); the tests check the two agree and use this one to build expected figures.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from toolchoice_pipeline.records.calls import flag_hallucinated
from toolchoice_pipeline.records.episodes import (
    FLAG_AGENT_BUDGET_EXHAUSTED,
    FLAG_BUDGET_EXHAUSTED,
    FLAG_INFRA_ERROR,
    FLAG_JUDGE_FAILED,
    Episode,
    JudgeVote,
    TaskScore,
    tsq_of,
)
from toolchoice_pipeline.scoring.confusion import AnyCallCounts, pair_counts
from toolchoice_pipeline.scoring.matching import match_reply
from toolchoice_pipeline.scoring.samples import sample_figures
from toolchoice_pipeline.scoring.summary import ModelScores, Tally, build_model_scores, percentile
from toolchoice_pipeline.scoring.task_scores import FLAG_ORDER, NO_FIRST_REPLY
from toolchoice_pipeline.suites.argument_schema import ArgumentChecker, by_name
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.suite import Suite
from toolchoice_pipeline.suites.tasks import Expected, Task
from toolchoice_pipeline.util.errors import InputError, Problem, display_path


def infrastructure_error(episode: Episode) -> str | None:
    """The episode's infrastructure error: its own, or a first step that produced no reply."""
    if episode.error is not None:
        return episode.error
    if episode.first_reply is None:
        first_error = episode.steps[0].error if episode.steps else None
        return first_error or NO_FIRST_REPLY
    return None


def expected_first_tool(expected: Expected) -> str | None:
    """The tool a good agent calls first: ``expected.tool``, else the first of ``expected.calls``; None when no
    call is expected or any call is right (``any_call``)."""
    if expected.any_call:
        return None
    if expected.tool is not None:
        return expected.tool
    return expected.calls[0].tool if expected.calls else None


def score_episode(
    episode: Episode,
    task: Task,
    catalog: list[ToolDefinition],
    profile: str,
    votes: Iterable[JudgeVote] = (),
    checker: ArgumentChecker | None = None,
) -> TaskScore:
    """Score one episode of ``task`` run with ``catalog``, graded in matching ``profile`` (``key_args``/``bfcl``).
    ``checker`` (one per release: it caches compiled schemas) checks the calls' arguments against the schemas."""
    votes = list(votes)
    tools = by_name(catalog)
    checker = checker or ArgumentChecker()
    flags: set[str] = set()
    for step in episode.steps:
        if step.reply is not None:
            flags.update(checker.flag(flag_hallucinated(step.reply, tools), tools).flags)
    error = infrastructure_error(episode)
    right_tool = right_args = None
    if error is not None:
        flags.add(FLAG_INFRA_ERROR)
        if error.startswith(FLAG_AGENT_BUDGET_EXHAUSTED):
            flags.add(FLAG_AGENT_BUDGET_EXHAUSTED)
    elif task.expected is not None:
        result = match_reply(task.expected, episode.first_reply, catalog, profile)
        right_tool, right_args = result.right_tool, result.right_args
    tsq = tsq_of(votes)
    if votes and tsq is None:
        flags.add(FLAG_JUDGE_FAILED)
    if any((vote.error or "").startswith(FLAG_BUDGET_EXHAUSTED) for vote in votes):
        flags.add(FLAG_BUDGET_EXHAUSTED)
    first = episode.first_call
    expected = task.expected
    return TaskScore(
        model=episode.model,
        task_id=episode.task_id,
        sample=episode.sample,
        right_tool=right_tool,
        right_args=right_args,
        calls=episode.calls,
        first_tool=first.name if first is not None else None,
        tsq=tsq,
        error=error,
        flags=[flag for flag in FLAG_ORDER if flag in flags] + sorted(flags - set(FLAG_ORDER)),
        tags=list(task.tags),
        latency_ms=sum(step.latency_ms for step in episode.steps),
        provider_ms=episode.provider_ms,
        agent_cost_usd=episode.cost_usd,
        judge_cost_usd=sum(vote.cost_usd for vote in votes),
        judge_tokens=sum(vote.prompt_tokens + vote.completion_tokens for vote in votes),
        expected_tool=expected_first_tool(expected) if expected is not None else None,
        expected_any_call=bool(expected.any_call) if expected is not None else None,
    )


def score_episodes(suite: Suite, episodes: Iterable[Episode], votes: Iterable[JudgeVote] = ()) -> list[TaskScore]:
    """Score every episode of a release against ``suite`` (its tasks, catalogs and matching profile).

    Votes are matched to episodes by ``(model, task_id, sample)``. Raises :class:`InputError` naming the tasks file
    when an episode's task is not in the suite.
    """
    by_episode: dict[tuple[str, str, int], list[JudgeVote]] = defaultdict(list)
    for vote in votes:
        by_episode[(vote.model, vote.task_id, vote.sample)].append(vote)
    tasks = {task.id: task for task in suite.tasks}
    checker = ArgumentChecker()
    scores = []
    for episode in episodes:
        task = tasks.get(episode.task_id)
        if task is None:
            raise InputError(
                Problem(
                    file=display_path(suite.tasks_file),
                    field="id",
                    message=f"episode of model '{episode.model}' names task "
                    f"'{episode.task_id}', which is not in suite '{suite.name}'",
                )
            )
        scores.append(
            score_episode(
                episode,
                task,
                suite.task_catalog(task),
                suite.match_profile,
                by_episode.get((episode.model, episode.task_id, episode.sample), ()),
                checker,
            )
        )
    return scores


def model_scores(scores: list[TaskScore]) -> ModelScores:
    """The scores of one model from its task scores (see the module docstring for units and denominators)."""
    ran = [s for s in scores if s.error is None]
    scored = [s for s in ran if s.right_tool is not None and s.expected_any_call is not None]
    latencies = [s.latency_ms for s in ran]
    provider = [s.provider_ms for s in ran]
    by_tag: dict[str, list[TaskScore]] = defaultdict(list)
    for score in scores:
        for tag in dict.fromkeys(score.tags):
            by_tag[tag].append(score)
    flags: dict[str, int] = {}
    for score in scores:
        for flag in set(score.flags):
            flags[flag] = flags.get(flag, 0) + 1
    return build_model_scores(
        Tally.of(scores),
        n_ran=len(ran),
        calls_sum=sum(s.calls for s in ran),
        agent_cost_usd=sum(s.agent_cost_usd for s in scores),
        judge_cost_usd=sum(s.judge_cost_usd for s in scores),
        judge_tokens=sum(s.judge_tokens for s in scores),
        n_unjudged=sum(s.error is None and FLAG_JUDGE_FAILED in s.flags for s in scores),
        latency_ms_p50=percentile(latencies, 0.50),
        latency_ms_p95=percentile(latencies, 0.95),
        provider_ms_p50=percentile(provider, 0.50),
        provider_ms_p95=percentile(provider, 0.95),
        n_unlabelled=sum(s.error is None and s.right_tool is None for s in scores),
        flags=flags,
        tags={tag: Tally.of(items) for tag, items in by_tag.items()},
        samples=sample_figures(scores),
        n_distinct_tasks=len({s.task_id for s in scores}),
        pairs=pair_counts((s.expected_tool, s.first_tool) for s in scored if not s.expected_any_call),
        any_call=AnyCallCounts(
            episodes=sum(1 for s in scored if s.expected_any_call),
            no_call=sum(1 for s in scored if s.expected_any_call and s.first_tool is None),
        ),
    )


def summarise(task_scores: Iterable[TaskScore]) -> dict[str, ModelScores]:
    """Per-model scores of a release, keyed by model name in sorted order."""
    by_model: dict[str, list[TaskScore]] = defaultdict(list)
    for score in task_scores:
        by_model[score.model].append(score)
    return {model: model_scores(by_model[model]) for model in sorted(by_model)}
