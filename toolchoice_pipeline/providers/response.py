"""Filling LiteLLM's ``ModelResponse`` from an OpenAI-format assistant message (shared by our providers)."""

from __future__ import annotations

import json
from typing import Any

import litellm
from litellm.types.utils import ChatCompletionMessageToolCall, Function, Message


def estimate_tokens(value: Any) -> int:
    """A rough token count (4 characters per token) for in-process models, which have no tokenizer."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return max(1, len(text) // 4) if text else 0


def fill_response(model_response: litellm.ModelResponse, message: dict[str, Any], *, model: str,
                  prompt: Any) -> litellm.ModelResponse:
    """Put ``message`` (``{"content", "tool_calls"}``) into ``model_response`` with an estimated ``usage``."""
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
    model_response.usage = litellm.Usage(
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, total_tokens=prompt_tokens + completion_tokens
    )
    return model_response
