"""OpenTelemetry GenAI traces (and logs) exported as OTLP JSON into recorded turns, each with its catalog.

Input: OTLP/JSON export files (:mod:`.otlp_json`: JSON Lines as the Collector's file exporter writes them,
or pretty-printed documents, one or several per file), trace and log exports alike. All files of one
ingest are read first, because a model call's content may sit in log records of another file
(:mod:`.genai_calls` puts each call together from its span and events and reads every producer's form).

A model call whose last input message is a user prompt is the first step of a turn; calls whose input ends
with tool results are later steps (their results become the turn's ``tool_results``). Framework retry
prompts (Pydantic AI's "... Fix the errors and try again." and "Your previous response failed the
application's validation (this is automated feedback, not a message from the user)") are kept in the conversation as user messages
named ``framework_retry`` but start no turn and are not counted. The turn index is the number of prompts
before this one in the call's input, so calls may come in any order; the session is
``gen_ai.conversation.id`` or the trace id. System messages, from ``gen_ai.system_instructions`` or
inside the input, become the one system message. When the call lists its tool definitions they are the
turn's catalog (stored inline with the task); when it does not, :attr:`RecordedTurn.catalog_gap` says why.

Memory: the model calls of all files are held until the files are read (the message content of each call).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from toolchoice_pipeline.ingest.conversation import Conversation
from toolchoice_pipeline.ingest.genai_calls import RESULT_KEYS, CallCollector, ModelCall, parts
from toolchoice_pipeline.ingest.jsonl import Warnings
from toolchoice_pipeline.ingest.model import RecordedCall, RecordedTurn, Step
from toolchoice_pipeline.ingest.otlp_json import documents, records
from toolchoice_pipeline.ingest.turns import ToolLedger, recorded_call
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.catalog_files import parse_tool_dump
from toolchoice_pipeline.util.errors import InputError, Problem
from toolchoice_pipeline.util.sanitise import Sanitiser

SOURCE = "otel"
RETRY_MARKS = (
    "Fix the errors and try again.",  # Pydantic AI < 2: RetryPromptPart's closing sentence
    "(this is automated feedback, not a message from the user)",
)  # Pydantic AI 2.x
RETRY_NAME = "framework_retry"
CAPTURE_SETTINGS = {  # scope name prefix -> how that producer turns message content capture on
    "pydantic-ai": "Pydantic AI records it with InstrumentationSettings(include_content=True) (the default; "
    "include_content=False leaves it out)",
    "opentelemetry.instrumentation.openai.": "OpenLLMetry records it with TRACELOOP_TRACE_CONTENT=true",
    "openlit": "OpenLIT records it with openlit.init(capture_message_content=True)",
    "langtrace": "Langtrace records it unless TRACE_PROMPT_COMPLETION_DATA=false",
}
GENERIC_CAPTURE = (
    "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (SPAN_ONLY or EVENT_ONLY with "
    "opentelemetry-util-genai) for the OpenTelemetry instrumentations"
)


def _text(message_parts: list[dict[str, Any]]) -> str:
    out = []
    for part in message_parts:
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("content"), str):
            out.append(part["content"])
        elif kind in ("blob", "uri", "file"):
            out.append(f"[{part.get('modality') or kind}]")
    return "\n".join(out)


def is_retry(message: Any) -> bool:
    """A framework's automatic retry request (Pydantic AI's RetryPromptPart sent as a user message)."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return False
    text = _text(parts(message))
    return any(mark in text for mark in RETRY_MARKS)


def is_prompt(message: Any) -> bool:
    """A user message with text that is not a framework retry (tool results may share the message)."""
    return (
        isinstance(message, dict)
        and message.get("role") == "user"
        and bool(_text(parts(message)).strip())
        and not is_retry(message)
    )


