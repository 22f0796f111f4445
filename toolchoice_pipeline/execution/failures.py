"""Turning a failed model call into one clear, secret-free message naming the model.

Every infrastructure error stored on an episode or a step comes from :func:`describe_failure`. Messages start
with the model string (``"openai/gpt-4o-mini: ..."``), say what kind of failure it was and what to do, and
never contain an API key: provider texts pass through :func:`redact` first (the values of secret environment
variables, then the sanitiser every stored text passes, :mod:`toolchoice_pipeline.util.sanitise`).
"""

from __future__ import annotations

import os
import re

from toolchoice_pipeline.util.sanitise import sanitise

_MAX_DETAIL = 300
#: Names of environment variables that hold secrets (API keys, tokens, passwords, credentials).
SECRET_VARIABLE = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS)", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with the value of every secret environment variable (8 characters or more) replaced by
    ``[REDACTED:environment_secret]``, then sanitised (:func:`~toolchoice_pipeline.util.sanitise.sanitise`: key
    formats, ``Bearer`` tokens, passwords in URLs, ... each as ``[REDACTED:<kind>]``)."""
    for name, value in os.environ.items():
        if value and len(value) >= 8 and SECRET_VARIABLE.search(name) and value in text:
            text = text.replace(value, "[REDACTED:environment_secret]")
    return sanitise(text)


def _detail(exc: BaseException) -> str:
    text = str(getattr(exc, "message", None) or exc).strip()
    text = re.sub(r"^(litellm\.\w+:\s*)+", "", text)
    # LiteLLM appends the traceback of its own parse failure ("Invalid response object Traceback ..."): the
    # line before it says what went wrong; the stack is no use to the user.
    text = text.split("Traceback (most recent call last)")[0].strip() or text
    text = " ".join(text.split())
    if len(text) > _MAX_DETAIL:
        text = text[:_MAX_DETAIL] + "..."
    return redact(text)


def is_unknown_provider(exc: BaseException) -> bool:
    """LiteLLM's "LLM Provider NOT provided" error (a model string without a provider it knows)."""
    return "LLM Provider NOT provided" in str(exc) or type(exc).__name__ == "LiteLLMUnknownProvider"


def is_model_level(exc: BaseException) -> bool:
    """True when the failure says the model itself is unusable (bad key, no such model, unreachable, or
    transient errors that outlasted every retry), as opposed to a problem with one request (a 400, a context
    window, a replay file without this task). Only model-level failures count towards stopping a model."""
    import litellm

    from toolchoice_pipeline.execution.llm import is_transient
    from toolchoice_pipeline.execution.rate_limits import RateLimitStoreUnavailable

    if isinstance(
        exc,
        (
            litellm.AuthenticationError,
            litellm.NotFoundError,
            litellm.PermissionDeniedError,
            litellm.APIConnectionError,
            RateLimitStoreUnavailable,  # no call of the model can be admitted until the store is back
        ),
    ):
        return True
    if is_unknown_provider(exc):
        return True
    return is_transient(exc)


def describe_failure(model: str, exc: BaseException, *, known_model: bool | None = None) -> str:
    """One line for a call to ``model`` that failed for good.

    ``known_model`` (from LiteLLM's model list, when the caller checked) lets an authentication error be told
    apart from a misspelt model name, which LiteLLM also reports as an authentication error.
    """
    import litellm

    attempts = getattr(exc, "attempts", None)
    tries = f" after {attempts} attempts" if isinstance(attempts, int) and attempts > 1 else ""
    detail = _detail(exc)
    from toolchoice_pipeline.execution.rate_limits import RateLimitStoreUnavailable

    if isinstance(exc, RateLimitStoreUnavailable):  # never reached LiteLLM: its own message says it all
        return f"{model}: not called: {exc}"
    if is_unknown_provider(exc):
        return f"{model}: unknown provider: LiteLLM has no provider for this model string ({detail})"
    if isinstance(exc, litellm.AuthenticationError):
        if known_model is False:
            return (
                f"{model}: model not found: LiteLLM's model list does not know it and the provider refused "
                f"the call (LiteLLM reports an unknown model as an authentication error): {detail}"
            )
        return f"{model}: authentication failed: the provider refused the API key from the environment ({detail})"
    from toolchoice_pipeline.execution.bounded_http import ReplyTooLarge
    from toolchoice_pipeline.execution.llm import MalformedReply

    if isinstance(exc, ReplyTooLarge):
        return f"{model}: reply too large: {detail}"
    if isinstance(exc, MalformedReply):
        return f"{model}: malformed provider reply{tries}: {detail}"
    if _connection_failed(exc):
        return f"{model}: provider unreachable{tries}: could not connect ({detail})"
    status = getattr(exc, "status_code", None)
    # (LiteLLM's exception classes, what the failure is called, whether retries preceded it), subclasses first.
    kinds = (
        (litellm.NotFoundError, "model not found", False),
        (litellm.PermissionDeniedError, "permission denied", False),
        (litellm.ContextWindowExceededError, "context window exceeded", False),
        (litellm.RateLimitError, "rate limited", True),
        (litellm.Timeout, "timed out", True),
        (litellm.APIConnectionError, "provider unreachable or failed", True),
        (
            (litellm.InternalServerError, litellm.ServiceUnavailableError, litellm.BadGatewayError),
            f"provider error {status}" if status else "provider error",
            True,
        ),
        ((litellm.BadRequestError, litellm.UnprocessableEntityError), "request rejected", False),
    )
    for classes, what, retried in kinds:
        if isinstance(exc, classes):
            return f"{model}: {what}{tries if retried else ''}: {detail}"
    return f"{model}: {type(exc).__name__}{tries}: {detail}"


def _connection_failed(exc: BaseException) -> bool:
    """True when the call never reached the provider: LiteLLM reports the OpenAI client's connection error as an
    ``InternalServerError`` (status 500) whose message is "Connection error.", the original kept as a cause."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return False
        if type(seen).__name__ in ("APIConnectionError", "ConnectError", "ConnectionRefusedError") or str(
            seen
        ).rstrip().endswith("Connection error."):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
