"""The one way in for model calls: :func:`complete`, with retries, limits and accounting in exactly one place.

Every model call goes through ``litellm.acompletion`` except our deterministic in-process models (``local/``,
``replay/``: :mod:`toolchoice_pipeline.providers.direct`), which :func:`complete` calls directly, so a run of those
alone never imports LiteLLM (issue 27); their errors are mapped to LiteLLM's exception classes as
``litellm.acompletion`` maps them (LiteLLM is imported then, on the error path only).

Retries (tenacity): exponential backoff with full jitter, at least the provider's ``Retry-After``, for rate
limits, 5xx, timeouts and dropped connections; never for authentication, not-found, permission or
bad-request errors. LiteLLM's own retries and the OpenAI SDK's hidden ones are switched off
(``num_retries=0``, ``max_retries=0``) so a call is never retried twice over.

A reply with no ``choices`` (or a first choice without a message) is a :class:`MalformedReply`: a transient
provider fault, retried like a 5xx, then an infrastructure error that names the cause.

In-process deterministic models (``local/``, ``replay/``, ``needle/``) get one attempt: their errors would only repeat.
A call that fails for good raises LiteLLM's exception with ``attempts`` (int) set on it.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Coroutine
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_random_exponential

from toolchoice_pipeline.execution.bounded_http import ReplyTooLarge, bounded_openai_client, reply_too_large
from toolchoice_pipeline.execution.local_server import PLACEHOLDER_KEY, needs_placeholder_key
from toolchoice_pipeline.execution.offline import is_local_model
from toolchoice_pipeline.execution.rate_limits import CallRateLimit
from toolchoice_pipeline.suites.config import ModelSpec, RetryConfig
from toolchoice_pipeline.util.loop_interrupts import run_interruptible

TRANSIENT_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}
SINGLE_ATTEMPT_PROVIDERS = ("local", "replay", "needle")
# In-process providers whose calls wait their turn for one engine (needle/): the wait is queueing and binding a new
# tool list is one-time setup, so the attempt is not cut from outside; the model's own time less that setup is
# what the timeout bounds (a late reply refused as timed out).
SELF_TIMED_PROVIDERS = ("needle",)
# The whole attempt's bound is the timeout plus this: LiteLLM's own (per-read) timeout, when it fires, comes first.
TOTAL_TIMEOUT_GRACE_S = 1.0
# A reply longer than this (an endless generation, a hostile server) is not stored or judged: a malformed reply.
MAX_REPLY_CHARS = 1_000_000
T = TypeVar("T")


def _total_timeout(model: str, timeout_s: float) -> Exception:
    import litellm

    return litellm.Timeout(
        message=f"no whole reply within {timeout_s:g} s (the total time of one attempt)",
        model=model,
        llm_provider=model.split("/", 1)[0],
    )


async def _backoff_sleep(seconds: float) -> None:
    """The sleep between attempts (a module-level hook, so tests can record the waits)."""
    await asyncio.sleep(seconds)


class MalformedReply(Exception):
    """A provider reply without ``choices`` or without a message in its first choice (a transient fault)."""


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def reply_size(message: Any) -> int:
    """Characters of a reply's text and of its calls' names and arguments (LiteLLM's ``Message`` or an OpenAI-format
    dict)."""
    size = len(_field(message, "content") or "")
    for call in _field(message, "tool_calls") or []:
        function = _field(call, "function")
        size += len(_field(function, "name") or "") + len(str(_field(function, "arguments") or ""))
    return size


def _checked_size(message: dict[str, Any]) -> None:
    size = reply_size(message)
    if size > MAX_REPLY_CHARS:
        raise MalformedReply(
            f"the reply holds {size:,} characters (text and call arguments), more than {MAX_REPLY_CHARS:,}"
        )


def checked_reply(response: Any) -> Any:
    """``response`` when it holds a first choice with a message; raises :class:`MalformedReply` otherwise."""
    choices = getattr(response, "choices", None)
    if not choices:
        raise MalformedReply("the provider's reply has no choices")
    if getattr(choices[0], "message", None) is None:
        raise MalformedReply("the first choice of the provider's reply has no message")
    _checked_size(choices[0].message)
    usage = getattr(response, "usage", None)
    for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = getattr(usage, name, None)
        # A negative or non-finite count would lower a run's token totals and cost: the reply is not trusted.
        if isinstance(value, (int, float)) and not 0 <= value < float("inf"):
            raise MalformedReply(
                f"the provider's reply reports usage.{name} = {value}: a token count is never negative"
            )
    return response


@dataclass
class Completion:
    """One finished model call. ``message`` is the OpenAI-format assistant message (``content``, ``tool_calls``);
    ``cost_usd`` is 0.0 for in-process models. Times, in ms, of the successful attempt only:

    - ``latency_ms``: around ``litellm.acompletion``, as our client saw it (includes event-loop waits);
    - ``provider_ms``: the provider's own time (:func:`provider_time_ms`), None when nobody reported it;
    - ``queued_ms``: the time spent in our client: waiting for an in-flight slot and for the rate limits
      (:mod:`.rate_limits`), plus ``latency_ms`` minus ``provider_ms``.

    ``confidence`` is the model's own confidence in its reply (0-1) when its provider reports one (``needle/``),
    else None."""

    message: dict[str, Any]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    attempts: int = 1
    raw: Any = field(default=None, repr=False)
    provider_ms: float | None = None
    queued_ms: float = 0.0
    confidence: float | None = None


def provider_time_ms(response: Any) -> float | None:
    """The provider's time for one response, in ms: what our in-process providers timed inside their handler
    (``_hidden_params[PROVIDER_MS]``), else LiteLLM's own split for HTTP providers (``_response_ms`` minus
    ``litellm_overhead_time_ms``: sending the request to the last byte); None when neither is there."""
    from toolchoice_pipeline.providers.response import PROVIDER_MS

    hidden = getattr(response, "_hidden_params", None) or {}
    own = hidden.get(PROVIDER_MS)
    if isinstance(own, (int, float)):
        return float(own)
    total, overhead = getattr(response, "_response_ms", None), hidden.get("litellm_overhead_time_ms")
    if isinstance(total, (int, float)) and isinstance(overhead, (int, float)):
        return max(0.0, float(total) - float(overhead))
    return None


def own_time_s(response: Any) -> float:
    """Seconds an in-process provider spent on its reply less its one-time setup (``_hidden_params[PROVIDER_MS]``
    minus ``[SETUP_MS]``; 0 when it reported neither)."""
    from toolchoice_pipeline.providers.response import PROVIDER_MS, SETUP_MS

    hidden = getattr(response, "_hidden_params", None) or {}
    return max(0.0, float(hidden.get(PROVIDER_MS) or 0) - float(hidden.get(SETUP_MS) or 0)) / 1000


def reply_confidence(response: Any) -> float | None:
    """The confidence (0-1) an in-process provider reported for its reply (``_hidden_params[CONFIDENCE]``), or
    None."""
    from toolchoice_pipeline.providers.needle import CONFIDENCE

    value = (getattr(response, "_hidden_params", None) or {}).get(CONFIDENCE)
    return float(value) if isinstance(value, (int, float)) else None


def is_transient(exc: BaseException) -> bool:
    """True for errors worth retrying: rate limits, 5xx, timeouts, connection errors (LiteLLM's classes), and a
    :class:`MalformedReply`."""
    import litellm

    never = (
        litellm.AuthenticationError,
        litellm.NotFoundError,
        litellm.BadRequestError,
        litellm.PermissionDeniedError,
        litellm.UnprocessableEntityError,
    )
    if isinstance(exc, never) or isinstance(exc, ReplyTooLarge):
        return False
    if isinstance(exc, MalformedReply):
        return True
    if isinstance(
        exc,
        (
            litellm.RateLimitError,
            litellm.Timeout,
            litellm.APIConnectionError,
            litellm.InternalServerError,
            litellm.ServiceUnavailableError,
            litellm.BadGatewayError,
        ),
    ):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and status in TRANSIENT_STATUS


def retry_after_seconds(exc: BaseException | None) -> float | None:
    """The provider's ``Retry-After`` (seconds) from the error's headers or response, if it sent one."""
    if exc is None:
        return None
    headers: dict[str, str] = {}
    response = getattr(exc, "response", None)
    if response is not None and getattr(response, "headers", None) is not None:
        headers.update({k.lower(): v for k, v in response.headers.items()})
    headers.update({k.lower(): v for k, v in (getattr(exc, "headers", None) or {}).items()})
    for key in ("retry-after-ms", "retry-after"):
        value = headers.get(key)
        if value is None:
            continue
        try:
            seconds = float(value)
        except ValueError:
            continue
        return seconds / 1000 if key == "retry-after-ms" else seconds
    return None


class _WaitBackoffOrRetryAfter:
    """Tenacity wait: random exponential backoff, but never shorter than the provider's Retry-After."""

    def __init__(self, config: RetryConfig):
        self.backoff = wait_random_exponential(multiplier=config.initial_wait_s, max=config.max_wait_s)
        self.max_wait_s = config.max_wait_s

    def __call__(self, state: RetryCallState) -> float:
        backoff = self.backoff(state)
        exc = state.outcome.exception() if state.outcome is not None else None
        after = retry_after_seconds(exc)
        return backoff if after is None else min(max(backoff, after), max(self.max_wait_s, after))


def run_sync(coroutine: Coroutine[Any, Any, T], *, logging_timeout_s: float = 5.0) -> T:
    """``asyncio.run(coroutine)``, then let the LiteLLM logging callbacks its calls queued finish on the same
    event loop (at most ``logging_timeout_s`` seconds), so the next loop does not inherit them with a
    "LoggingWorker: event loop changed" warning on the terminal. LiteLLM's worker is internal: a LiteLLM
    without it is left as it is. A Ctrl-C or SIGTERM meanwhile stops the coroutine at once, whatever call is in
    flight, and raises as the handler installed says
    (:func:`~toolchoice_pipeline.util.loop_interrupts.run_interruptible`: Dagster's interrupt in a step)."""

    async def with_logging_finished() -> T:
        try:
            return await coroutine
        finally:
            await _finish_litellm_logging(logging_timeout_s)

    return run_interruptible(with_logging_finished())


async def _finish_litellm_logging(timeout_s: float) -> None:
    if "litellm" not in sys.modules:  # no call went through LiteLLM (a run of direct-path models): nothing queued
        return
    try:
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER
    except ImportError:
        return
    # LiteLLM hands each finished call's callback to the worker from a task it spawns: let those run first.
    for _ in range(3):
        await asyncio.sleep(0)
    try:
        await asyncio.wait_for(GLOBAL_LOGGING_WORKER.flush(), timeout_s)
    except TimeoutError:
        pass


async def _sleep_hook(seconds: float) -> None:
    await _backoff_sleep(seconds)


def assistant_message(message: Any) -> dict[str, Any]:
    """The OpenAI-format dict (``role``, ``content``, ``tool_calls``) of LiteLLM's reply message, read field by
    field: pydantic's ``model_dump`` of LiteLLM's ``Message`` costs more than the rest of our per-call work."""
    out: dict[str, Any] = {"role": "assistant", "content": message.content}
    tool_calls = getattr(message, "tool_calls", None)
    if tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": getattr(call, "type", None) or "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments},
            }
            for call in tool_calls
        ]
    function_call = getattr(message, "function_call", None)
    if function_call is not None:
        out["function_call"] = {"name": function_call.name, "arguments": function_call.arguments}
    reasoning = getattr(message, "reasoning_content", None)
    if reasoning:
        out["reasoning_content"] = reasoning
    return out