def tool_result_text(part: dict[str, Any]) -> str:
    """A ``tool_call_response`` part's result, whichever key the producer used (``response``, ``result``...)."""
    value = next((part[key] for key in RESULT_KEYS if part.get(key) is not None), None)
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class _TurnBuilder:
    def __init__(self, sanitiser: Sanitiser, ledger: ToolLedger, warnings: Warnings, max_context_chars: int):
        self.sanitiser, self.ledger = sanitiser, ledger
        self.warnings, self.max_context_chars = warnings, max_context_chars
        self.seen_turns: set[tuple[str, int]] = set()
        self.results: dict[str, str] = {}  # call id -> recorded result, from every call's input
        self.made: dict[str, dict[str, Any]] = {}  # call id -> the tool_call part of the output that made it

    def turns(self, calls: list[ModelCall]) -> Iterator[RecordedTurn]:
        for call in calls:
            for message in call.outputs or []:
                for part in parts(message):
                    if part.get("type") == "tool_call" and part.get("id"):
                        self.made.setdefault(str(part["id"]), part)
            for message in call.inputs or []:
                for part in parts(message):
                    if part.get("type") == "tool_call_response" and part.get("id"):
                        self.results.setdefault(str(part["id"]), tool_result_text(part))
        for call in calls:
            turn = self.turn(call)
            if turn is not None:
                yield turn

    def turn(self, call: ModelCall) -> RecordedTurn | None:
        where = f"span {call.span_id[:16] or '?'}"
        inputs, outputs = call.inputs, call.outputs
        if inputs is None or outputs is None:
            cut = [t for t in call.truncated if t.startswith(("gen_ai.input", "gen_ai.output"))]
            if cut:
                self.warnings.add(
                    call.file,
                    call.line,
                    f"{where}: {', '.join(cut)} cut by an attribute length "
                    "limit (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT); span skipped",
                )
            return None
        if not inputs or not is_prompt(inputs[-1]):
            return None  # a later step of a turn (its input ends with tool results or a retry prompt)
        inputs = self._restore_calls(inputs)
        session = call.conversation_id or call.trace_id or "trace"
        index = sum(1 for message in inputs if is_prompt(message)) - 1
        if (session, index) in self.seen_turns:
            seen_in = self.sanitiser.text(session)[:16]
            self.warnings.add(call.file, call.line, f"{where}: turn {index} of {seen_in} seen before; span skipped")
            return None
        self.seen_turns.add((session, index))
        try:
            tools = self.tools(call, where)
        except InputError as exc:  # one span's bad definitions cost its turn, not the file
            first = exc.problems[0]
            self.warnings.add(call.file, call.line, f"{where}: {first.field}: {first.message}: no task")
            return None
        conversation = Conversation(self.max_context_chars)
        system = list(call.system)
        for message in inputs:
            if isinstance(message, dict) and message.get("role") in ("system", "developer"):
                text = _text(parts(message)).strip()
                if text and text not in system:
                    system.append(text)
        conversation.set_system(self.sanitiser.message_text("\n\n".join(system)) if system else None)
        for message in inputs[:-1]:
            self._feed(conversation, message, tools is None)
        self._results(conversation, inputs[-1])
        prompt = self.sanitiser.message_text(_text(parts(inputs[-1])).strip())
        turn = RecordedTurn(
            source=SOURCE,
            session_id=session,
            agent_id=None,
            index=index,
            file=call.file,
            line=call.line,
            messages=conversation.snapshot(prompt),
            tools=tools,
        )
        if tools is None:
            cut = [t for t in call.truncated if not t.startswith(("gen_ai.input", "gen_ai.output"))]
            turn.catalog_gap = (
                f"its tool definitions were cut by an attribute length limit: {', '.join(cut)} "
                "(raise OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT)"
                if cut
                else "it records no tool definitions"
            )
        reply = next((m for m in outputs if isinstance(m, dict) and m.get("role", "assistant") == "assistant"), None)
        if reply is not None:
            reply_text, calls = self._assistant_parts(parts(reply), record=tools is None)
            turn.first_step = Step(text=reply_text, calls=calls)
            for recorded in calls:
                turn.record_call(recorded.name)
                result = self.results.get(str(recorded.id)) if recorded.id else None
                # without recorded definitions, an answer refusing the call as an unknown tool (as sessions')
                # shows a tool that was never on offer: no definition is added for it and its answer is no result
                refused = result is not None and tools is None and self.ledger.result(recorded.name, result)
                if result is not None and not refused and recorded.name not in turn.tool_results:
                    turn.tool_results[recorded.name] = self.sanitiser.tool_result(result)
        return turn

    def _restore_calls(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``inputs`` with an assistant message put back before tool results whose call is not in them (OpenLIT
        leaves the assistant's tool-call message out of the input it records), made from the earlier call's
        output with the same call id."""
        offered: set[str] = set()
        out: list[dict[str, Any]] = []
        for message in inputs:
            message_parts = parts(message)
            offered.update(str(p.get("id")) for p in message_parts if p.get("type") == "tool_call")
            missing = [
                self.made[str(p.get("id"))]
                for p in message_parts
                if p.get("type") == "tool_call_response"
                and str(p.get("id")) not in offered
                and str(p.get("id")) in self.made
            ]
            if missing:
                if out and out[-1].get("role") == "assistant" and out[-1].get("_restored"):
                    out[-1]["parts"].extend(missing)
                else:
                    out.append({"role": "assistant", "parts": list(missing), "_restored": True})
                offered.update(str(p.get("id")) for p in missing)
            out.append(message)
        return out

    def tools(self, call: ModelCall, where: str) -> list[ToolDefinition] | None:
        """The call's tool definitions, sanitised (a tool listed twice, as Pydantic AI's function and output
        tools may be, is kept once: the first)."""
        if not call.definitions:
            return None
        unique, names = [], set()
        for definition in call.definitions:
            name = definition.get("name") or (definition.get("function") or {}).get("name")
            if name not in names:
                names.add(name)
                unique.append(definition)
        shown = f"{call.file}{'' if call.line is None else f':{call.line}'} {where}"
        try:
            tools = parse_tool_dump(unique, shown)
        except InputError as exc:
            raise InputError(
                [
                    Problem(file=p.file, line=None, field=f"gen_ai.tool.definitions{p.field or ''}", message=p.message)
                    for p in exc.problems
                ]
            ) from None
        return [
            t.model_copy(
                update={
                    "name": self.sanitiser.text(t.name),
                    "description": self.sanitiser.text(t.description),
                    "parameters": self.sanitiser.value(t.parameters),
                }
            )
            for t in tools
        ]

    def _results(self, conversation: Conversation, message: Any) -> None:
        for part in parts(message):
            if part.get("type") == "tool_call_response":
                conversation.add_tool_result(part.get("id"), self.sanitiser.tool_result(tool_result_text(part)))

    def _feed(self, conversation: Conversation, message: Any, record: bool) -> None:
        if not isinstance(message, dict):
            return
        role = message.get("role")
        self._results(conversation, message)
        if role == "assistant":
            text, calls = self._assistant_parts(parts(message), record)
            conversation.add_assistant(None, text, calls)
        elif role == "user":
            text = _text(parts(message)).strip()
            if text:
                conversation.add_user(self.sanitiser.message_text(text), name=RETRY_NAME if is_retry(message) else None)

    def _assistant_parts(
        self, message_parts: list[dict[str, Any]], record: bool
    ) -> tuple[str | None, list[RecordedCall]]:
        text = _text(message_parts).strip()
        calls = []
        for part in message_parts:
            if part.get("type") == "tool_call" and isinstance(part.get("name"), str):
                call = recorded_call(part["name"], part.get("arguments"), part.get("id"), self.sanitiser)
                if record:
                    self.ledger.called(call)
                    if call.id is not None and str(call.id) in self.results:
                        self.ledger.result(call.name, self.results[str(call.id)])
                calls.append(call)
        return (self.sanitiser.message_text(text) if text else None), calls


def read_otel(
    files: Sequence[tuple[Path, str]],
    *,
    sanitiser: Sanitiser,
    ledger: ToolLedger,
    warnings: Warnings,
    max_context_chars: int,
) -> Iterator[RecordedTurn]:
    """The turns in OTLP/JSON export files ``(path, shown name)`` read together (see the module doc).

    A call whose tool definitions are malformed is skipped with a warning naming the span and the field (one
    bad span never drops the file). Raises :class:`~toolchoice_pipeline.util.errors.InputError` when a file is
    not OTLP JSON or is nested deeper than Python's recursion limit, or the files record model calls but no
    message content (naming the producer's content capture setting).
    """
    collector = CallCollector()
    for path, shown in files:
        try:
            for payload, line in documents(path, shown, warnings):
                for record in records(payload, line):
                    collector.add(record, shown)
        except RecursionError:
            raise InputError(
                Problem(
                    file=shown, message="not OTLP JSON: nested too deeply (more levels than Python's recursion limit)"
                )
            ) from None
    calls = collector.finished()
    produced = 0
    for turn in _TurnBuilder(sanitiser, ledger, warnings, max_context_chars).turns(calls):
        produced += 1
        yield turn
    without = [call for call in calls if call.model_call and not call.has_content and not call.truncated]
    if without and produced == 0:
        first = without[0]
        raise InputError(
            Problem(
                file=first.file,
                line=first.line,
                field="gen_ai.input.messages",
                message=f"{len(without)} model calls recorded without their message content "
                f"(content capture was off, or the content is in log records of a "
                f"logs export not given): nothing to ingest. {_capture_hint(first)}",
            )
        )
    if without:
        warnings.add(
            without[0].file,
            without[0].line,
            f"{len(without)} model calls recorded without message content were skipped. {_capture_hint(without[0])}",
        )


def _capture_hint(call: ModelCall) -> str:
    for prefix, hint in CAPTURE_SETTINGS.items():
        if call.scope.startswith(prefix):
            return hint[0].upper() + hint[1:] + "."
    return GENERIC_CAPTURE[0].upper() + GENERIC_CAPTURE[1:] + "."
