"""The ``sim/<name>`` provider: a simulated remote model for benchmarks and fault tests.

Settings come from the model's ``params`` in the run configuration (all optional):

- ``sim_latency_ms`` (default 50): how long each attempt takes, in milliseconds;
- ``sim_error_rate`` (default 0.0): the fraction of attempts that fail with a transient error, an even mix of
  429 (with a ``Retry-After`` header), 500 and a timeout;
- ``sim_retry_after_s`` (default 1.0): the ``Retry-After`` the 429s carry, in seconds;
- ``sim_flip_rate`` (default 0.0): the fraction of samples whose first call goes to another tool of the
  task (a stochastic model: with repeats, the samples of one task disagree at this rate), drawn per task and
  sample (the ``task_id`` and ``sample`` of the call metadata) from ``sim_seed``;
- ``sim_seed`` (default 0).

Everything is deterministic given the seed: whether an attempt fails depends only on the request (model,
messages, tool names), the seed and how many times this process has already been sent that request, so a
benchmark gives the same faults on every run, and a retried request eventually gets through.

The reply is a plausible tool call from the tools the request carries: the tool whose name appears in the
last user message (the longest such name), else the one whose name and description share most words with
it; arguments fill the schema's required parameters from the message (quoted text, numbers, or a word).
After a tool result it answers in text, so episodes end. ``STATS`` counts attempts and completed calls.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import litellm
from litellm import CustomLLM

from toolchoice_pipeline.providers.response import fill_response

FAULT_KINDS = ("rate_limit", "server_error", "timeout")


@dataclass(frozen=True)
class SimSettings:
    """The sim provider's settings (see the module docstring); ``from_params`` raises ``ValueError``."""

    latency_ms: float = 50.0
    error_rate: float = 0.0
    retry_after_s: float = 1.0
    flip_rate: float = 0.0
    seed: int = 0

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> SimSettings:
        try:
            settings = cls(
                latency_ms=float(params.get("sim_latency_ms", 50.0)),
                error_rate=float(params.get("sim_error_rate", 0.0)),
                retry_after_s=float(params.get("sim_retry_after_s", 1.0)),
                flip_rate=float(params.get("sim_flip_rate", 0.0)),
                seed=int(params.get("sim_seed", 0)),
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"sim settings must be numbers ({exc})") from None
        if settings.latency_ms < 0 or settings.retry_after_s < 0:
            raise ValueError("sim_latency_ms and sim_retry_after_s must be >= 0")
        if not 0.0 <= settings.error_rate <= 1.0:
            raise ValueError("sim_error_rate must be between 0 and 1")
        if not 0.0 <= settings.flip_rate <= 1.0:
            raise ValueError("sim_flip_rate must be between 0 and 1")
        return settings


@dataclass
class SimStats:
    """Counters for this process: ``attempts`` received, ``completed`` replies, ``faults`` by kind."""

    attempts: int = 0
    completed: int = 0
    faults: Counter = field(default_factory=Counter)
    seen: dict[str, int] = field(default_factory=dict)

    def reset(self) -> None:
        self.attempts = 0
        self.completed = 0
        self.faults.clear()
        self.seen.clear()


STATS = SimStats()


def _unit(*parts: Any) -> float:
    """A deterministic number in [0, 1) from the parts."""
    raw = hashlib.blake2b("\x1f".join(map(str, parts)).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(raw, "big") / 2**64


def request_digest(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], seed: int) -> str:
    names = [t.get("function", {}).get("name", "") for t in tools]
    text = json.dumps([model, seed, messages, names], sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def fault_for(settings: SimSettings, digest: str, attempt: int) -> str | None:
    """The fault kind for the ``attempt``-th sending (0-based) of a request, or None."""
    if settings.error_rate <= 0 or _unit(settings.seed, digest, attempt, "fail") >= settings.error_rate:
        return None
    return FAULT_KINDS[int(_unit(settings.seed, digest, attempt, "kind") * len(FAULT_KINDS))]


def raise_fault(kind: str, model: str, settings: SimSettings, timeout: Any) -> None:
    if kind == "rate_limit":
        response = httpx.Response(
            429,
            headers={"retry-after": f"{settings.retry_after_s:g}"},
            request=httpx.Request("POST", "http://sim.invalid/v1/chat/completions"),
        )
        raise litellm.RateLimitError(
            message="sim: rate limit reached", llm_provider="sim", model=model, response=response
        )
    if kind == "server_error":
        raise litellm.InternalServerError(message="sim: internal server error", llm_provider="sim", model=model)
    raise litellm.Timeout(message=f"sim: request timed out (timeout={timeout})", model=model, llm_provider="sim")


_WORD = re.compile(r"[A-Za-z0-9]+")
_QUOTED = re.compile(r"[\"'`]([^\"'`]+)[\"'`]")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(re.sub(r"([a-z])([A-Z])", r"\1 \2", text))}


