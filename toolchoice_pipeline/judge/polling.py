"""ChainPoll: several independent judge samples per tool choice, every one stored (DESIGN §5).

For each episode without an infrastructure error, the first step's reply is judged with the task's messages
and the task's catalog. Each of ``judge.polls`` polls is one independent sample at the judge's temperature
(:mod:`.call_params`: a configured ``judge.model.params.temperature``, else ``judge.temperature``; parameters
the model does not take dropped by LiteLLM) with its own seed (where the judge model takes a ``seed``), never
served from a cache: LiteLLM's cache is bypassed
per call (``cache={"no-cache": True, "no-store": True}``) and the agent call cache is never used. An answer
that cannot be parsed (:mod:`.parse`) is re-asked, up to ``judge.max_attempts`` calls per poll; an abstention
(the judge says it has no evidence) is an invalid vote at once, never re-asked. Every poll
becomes a :class:`JudgeVote`, invalid ones included; a vote's tokens and cost sum over all its attempts.

TSQ (tool selection quality, after Galileo's ChainPoll) = yes-votes / valid votes, in [0, 1]; None with the
flag ``judge_failed`` when no vote is valid. ``judge.budget_usd`` caps the run's judge spend: once the spend
reaches it, no further judge call starts, and every poll not yet asked becomes an invalid vote whose error
starts with ``judge_budget_exhausted`` (the episode gets that flag). Calls already in flight finish, so the
spend can pass the budget by at most ``concurrency`` calls. With ``rate_limits`` (the run's
:class:`~toolchoice_pipeline.execution.rate_limits.RateLimiters`) every judge call also waits for the judge
model's provider and model limits, shared with the agent calls and every other process using the same store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolchoice_pipeline.execution.rate_limits import RateLimiters
from toolchoice_pipeline.execution.spend import Budget
from toolchoice_pipeline.judge.call_params import poll_params, takes_seed
from toolchoice_pipeline.judge.journal import PollJournal, shown_key
from toolchoice_pipeline.judge.parse import ParsedVerdict, parse_verdict, response_format_for
from toolchoice_pipeline.judge.prompt import RUBRIC_VERSION, build_judge_messages
from toolchoice_pipeline.records.calls import Reply
from toolchoice_pipeline.records.episodes import FLAG_BUDGET_EXHAUSTED, FLAG_JUDGE_FAILED, Episode, JudgeVote, tsq_of
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.config import JudgeConfig, RetryConfig

if TYPE_CHECKING:
    from toolchoice_pipeline.suites.suite import Suite

DEFAULT_CONCURRENCY = 8

EpisodeKey = tuple[str, str]
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class JudgeItem:
    """One tool choice to judge: ``(model, task_id, sample)`` names it; ``reply`` is the first step's reply."""

    model: str
    task_id: str
    conversation: list[dict[str, Any]]
    catalog: list[ToolDefinition]
    reply: Reply
    sample: int = 0

    @property
    def key(self) -> EpisodeKey:
        return (self.model, self.task_id)


class JudgeBudget(Budget):
    """The run's judge spend in USD against ``limit_usd`` (None = no cap). Share one across a run's judge calls;
    a ``ledger`` shares it across the release's shards."""

    kind = "judge"


def episode_items(suite: Suite, episodes: Iterable[Episode]) -> list[JudgeItem]:
    """The judge items of ``episodes``: each first-step reply with its task's messages and catalog.

    Episodes with an infrastructure error (or no first reply) are not judged. Raises ``ValueError`` for an
    episode whose task is not in ``suite``.
    """
    tasks = {task.id: task for task in suite.tasks}
    items = []
    for episode in episodes:
        if episode.error is not None or episode.first_reply is None:
            continue
        task = tasks.get(episode.task_id)
        if task is None:
            raise ValueError(
                f"episode of {episode.model} names task '{episode.task_id}', which suite '{suite.name}' does not have"
            )
        items.append(
            JudgeItem(
                model=episode.model,
                task_id=task.id,
                conversation=task.message_dicts(),
                catalog=suite.task_catalog(task),
                reply=episode.first_reply,
                sample=episode.sample,
            )
        )
    return items


def _error_line(exc: BaseException) -> str:
    """The failure's type and first line, API-key-like strings masked (never store a secret in a vote)."""
    from toolchoice_pipeline.execution.failures import redact

    text = str(exc).strip().splitlines()
    return redact(f"{type(exc).__name__}: {text[0][:300] if text else ''}")


