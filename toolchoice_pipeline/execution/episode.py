"""One episode: one model working on one task, for up to ``max_steps`` model calls (DESIGN §2).

Per step: the conversation so far and the task's catalog (OpenAI ``tools`` format) go to the model through
:func:`.llm.complete` (or come from the call journal); the reply is normalised once
(:func:`~toolchoice_pipeline.records.calls.from_openai_message`, then :func:`~toolchoice_pipeline.records.calls.flag_hallucinated`
against the catalog's names) and stored as a :class:`~toolchoice_pipeline.records.episodes.StepRecord`.

Between steps the assistant message (:func:`~toolchoice_pipeline.records.calls.to_openai_message`) goes back, followed
by one ``tool`` message per call the API returned (``tool_call_id`` set), holding the task's canned
``tool_results[name]`` (JSON text when it is not a string) or :data:`NO_RESULT`. The episode stops on a reply
without such calls, once the expected tool (for an ``any_call`` task, any tool) has been called, or after
``max_steps`` calls.

Remote providers only accept tool names matching ``^[a-zA-Z0-9_-]{1,64}$``: for them, names go out through
:func:`~toolchoice_pipeline.execution.tool_names.safe_tool_names` and replies are mapped back, so stored calls always
carry the catalog's own names (BFCL's ``spotify.play``). In-process models see the names as they are.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from toolchoice_pipeline.execution.journal import CallJournal, JournaledCall, digest, request_key
from toolchoice_pipeline.execution.tool_names import reverse, safe_tool_names
from toolchoice_pipeline.records.calls import Reply, flag_hallucinated, from_openai_message, to_openai_message
from toolchoice_pipeline.records.episodes import Episode, StepRecord
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.tasks import Task

NO_RESULT = "No result in this evaluation."


@dataclass(frozen=True)
class ToolView:
    """A catalog as one model sees it: the OpenAI ``tools`` list (provider names), the name maps both ways,
    the catalog's own names, the digest of the tools as sent (for the request key), and whether any name
    differs between the two."""

    tools: list[dict[str, Any]]
    to_provider: dict[str, str]
    from_provider: dict[str, str]
    names: frozenset[str]
    tools_digest: str
    renames: bool

    @classmethod
    def build(cls, catalog: list[ToolDefinition], *, safe_names: bool) -> ToolView:
        names = [tool.name for tool in catalog]
        mapping = safe_tool_names(names) if safe_names else {name: name for name in names}
        tools = []
        for tool in catalog:
            openai_tool = tool.to_openai_tool()
            if mapping[tool.name] != tool.name:
                openai_tool = {"type": "function", "function": {**openai_tool["function"], "name": mapping[tool.name]}}
            tools.append(openai_tool)
        return cls(
            tools=tools,
            to_provider=mapping,
            from_provider=reverse(mapping),
            names=frozenset(names),
            tools_digest=digest(tools),
            renames=any(a != b for a, b in mapping.items()),
        )

    def reply_to_catalog(self, reply: Reply) -> Reply:
        """``reply`` with provider names mapped back to the catalog's (unknown names left as they are)."""
        if not self.renames:
            return reply
        calls = [
            c.model_copy(update={"name": self.from_provider.get(c.name, c.name)}) if c.name else c for c in reply.calls
        ]
        return reply.model_copy(update={"calls": calls})

    def message_to_provider(self, message: dict[str, Any]) -> dict[str, Any]:
        """An assistant message with its ``tool_calls`` names mapped to the provider's names."""
        if not self.renames or not message.get("tool_calls"):
            return message
        calls = []
        for call in message["tool_calls"]:
            function = call.get("function") or {}
            name = function.get("name")
            provider_name = self.to_provider.get(name, name) if isinstance(name, str) else name
            calls.append({**call, "function": {**function, "name": provider_name}})
        return {**message, "tool_calls": calls}


# (task_id, sample, step, messages, tools) -> the completed call; raises LiteLLM's exception when the call
# fails for good, or ModelUnavailable when the model may not be called any more.
CallModel = Callable[[str, int, int, list[dict[str, Any]], list[dict[str, Any]]], Awaitable[JournaledCall]]


class ModelUnavailable(Exception):
    """The model may not be called (its preflight failed or it failed too often): ``str`` is the message."""


def tool_message(call_id: str, name: str, tool_results: dict[str, Any] | None) -> dict[str, Any]:
    """The ``tool`` message answering one call: the canned result for ``name``, or :data:`NO_RESULT`."""
    if tool_results and name in tool_results:
        result = tool_results[name]
        content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    else:
        content = NO_RESULT
    return {"role": "tool", "tool_call_id": call_id, "content": content}


@dataclass
class EpisodeSetup:
    """What an episode needs besides the task: the model's identity for the journal, how to call it."""

    model: str
    fingerprint: str | None
    key_params: dict[str, Any]
    journal: CallJournal
    call_model: CallModel
    describe_failure: Callable[[BaseException], str]
    max_steps: int


async def run_episode(task: Task, view: ToolView, setup: EpisodeSetup, sample: int = 0) -> Episode:
    """Run ``setup.model`` on ``task`` with the catalog ``view`` as sample ``sample`` (its own journal keys);
    never raises for a provider failure: the failed call becomes a step with ``error`` and the episode's
    ``error`` (an infrastructure error) is set."""
    messages = [view.message_to_provider(m) if m.get("role") == "assistant" else m for m in task.message_dicts()]
    expected_tool = task.expected.tool if task.expected is not None else None
    any_call = task.expected is not None and bool(task.expected.any_call)
    episode = Episode(model=setup.model, task_id=task.id, sample=sample)
    for step in range(setup.max_steps):
        key = request_key(
            model=setup.model,
            fingerprint=setup.fingerprint,
            params=setup.key_params,
            task_id=task.id,
            step=step,
            messages=messages,
            tools_digest=view.tools_digest,
            sample=sample,
        )
        done = setup.journal.lookup(key)
        cache_hit = done is not None
        if done is None:
            started = time.perf_counter()
            try:
                done = await setup.call_model(task.id, sample, step, messages, view.tools)
            except ModelUnavailable as exc:
                episode.error = str(exc)
                return episode
            except Exception as exc:  # LiteLLM's exceptions, and anything a provider raised through it
                message = setup.describe_failure(exc)
                episode.steps.append(
                    StepRecord(
                        step=step, error=message, request_key=key, latency_ms=(time.perf_counter() - started) * 1000
                    )
                )
                episode.error = message
                return episode
            await setup.journal.record_from_loop(key, model=setup.model, task_id=task.id, step=step, call=done)
        reply = flag_hallucinated(view.reply_to_catalog(from_openai_message(done.message)), view.names)
        episode.steps.append(
            StepRecord(
                step=step,
                reply=reply,
                latency_ms=done.latency_ms,
                provider_ms=done.provider_ms,
                queued_ms=done.queued_ms,
                confidence=done.confidence,
                prompt_tokens=done.prompt_tokens,
                completion_tokens=done.completion_tokens,
                cost_usd=done.cost_usd,
                cache_hit=cache_hit,
                request_key=key,
            )
        )
        returned = [c for c in reply.calls if not c.is_invalid_call]
        called_expected = (any_call and bool(returned)) or (
            expected_tool is not None and any(c.name == expected_tool for c in returned)
        )
        if not returned or called_expected or step + 1 == setup.max_steps:
            break
        assistant = to_openai_message(reply)
        messages = [*messages, view.message_to_provider(assistant)]
        for call in assistant.get("tool_calls") or []:
            messages.append(tool_message(call["id"], call["function"]["name"], task.tool_results))
    return episode