def _last_text(messages: list[dict[str, Any]], role: str) -> str:
    for message in reversed(messages):
        if message.get("role") == role:
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return content or ""
    return ""


def _argument(schema: dict[str, Any], text: str) -> Any:
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    number = _NUMBER.search(text)
    if kind == "integer":
        return int(float(number.group())) if number else 1
    if kind == "number":
        return float(number.group()) if number else 1.0
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    quoted = _QUOTED.search(text)
    if quoted:
        return quoted.group(1)
    words = _WORD.findall(text)
    return words[-1] if words else ""


def flips(settings: SimSettings, task: str, sample: int) -> bool:
    """Whether sample ``sample`` of ``task`` is one whose first call goes to another tool (``sim_flip_rate``)."""
    return settings.flip_rate > 0 and _unit(settings.seed, task, sample, "flip") < settings.flip_rate


def plausible_reply(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]], flip: str | None = None
) -> dict[str, Any]:
    """An assistant message (OpenAI chat format) calling the tool that best fits the last user message; with
    ``flip`` (a draw key), another tool of the request, picked from ``flip``, instead."""
    if messages and messages[-1].get("role") == "tool":
        return {"role": "assistant", "content": "Done."}
    functions = [t.get("function", t) for t in tools]
    if not functions:
        return {"role": "assistant", "content": "I have no tool for this."}
    text = _last_text(messages, "user")
    lowered = text.lower()
    named = [f for f in functions if f.get("name") and f["name"].lower() in lowered]
    if named:
        chosen = max(named, key=lambda f: len(f["name"]))
    else:
        asked = _words(text)
        chosen = max(functions, key=lambda f: len(asked & _words(f"{f.get('name', '')} {f.get('description', '')}")))
    others = [f for f in functions if f is not chosen]
    if flip is not None and others:
        chosen = others[int(_unit(flip, "other") * len(others))]
    parameters = chosen.get("parameters") or {}
    properties = parameters.get("properties") or {}
    arguments = {name: _argument(properties.get(name) or {}, text) for name in parameters.get("required") or []}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_sim_0",
                "type": "function",
                "function": {"name": chosen["name"], "arguments": json.dumps(arguments)},
            }
        ],
    }


class SimProvider(CustomLLM):
    """LiteLLM custom handler for ``sim/<name>`` (registered by :func:`..register_providers`)."""

    def _prepare(self, model: str, messages: list[dict[str, Any]], optional_params: dict[str, Any]):
        params = dict(optional_params)
        tools = params.pop("tools", None) or []
        settings = SimSettings.from_params(params)
        digest = request_digest(model, messages, tools, settings.seed)
        attempt = STATS.seen.get(digest, 0)
        STATS.seen[digest] = attempt + 1
        STATS.attempts += 1
        return settings, tools, fault_for(settings, digest, attempt)

    def _answer(self, model, messages, tools, fault, settings, model_response, timeout, litellm_params, started):
        if fault is not None:
            STATS.faults[fault] += 1
            raise_fault(fault, f"sim/{model}", settings, timeout)
        STATS.completed += 1
        metadata = (litellm_params or {}).get("metadata") or {}
        task = str(metadata.get("task_id") or request_digest(model, messages, tools, settings.seed))
        sample = int(metadata.get("sample") or 0)
        first_step = not any(m.get("role") == "tool" for m in messages)
        flip = f"{settings.seed}\x1f{task}\x1f{sample}" if first_step and flips(settings, task, sample) else None
        message = plausible_reply(messages, tools, flip)
        return fill_response(model_response, message, model=f"sim/{model}", prompt=[messages, tools], started=started)

    async def acompletion(
        self,
        model,
        messages,
        api_base,
        custom_prompt_dict,
        model_response,
        print_verbose,
        encoding,
        api_key,
        logging_obj,
        optional_params,
        acompletion=None,
        litellm_params=None,
        *args,
        timeout=None,
        **kwargs,
    ):
        started = time.perf_counter()
        settings, tools, fault = self._prepare(model, messages, optional_params)
        await asyncio.sleep(settings.latency_ms / 1000)
        return self._answer(model, messages, tools, fault, settings, model_response, timeout, litellm_params, started)

    def completion(
        self,
        model,
        messages,
        api_base,
        custom_prompt_dict,
        model_response,
        print_verbose,
        encoding,
        api_key,
        logging_obj,
        optional_params,
        acompletion=None,
        litellm_params=None,
        *args,
        timeout=None,
        **kwargs,
    ):
        started = time.perf_counter()
        settings, tools, fault = self._prepare(model, messages, optional_params)
        time.sleep(settings.latency_ms / 1000)
        return self._answer(model, messages, tools, fault, settings, model_response, timeout, litellm_params, started)