class _Poller:
    def __init__(
        self,
        judge: JudgeConfig,
        retries: RetryConfig,
        budget: JudgeBudget,
        concurrency: int,
        rate_limits: RateLimiters | None = None,
    ):
        self.judge = judge
        self.rate_limit = rate_limits.for_model(judge.model.model) if rate_limits is not None else None
        self.retries = retries
        self.budget = budget
        self.semaphore = asyncio.Semaphore(concurrency)
        self.seed_base = int(judge.model.params.get("seed", 0) or 0)
        self.takes_seed = takes_seed(judge.model.model)
        self.response_format = response_format_for(judge.model.model)

    def seed(self, poll: int, attempt: int, sample: int = 0) -> int:
        """Distinct for every (sample, poll, attempt) of a task, so a re-asked or further poll is a new sample."""
        return self.seed_base + (sample * self.judge.polls + poll) * self.judge.max_attempts + attempt

    def _vote(self, item: JudgeItem, poll: int, **fields: Any) -> JudgeVote:
        # A judge may quote the request (arguments, tool results) in its reasoning or error: both are stored and
        # printed, so they pass the same sanitiser as ingested text.
        from toolchoice_pipeline.util.sanitise import sanitise

        for name in ("reasoning", "error"):
            if fields.get(name):
                fields[name] = sanitise(fields[name])
        return JudgeVote(
            model=item.model,
            task_id=item.task_id,
            sample=item.sample,
            poll=poll,
            judge_model=self.judge.model.model,
            rubric_version=RUBRIC_VERSION,
            **fields,
        )

    async def poll(self, item: JudgeItem, messages: list[dict[str, Any]], poll: int) -> JudgeVote:
        from toolchoice_pipeline.execution.llm import complete

        prompt_tokens = completion_tokens = attempts = 0
        cost_usd = 0.0
        parsed: ParsedVerdict | None = None
        error: str | None = None
        for attempt in range(self.judge.max_attempts):
            async with self.semaphore:
                if self.budget.exhausted:
                    error = (
                        f"{FLAG_BUDGET_EXHAUSTED}: the run's judge spend reached budget_usd="
                        f"{self.budget.limit_usd} before this {'poll' if attempts == 0 else 're-ask'}"
                        + (f" (last answer: {error})" if error else "")
                    )
                    break
                params = poll_params(
                    self.judge,
                    seed=self.seed(poll, attempt, item.sample) if self.takes_seed else None,
                    response_format=self.response_format,
                )
                attempts += 1
                try:
                    completion = await complete(
                        self.judge.model,
                        messages,
                        retries=self.retries,
                        rate_limit=self.rate_limit,
                        metadata={
                            "purpose": "judge",
                            "model": item.model,
                            "task_id": item.task_id,
                            "sample": item.sample,
                            "poll": poll,
                        },
                        **params,
                    )
                except Exception as exc:  # noqa: BLE001 - the provider failed for good: an invalid vote, kept
                    error = f"judge call failed: {_error_line(exc)}"
                    break
            prompt_tokens += completion.prompt_tokens
            completion_tokens += completion.completion_tokens
            cost_usd += completion.cost_usd
            self.budget.add(completion.cost_usd)
            parsed = parse_verdict(completion.message.get("content"))
            if parsed.valid:
                return self._vote(
                    item,
                    poll,
                    verdict=parsed.verdict,
                    reasoning=parsed.reasoning,
                    valid=True,
                    attempts=attempts,
                    prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens,
                    cost_usd=cost_usd,
                )
            if parsed.abstained:  # an answer, not a parse failure: asking again would not change it
                error = parsed.error
                break
            error = f"unparseable judge output: {parsed.error}"
        return self._vote(
            item,
            poll,
            verdict=None,
            reasoning=parsed.reasoning if parsed else None,
            valid=False,
            attempts=attempts,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost_usd,
            error=error,
        )


