"""Filling LiteLLM's ``ModelResponse`` from an OpenAI-format assistant message (shared by our providers)."""

from __future__ import annotations

import time
from typing import Any

import litellm
from litellm.types.utils import ChatCompletionMessageToolCall, Function, Message

from toolchoice_pipeline.providers.direct import estimate_tokens

# The key in LiteLLM's ``_hidden_params`` under which our in-process providers report the milliseconds they spent
# answering (from entering the handler to the filled response): the provider time of DESIGN's ``provider_ms``.
PROVIDER_MS = "toolchoice_provider_ms"
# Of those milliseconds, the one-time setup a provider did for this call (needle/ binding a new tool list to its
# engine, cached for later calls): left out of what the call's ``timeout_s`` bounds.
SETUP_MS = "toolchoice_setup_ms"


def fill_response(
    model_response: litellm.ModelResponse,
    message: dict[str, Any],
    *,
    model: str,
    prompt: Any,
    started: float | None = None,
) -> litellm.ModelResponse:
    """Put ``message`` (``{"content", "tool_calls"}``) into ``model_response`` with an estimated ``usage`` and a
    cost of 0.0 (LiteLLM uses a ``response_cost`` already on the response instead of pricing it: looking up our
    free in-process models in its pricing table cost a third of each call's CPU); with ``started``
    (``time.perf_counter()`` when the handler was entered) the provider time in ms goes into
    ``_hidden_params[PROVIDER_MS]``."""
    tool_calls = [
        ChatCompletionMessageToolCall(
            id=call.get("id") or f"call_{index}",
            type="function",
            function=Function(name=call["function"]["name"], arguments=call["function"].get("arguments") or ""),
        )
        for index, call in enumerate(message.get("tool_calls") or [])
    ]
    model_response.choices[0].message = Message(
        role="assistant", content=message.get("content"), tool_calls=tool_calls or None
    )
    model_response.choices[0].finish_reason = "tool_calls" if tool_calls else "stop"
    model_response.model = model
    prompt_tokens = estimate_tokens(prompt)
    completion_tokens = estimate_tokens(message)
    # ModelResponse declares no ``usage`` field: LiteLLM sets it as a pydantic extra, as its own handlers do.
    model_response.usage = litellm.Usage(  # type: ignore[attr-defined]
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, total_tokens=prompt_tokens + completion_tokens
    )
    model_response._hidden_params["response_cost"] = 0.0
    if started is not None:
        model_response._hidden_params[PROVIDER_MS] = (time.perf_counter() - started) * 1000
    return model_response