def takes_seed(model: str) -> bool:
    """Whether LiteLLM sends a ``seed`` to ``model``'s provider (False for unmapped models). Our direct-path models
    (``local/``, ``replay/``) take one, as LiteLLM lists for them, without asking LiteLLM."""
    from toolchoice_pipeline.providers.direct import is_direct

    if is_direct(model):
        return True
    import litellm

    try:
        return "seed" in (litellm.get_supported_openai_params(model=model) or [])
    except Exception:  # an unmapped provider: send no seed rather than fail the call
        return False


def call_cost(spec: ModelSpec, response: Any, prompt_tokens: int, completion_tokens: int) -> float:
    """USD for one call: the configured price if any (``config.Price``, USD per million tokens), 0.0 for
    in-process models, else LiteLLM's pricing (the figure LiteLLM computed for the response, or
    ``litellm.completion_cost``); a model missing from LiteLLM's pricing table costs 0.0."""
    if spec.price is not None:
        price = spec.price
        return (prompt_tokens * price.input_usd_per_mtok + completion_tokens * price.output_usd_per_mtok) / 1e6
    if is_local_model(spec.model):
        return 0.0
    hidden = getattr(response, "_hidden_params", None) or {}
    if isinstance(hidden.get("response_cost"), (int, float)):  # LiteLLM already priced it while logging
        return float(hidden["response_cost"])
    import litellm

    try:
        return float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # LiteLLM raises for models missing from its pricing table: unknown cost counts as 0
        return 0.0