async def judge_items(
    items: list[JudgeItem],
    judge: JudgeConfig,
    *,
    retries: RetryConfig,
    progress: Progress | None = None,
    budget: JudgeBudget | None = None,
    concurrency: int | None = None,
    journal: PollJournal | None = None,
    rate_limits: RateLimiters | None = None,
) -> list[JudgeVote]:
    """ChainPoll over prepared items: ``judge.polls`` votes per item, in item order then poll order.

    ``concurrency`` bounds the judge calls in flight (default: ``judge.model.max_concurrency`` or 8);
    ``progress(done_items, total_items)`` is called as items finish; ``budget`` (default: a new one from
    ``judge.budget_usd``) is shared by every call. Raises :class:`.prompt.JudgeInputError` for an item without
    a catalog; provider failures never raise, they become invalid votes. With ``journal`` (the release's
    :class:`~.journal.PollJournal`) a poll finished before is taken from it, never asked again. ``rate_limits``:
    the run's rate limits (:mod:`toolchoice_pipeline.execution.rate_limits`), None for none.
    """
    from toolchoice_pipeline.providers import register_providers_for

    register_providers_for([judge.model.model])  # the built-in judge models, in whatever process the judge step runs
    budget = budget if budget is not None else JudgeBudget(judge.budget_usd)
    poller = _Poller(
        judge, retries, budget, concurrency or judge.model.max_concurrency or DEFAULT_CONCURRENCY, rate_limits
    )
    prepared = [(item, build_judge_messages(item.conversation, item.catalog, item.reply)) for item in items]
    done = 0

    async def journaled(item: JudgeItem, messages: list[dict[str, Any]], poll: int) -> JudgeVote:
        if journal is None:
            return await poller.poll(item, messages, poll)
        shown = shown_key(judge.model.model, RUBRIC_VERSION, messages)
        finished = journal.finished(item.model, item.task_id, poll, shown)
        if finished is not None:
            return finished
        vote = await poller.poll(item, messages, poll)
        journal.record(vote, shown, max_attempts=judge.max_attempts)
        return vote

    async def one(item: JudgeItem, messages: list[dict[str, Any]]) -> list[JudgeVote]:
        nonlocal done
        votes = await asyncio.gather(*(journaled(item, messages, p) for p in range(judge.polls)))
        done += 1
        if progress is not None:
            progress(done, len(prepared))
        return list(votes)

    results = await asyncio.gather(*(one(item, messages) for item, messages in prepared))
    return [vote for votes in results for vote in votes]


async def judge_episodes(
    suite: Suite,
    episodes: Iterable[Episode],
    judge: JudgeConfig,
    *,
    retries: RetryConfig,
    progress: Progress | None = None,
    budget: JudgeBudget | None = None,
    journal: PollJournal | None = None,
    rate_limits: RateLimiters | None = None,
) -> list[JudgeVote]:
    """Judge the first step of every episode of ``suite`` (a :class:`toolchoice_pipeline.suites.suite.Suite`).

    Returns ``judge.polls`` :class:`JudgeVote` rows per judged episode (invalid ones included); episodes with
    an infrastructure error get none. See :func:`judge_items` for concurrency, progress, budget and rate limits.
    """
    return await judge_items(
        episode_items(suite, episodes),
        judge,
        retries=retries,
        progress=progress,
        budget=budget,
        journal=journal,
        rate_limits=rate_limits,
    )


def judge_episodes_sync(
    suite: Suite,
    episodes: Iterable[Episode],
    judge: JudgeConfig,
    *,
    retries: RetryConfig,
    progress: Progress | None = None,
    budget: JudgeBudget | None = None,
    journal: PollJournal | None = None,
    rate_limits: RateLimiters | None = None,
) -> list[JudgeVote]:
    """:func:`judge_episodes` for callers without an event loop (``asyncio.run``)."""
    from toolchoice_pipeline.execution.llm import run_sync

    return run_sync(
        judge_episodes(
            suite,
            episodes,
            judge,
            retries=retries,
            progress=progress,
            budget=budget,
            journal=journal,
            rate_limits=rate_limits,
        )
    )


def _by_episode(votes: Iterable[JudgeVote]) -> dict[EpisodeKey, list[JudgeVote]]:
    grouped: dict[EpisodeKey, list[JudgeVote]] = {}
    for vote in votes:
        grouped.setdefault((vote.model, vote.task_id), []).append(vote)
    return grouped


def tsq_by_episode(votes: Iterable[JudgeVote]) -> dict[EpisodeKey, float | None]:
    """TSQ per ``(model, task_id)``: yes-votes / valid votes in [0, 1], None without a valid vote
    (:func:`toolchoice_pipeline.records.episodes.tsq_of`)."""
    return {key: tsq_of(group) for key, group in _by_episode(votes).items()}


def judge_flags_by_episode(votes: Iterable[JudgeVote]) -> dict[EpisodeKey, list[str]]:
    """Flags per ``(model, task_id)``: ``judge_failed`` (no valid vote), ``judge_budget_exhausted`` (a poll was
    not asked because the budget was spent). Episodes without a flag map to ``[]``."""
    flags: dict[EpisodeKey, list[str]] = {}
    for key, group in _by_episode(votes).items():
        found = []
        if not any(v.valid for v in group):
            found.append(FLAG_JUDGE_FAILED)
        if any((v.error or "").startswith(FLAG_BUDGET_EXHAUSTED) for v in group):
            found.append(FLAG_BUDGET_EXHAUSTED)
        flags[key] = found
    return flags


def majority_verdicts(votes: Iterable[JudgeVote]) -> dict[EpisodeKey, bool | None]:
    """The judge's majority verdict per episode: True when TSQ > 0.5, False when < 0.5, None on a tie or
    without a valid vote."""
    out: dict[EpisodeKey, bool | None] = {}
    for key, score in tsq_by_episode(votes).items():
        out[key] = None if score is None or score == 0.5 else score > 0.5
    return out
