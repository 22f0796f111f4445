"""One :class:`~toolchoice_pipeline.records.episodes.TaskScore` per episode, i.e. per task and sample (DESIGN §2):
matching, TSQ, calls, flags.

- ``right_tool`` / ``right_args``: the suite's matching profile on the first step's reply, with the catalog
  the task ran with; None for an infrastructure error and for an unlabelled task (``task.expected`` None).
- ``calls``: tool calls over all steps (invalid calls written in text included).
- ``tsq``: tool selection quality = yes-votes / valid votes (ChainPoll), None when no vote was valid.
- ``flags`` (each once, in :data:`FLAG_ORDER`, then any other sorted): ``hallucinated_tool``, ``invalid_arguments``,
  ``invalid_call``, and the schema flags of decoded arguments (``missing_required``, ``wrong_type``,
  ``not_in_enum``, ``schema_violation``: :mod:`toolchoice_pipeline.suites.argument_schema`) (from any call of
  any step), ``infra_error``, ``judge_failed`` (votes but none valid),
  ``judge_budget_exhausted`` (a poll not asked because the run's judge budget was spent),
  ``agent_budget_exhausted`` (the sample did not run: the run's agent ``budget_usd`` was spent).
- ``judge_tokens``: prompt + completion tokens of the episode's judge votes, every attempt included.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from toolchoice_pipeline.records.calls import (
    ARGUMENT_SCHEMA_FLAGS,
    FLAG_HALLUCINATED,
    FLAG_INVALID_ARGUMENTS,
    FLAG_INVALID_CALL,
    flag_hallucinated,
)
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
from toolchoice_pipeline.scoring.matching import match_reply
from toolchoice_pipeline.suites.argument_schema import ArgumentChecker, by_name
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.suite import Suite
from toolchoice_pipeline.suites.tasks import Expected, Task
from toolchoice_pipeline.util.errors import InputError, Problem, display_path

FLAG_ORDER = (
    FLAG_HALLUCINATED,
    FLAG_INVALID_ARGUMENTS,
    FLAG_INVALID_CALL,
    *ARGUMENT_SCHEMA_FLAGS,
    FLAG_INFRA_ERROR,
    FLAG_JUDGE_FAILED,
    FLAG_BUDGET_EXHAUSTED,
)
NO_FIRST_REPLY = "no model reply for the first step"


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
        reply = episode.first_reply
        assert reply is not None  # no infrastructure error means a first reply
        result = match_reply(task.expected, reply, catalog, profile)
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
