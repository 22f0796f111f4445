"""Preflight of the judge model: the execution preflight's checks and messages, applied to the judge (DESIGN §5).

:func:`toolchoice_pipeline.execution.preflight.static_problem` turns "model not found", "no API key" and
"unknown provider" into one clear message each, naming the model. Then the judge's own checks:

- with ``judge.budget_usd`` set, an unpriced judge model (no ``price:``, not in LiteLLM's pricing table) is
  refused (:func:`unpriced_under_budget`): its calls would count 0 USD and the budget would never stop it;
- a temperature configured in ``judge.model.params`` that the model does not take (LiteLLM's
  supported-parameters check, :func:`.call_params.refused_temperature`) is refused with one message;
- one call that sends exactly what a poll sends (:func:`.call_params.poll_params`: temperature, ``seed``,
  ``response_format``, ``drop_params``, no cache), so a provider that refuses a poll's parameters fails here,
  before any episode is judged, instead of failing every vote.

Each message becomes :class:`JudgePreflightError` ("judge model ...").

The call is a judge call like any other: it is made under the run's :class:`~.polling.JudgeBudget` (its cost is
added; none is made once the budget is spent) and returned as a :class:`JudgeVote` of model
:data:`PREFLIGHT_MODEL` (invalid: not a verdict), to be stored with the run's votes, so its tokens and cost are in
the judge's (:func:`preflight_judge_cost`: ``judge.preflight_judge_cost_usd``, ``preflight_judge_tokens``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolchoice_pipeline.execution.rate_limits import RateLimiters
from toolchoice_pipeline.records.episodes import JudgeVote
from toolchoice_pipeline.suites.config import JudgeConfig, RetryConfig

if TYPE_CHECKING:
    from toolchoice_pipeline.judge.polling import JudgeBudget

PREFLIGHT_MODEL = "preflight"  # the model name the preflight call's vote is stored under (like the canary's)
PREFLIGHT_NOTE = "judge preflight call: not a verdict (counted in the judge's cost and budget)"


class JudgePreflightError(RuntimeError):
    """The judge model cannot be used; the message says why, naming the model (never a key)."""


async def preflight_judge(
    judge: JudgeConfig,
    *,
    data_dir: Path,
    retries: RetryConfig,
    budget: JudgeBudget | None = None,
    rate_limits: RateLimiters | None = None,
) -> JudgeVote | None:
    """Check the judge model: static checks, the configured temperature, then one poll-shaped call (counted
    against ``rate_limits`` like a poll).

    The call's cost is added to ``budget`` (the run's judge budget; none is made when it is already spent) and
    the call is returned as a :class:`JudgeVote` of model :data:`PREFLIGHT_MODEL` for the caller to store with
    the votes; None when no call was made (budget spent). Raises :class:`JudgePreflightError` with the
    preflight's message; ``InputError`` for a replay file that does not load.
    """
    from toolchoice_pipeline.execution.preflight import call_check, static_problem
    from toolchoice_pipeline.judge.call_params import poll_params, refused_temperature, takes_seed
    from toolchoice_pipeline.judge.parse import response_format_for
    from toolchoice_pipeline.judge.prompt import RUBRIC_VERSION
    from toolchoice_pipeline.providers import register_providers_for

    register_providers_for([judge.model.model])
    problem = static_problem(judge.model, data_dir) or unpriced_under_budget(judge) or refused_temperature(judge)
    if problem:
        raise JudgePreflightError(f"judge model {problem}")
    if budget is not None and budget.exhausted:
        return None
    params = poll_params(
        judge, seed=0 if takes_seed(judge.model.model) else None, response_format=response_format_for(judge.model.model)
    )
    rate_limit = rate_limits.for_model(judge.model.model) if rate_limits is not None else None
    problem, completion = await call_check(judge.model, retries=retries, rate_limit=rate_limit, **params)
    if problem:
        sent = ", ".join(f"{key}={params[key]}" for key in ("temperature", "seed") if params.get(key) is not None)
        raise JudgePreflightError(
            f"judge model {problem} (the call a poll makes, with {sent or 'no sampling parameters'})"
        )
    assert completion is not None
    if budget is not None:
        budget.add(completion.cost_usd)
    return JudgeVote(
        model=PREFLIGHT_MODEL,
        task_id=PREFLIGHT_MODEL,
        poll=0,
        valid=False,
        attempts=completion.attempts,
        judge_model=judge.model.model,
        rubric_version=RUBRIC_VERSION,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        cost_usd=completion.cost_usd,
        error=PREFLIGHT_NOTE,
    )


def preflight_judge_cost(votes: Iterable[JudgeVote]) -> dict[str, Any]:
    """``{"preflight_judge_cost_usd", "preflight_judge_tokens"}`` of a run's stored votes: the preflight call's
    cost (USD, 6 decimals) and prompt + completion tokens, for the ``judge`` object of ``scores.json``."""
    calls = [v for v in votes if v.model == PREFLIGHT_MODEL]
    return {
        "preflight_judge_cost_usd": round(sum(v.cost_usd for v in calls), 6),
        "preflight_judge_tokens": sum(v.prompt_tokens + v.completion_tokens for v in calls),
    }


def unpriced_under_budget(judge: JudgeConfig) -> str | None:
    """Why a judge budget cannot work: ``judge.budget_usd`` is set but the judge model has no known price (no
    ``price:`` and missing from LiteLLM's pricing table), so its calls would count 0.0 USD and never stop.
    None when there is no budget or the model is priced (built-in ``local/...`` models are free). The same rule
    and message as an agent model's (:func:`toolchoice_pipeline.execution.preflight.unpriced_under_budget`)."""
    from toolchoice_pipeline.execution.preflight import unpriced_under_budget as unpriced

    return unpriced(judge.model, judge.budget_usd, budget_field="judge.budget_usd", price_field="judge.model.price")


def preflight_judge_sync(
    judge: JudgeConfig,
    *,
    data_dir: Path,
    retries: RetryConfig,
    budget: JudgeBudget | None = None,
    rate_limits: RateLimiters | None = None,
) -> JudgeVote | None:
    """:func:`preflight_judge` for callers without an event loop."""
    from toolchoice_pipeline.execution.llm import run_sync

    return run_sync(preflight_judge(judge, data_dir=data_dir, retries=retries, budget=budget, rate_limits=rate_limits))