def is_priced(spec: ModelSpec) -> bool:
    """Whether the cost of ``spec``'s calls is known: a configured ``price``, an in-process model (``local/``,
    ``replay/``, ``sim/``: free by definition), or a model LiteLLM's pricing table has (``litellm.get_model_info``
    with an input and an output price). An unpriced model's calls are counted at 0.0 USD by :func:`call_cost`,
    so its cost must be shown as "unpriced", never as 0.0000, and no budget can stop it."""
    if spec.price is not None or is_local_model(spec.model):
        return True
    import litellm

    try:
        info = litellm.get_model_info(spec.model)
    except Exception:  # noqa: BLE001 - LiteLLM raises for a model missing from its table
        return False
    return info.get("input_cost_per_token") is not None and info.get("output_cost_per_token") is not None


async def complete(
    spec: ModelSpec,
    messages: list[dict[str, Any]],
    *,
    retries: RetryConfig,
    tools: list[dict[str, Any]] | None = None,
    metadata: dict[str, Any] | None = None,
    limiter: AbstractAsyncContextManager | None = None,
    rate_limit: CallRateLimit | None = None,
    **params: Any,
) -> Completion:
    """Call ``spec.model`` once through ``litellm.acompletion``, retrying transient errors per ``retries``.

    ``params`` (e.g. ``temperature``, ``seed``, ``response_format``) override ``spec.params``. ``limiter``
    (e.g. an ``asyncio.Semaphore``) is held during each attempt but not while waiting between attempts, so a
    model backing off does not keep others from calling. ``rate_limit`` (:class:`.rate_limits.CallRateLimit`) admits
    each attempt, inside the slot so the provider sees the calls as they were admitted; the wait counts as
    ``queued_ms``. Raises the last LiteLLM exception when the call
    fails for good (non-transient, or attempts exhausted), with ``attempts`` set on it.

    ``local/`` and ``replay/`` models are called directly (:mod:`toolchoice_pipeline.providers.direct`), everything
    else through ``litellm.acompletion``: the same retries, bounds, checks and accounting either way.
    """
    from toolchoice_pipeline.providers import direct

    kwargs: dict[str, Any] = {**spec.params, **params}
    # A per-model timeout (ModelSpec.timeout_s, or params.timeout) replaces the retries' one for this model.
    timeout_s = kwargs.pop("timeout", None) or spec.timeout_s or retries.timeout_s
    if needs_placeholder_key(spec.model, kwargs):
        kwargs["api_key"] = PLACEHOLDER_KEY  # a keyless local server; LiteLLM's OpenAI client wants a key
    if tools:
        kwargs["tools"] = tools
    if metadata:
        kwargs["metadata"] = metadata
    max_attempts = 1 if spec.model.split("/", 1)[0] in SINGLE_ATTEMPT_PROVIDERS else retries.max_attempts

    direct_path = direct.is_direct(spec.model)
    if direct_path:
        in_process = True
    else:
        import litellm

        in_process = spec.model.split("/", 1)[0] in {item["provider"] for item in litellm.custom_provider_map}
    self_timed = spec.model.split("/", 1)[0] in SELF_TIMED_PROVIDERS
    # Every attempt is bounded by the same total time: remote replies, and our in-process providers too (a
    # stuck local agent, a slow sim/ or needle/ model fails as a remote one that timed out does).
    total_s = timeout_s + TOTAL_TIMEOUT_GRACE_S

    def worth_retrying(exc: BaseException) -> bool:
        # A Retry-After beyond retries.max_retry_after_s (86400: "come back tomorrow") ends the call now.
        after = retry_after_seconds(exc)
        return is_transient(exc) and (after is None or after <= retries.max_retry_after_s)

    attempts = 1

    async def attempt_call() -> tuple[Any, float, float]:
        waiting = time.perf_counter()
        async with limiter or nullcontext():
            if rate_limit is not None:
                await rate_limit.acquire()
            started = time.perf_counter()
            if direct_path:
                reply = _direct_call(direct, spec.model, messages, tools, kwargs, metadata)
                elapsed_s = time.perf_counter() - started
                if elapsed_s > total_s:  # it held the event loop: a late reply is refused as below
                    raise _total_timeout(spec.model, timeout_s)
                _checked_size(reply.message)
                return reply, elapsed_s * 1000, (started - waiting) * 1000
            # LiteLLM's timeout bounds each read, so a reply trickling in a byte at a time would never trip it:
            # asyncio bounds the whole attempt (connect, headers, body) by the same number of seconds. The body's
            # size is bounded as it is read (bounded_http: a gzip bomb, an endless reply) for OpenAI-compatible
            # providers.
            client = None if in_process else bounded_openai_client(spec.model, kwargs)
            try:
                call = litellm.acompletion(
                    model=spec.model,
                    messages=messages,
                    timeout=timeout_s,
                    num_retries=0,
                    max_retries=0,
                    **({"client": client} if client is not None else {}),
                    **kwargs,
                )
                response = await (call if self_timed else asyncio.wait_for(call, total_s))
            except TimeoutError:
                raise _total_timeout(spec.model, timeout_s) from None
            except Exception as exc:
                too_large = reply_too_large(exc)
                if too_large is None:
                    raise
                raise ReplyTooLarge(str(too_large)) from None
            elapsed_s = time.perf_counter() - started
            if self_timed and own_time_s(response) > total_s:
                raise _total_timeout(spec.model, timeout_s)
            if in_process and not self_timed and elapsed_s > total_s:
                # A synchronous in-process model (local/, replay/) holds the event loop while it works, so the
                # wait above cannot end it early: its late reply is refused as a remote one would have been.
                raise _total_timeout(spec.model, timeout_s)
            return checked_reply(response), elapsed_s * 1000, (started - waiting) * 1000

    try:
        # The first attempt runs outside tenacity: most calls succeed, and tenacity's per-attempt machinery
        # costs as much as the rest of our per-call work. A transient failure enters tenacity as its attempt 1,
        # so backoff, Retry-After and the attempt limit apply exactly as configured.
        try:
            response, latency_ms, slot_wait_ms = await attempt_call()
        except Exception as first:
            if max_attempts == 1 or not worth_retrying(first):
                raise
            pending: BaseException | None = first
            async for attempt in AsyncRetrying(
                retry=retry_if_exception(worth_retrying),
                stop=stop_after_attempt(max_attempts),
                wait=_WaitBackoffOrRetryAfter(retries),
                sleep=_sleep_hook,
                reraise=True,
            ):
                with attempt:
                    if pending is not None:
                        failed, pending = pending, None
                        raise failed  # noqa: B904 - re-raised as itself inside tenacity's attempt, not a new error
                    attempts += 1
                    response, latency_ms, slot_wait_ms = await attempt_call()
    except Exception as exc:
        try:
            exc.attempts = attempts  # type: ignore[attr-defined]
        except AttributeError:  # exceptions with __slots__ cannot carry it; the count is only informative
            pass
        raise
    if isinstance(response, direct.DirectReply):
        return _direct_completion(spec, response, latency_ms, slot_wait_ms, attempts)
    usage = getattr(response, "usage", None)
    prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
    message = assistant_message(response.choices[0].message)
    provider_ms = provider_time_ms(response)
    in_client_ms = 0.0 if provider_ms is None else max(0.0, latency_ms - provider_ms)
    return Completion(
        message=message,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=call_cost(spec, response, prompt_tokens, completion_tokens),
        latency_ms=latency_ms,
        attempts=attempts,
        raw=response,
        provider_ms=provider_ms,
        queued_ms=slot_wait_ms + in_client_ms,
        confidence=reply_confidence(response),
    )


