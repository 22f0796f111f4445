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
"""

from __future__ import annotations

from pathlib import Path

from toolchoice_pipeline.execution.rate_limits import RateLimiters
from toolchoice_pipeline.suites.config import JudgeConfig, RetryConfig


class JudgePreflightError(RuntimeError):
    """The judge model cannot be used; the message says why, naming the model (never a key)."""


async def preflight_judge(
    judge: JudgeConfig, *, data_dir: Path, retries: RetryConfig, rate_limits: RateLimiters | None = None
) -> None:
    """Check the judge model: static checks, the configured temperature, then one poll-shaped call (counted
    against ``rate_limits`` like a poll).

    Raises :class:`JudgePreflightError` with the preflight's message; ``InputError`` for a replay file that
    does not load.
    """
    from toolchoice_pipeline.execution.preflight import check_by_call, static_problem
    from toolchoice_pipeline.judge.call_params import poll_params, refused_temperature, takes_seed
    from toolchoice_pipeline.judge.parse import response_format_for
    from toolchoice_pipeline.providers import register_providers

    register_providers()
    problem = static_problem(judge.model, data_dir) or unpriced_under_budget(judge) or refused_temperature(judge)
    if problem:
        raise JudgePreflightError(f"judge model {problem}")
    params = poll_params(
        judge, seed=0 if takes_seed(judge.model.model) else None, response_format=response_format_for(judge.model.model)
    )
    rate_limit = rate_limits.for_model(judge.model.model) if rate_limits is not None else None
    problem = await check_by_call(judge.model, retries=retries, rate_limit=rate_limit, **params)
    if problem:
        sent = ", ".join(f"{key}={params[key]}" for key in ("temperature", "seed") if params.get(key) is not None)
        raise JudgePreflightError(
            f"judge model {problem} (the call a poll makes, with {sent or 'no sampling parameters'})"
        )


def unpriced_under_budget(judge: JudgeConfig) -> str | None:
    """Why a judge budget cannot work: ``judge.budget_usd`` is set but the judge model has no known price (no
    ``price:`` and missing from LiteLLM's pricing table), so its calls would count 0.0 USD and never stop.
    None when there is no budget or the model is priced (built-in ``local/...`` models are free)."""
    from toolchoice_pipeline.execution.llm import is_priced

    if judge.budget_usd is None or is_priced(judge.model):
        return None
    return (
        f"{judge.model.model}: unpriced (not in LiteLLM's pricing table), so judge.budget_usd="
        f"{judge.budget_usd} could never stop it: give the judge model a price "
        "(judge.model.price: {input_usd_per_mtok: ..., output_usd_per_mtok: ...}) or remove the budget"
    )


def preflight_judge_sync(
    judge: JudgeConfig, *, data_dir: Path, retries: RetryConfig, rate_limits: RateLimiters | None = None
) -> None:
    """:func:`preflight_judge` for callers without an event loop."""
    from toolchoice_pipeline.execution.llm import run_sync

    run_sync(preflight_judge(judge, data_dir=data_dir, retries=retries, rate_limits=rate_limits))
