"""Our deterministic in-process models called without LiteLLM: ``local/<name>`` and ``replay/<path>`` (issue 27).

:func:`toolchoice_pipeline.execution.llm.complete` stays the one way in for every model call (retries, limits,
timeouts, reply checks, accounting); for these models it calls :func:`answer` instead of ``litellm.acompletion``,
so a run whose agents and judge are all such models never imports LiteLLM (its import and first call were ~5 of
a 1-task run's ~9 CPU-s: docs/benchmarks.md). LiteLLM's handlers for them (:mod:`.local`, :mod:`.replay`) stay
registered for outside callers of ``litellm.acompletion`` and run the same functions; both ways give the same
reply, the same estimated tokens and the same errors (``CustomLLMError``, built on the error path only,
:mod:`.errors`). ``sim/`` (it simulates LiteLLM's own errors) and ``needle/`` keep going through LiteLLM.

What LiteLLM does on the way, repeated here:

- the model sees the messages with their None-valued keys dropped (LiteLLM's ``cleanup_none_field_in_message``),
  and the call's parameters less None values, ``tools`` and LiteLLM's own call controls (:data:`CALL_CONTROLS`);
- the reply is the model's message as LiteLLM's ``Message`` renders it back: ``role`` "assistant", ``content``,
  and ``tool_calls`` (when there are any) each with ``id`` (``call_<i>`` when it had none), ``type`` "function",
  ``function.name`` and ``function.arguments`` as text (a dict as JSON, none as "");
- tokens are estimated (:func:`estimate_tokens`) from ``[messages, tools]`` and from the model's message.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from toolchoice_pipeline.providers.local_model import LocalModel

DIRECT_PROVIDERS = ("local", "replay")
#: Parameters of a call that are LiteLLM's (or our call wrapper's), never a model's own.
CALL_CONTROLS = frozenset(
    {"timeout", "num_retries", "max_retries", "metadata", "drop_params", "cache", "api_key", "api_base", "client"}
)


def is_direct(model: str) -> bool:
    """True for the models :func:`~toolchoice_pipeline.execution.llm.complete` calls without LiteLLM."""
    return model.split("/", 1)[0] in DIRECT_PROVIDERS


def estimate_tokens(value: Any) -> int:
    """A rough token count (4 characters per token) for in-process models, which have no tokenizer."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return max(1, len(text) // 4) if text else 0


def local_models() -> dict[str, LocalModel]:
    """Every ``local/<name>`` model by name (agents: :mod:`.local_agents`; the offline judge: :mod:`.local_judge`)."""
    from toolchoice_pipeline.providers.local_agents import MODELS as AGENTS
    from toolchoice_pipeline.providers.local_judge import MODELS as JUDGES

    return {**AGENTS, **JUDGES}


def local_answer(name: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], params: dict[str, Any]):
    """The message of ``local/<name>``; raises ``CustomLLMError(404)`` naming the known models when there is no
    such model."""
    models = local_models()
    if name not in models:
        from toolchoice_pipeline.providers.errors import provider_error

        raise provider_error(
            404,
            f"unknown local model 'local/{name}' (known: {', '.join('local/' + known for known in sorted(models))})",
        )
    return models[name](messages, tools, params)


@dataclass
class DirectReply:
    """One answer of a direct-path model: ``message`` as the caller receives it (OpenAI format) and the estimated
    ``prompt_tokens`` and ``completion_tokens``; ``provider_ms``: the model's time, from the call to its rendered
    reply (as LiteLLM's handlers time it)."""

    message: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int
    provider_ms: float


def provider_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as LiteLLM hands them to a provider: each a new dict without its None-valued keys."""
    return [{key: value for key, value in message.items() if value is not None} for message in messages]


def model_params(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters a model sees: ``params`` less None values, ``tools`` and :data:`CALL_CONTROLS`."""
    return {
        key: value for key, value in params.items() if value is not None and key != "tools" and key not in CALL_CONTROLS
    }


def reply_message(message: dict[str, Any]) -> dict[str, Any]:
    """The model's ``message`` as the caller receives it (the module docstring's rendering)."""
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    calls = []
    for index, call in enumerate(message.get("tool_calls") or []):
        arguments = call["function"].get("arguments") or ""
        calls.append(
            {
                "id": call.get("id") or f"call_{index}",
                "type": "function",
                "function": {
                    "name": call["function"]["name"],
                    "arguments": json.dumps(arguments) if isinstance(arguments, dict) else arguments,
                },
            }
        )
    if calls:
        out["tool_calls"] = calls
    return out


def answer(
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    params: dict[str, Any],
    metadata: dict[str, Any] | None = None,
) -> DirectReply:
    """Call ``model`` (``local/<name>`` or ``replay/<path>``) in this process, as LiteLLM's handler would.

    ``params``: the call's parameters (``temperature``, ``seed``...; LiteLLM's own are left out,
    :func:`model_params`); ``metadata``: the call's (a replay reads ``task_id``, ``step`` and ``data_dir``).
    Raises what the model raises (``CustomLLMError`` for an unknown local model or a replay without the task)."""
    started = time.perf_counter()
    provider, _, name = model.partition("/")
    sent = provider_messages(messages)
    tools = tools or []
    if provider == "local":
        message = local_answer(name, sent, tools, model_params(params))
    elif provider == "replay":
        from toolchoice_pipeline.providers.replay_model import replay_answer

        message = replay_answer(name, metadata)
    else:
        raise ValueError(f"{model} is not called directly (only {', '.join(DIRECT_PROVIDERS)})")
    return DirectReply(
        message=reply_message(message),
        prompt_tokens=estimate_tokens([sent, tools]),
        completion_tokens=estimate_tokens(message),
        provider_ms=(time.perf_counter() - started) * 1000,
    )