def _direct_call(
    direct: Any,
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    params: dict[str, Any],
    metadata: dict[str, Any] | None,
) -> Any:
    """:func:`~toolchoice_pipeline.providers.direct.answer` with its errors mapped to LiteLLM's exception classes
    as ``litellm.acompletion`` maps a custom provider's (``exception_type``): the same classes, status codes and
    words either way."""
    try:
        return direct.answer(model, messages, tools, params, metadata)
    except Exception as exc:
        from litellm.litellm_core_utils.exception_mapping_utils import exception_type

        # raised inside the handler, as LiteLLM raises it: the model's own error stays its __context__
        raise exception_type(model=model, custom_llm_provider=model.split("/", 1)[0], original_exception=exc)  # noqa: B904


def _direct_completion(
    spec: ModelSpec, reply: Any, latency_ms: float, slot_wait_ms: float, attempts: int
) -> Completion:
    provider_ms = float(reply.provider_ms)
    return Completion(
        message=reply.message,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        cost_usd=call_cost(spec, None, reply.prompt_tokens, reply.completion_tokens),
        latency_ms=latency_ms,
        attempts=attempts,
        raw=None,
        provider_ms=provider_ms,
        queued_ms=slot_wait_ms + max(0.0, latency_ms - provider_ms),
        confidence=None,
    )
