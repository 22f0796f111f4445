"""OpenTelemetry GenAI traces exported as OTLP JSON into recorded turns, each with the catalog it was offered.

Input: the OTLP/JSON encoding of ``ExportTraceServiceRequest`` (``{"resourceSpans": [{"scopeSpans":
[{"spans": [...]}]}]}``), one request per line as the OpenTelemetry Collector's file exporter writes it; a
single pretty-printed request is read whole. Span attributes follow the GenAI semantic conventions:

- ``gen_ai.operation.name`` ``chat`` / ``text_completion`` / ``generate_content`` marks a model call;
- ``gen_ai.input.messages`` / ``gen_ai.output.messages``: ``[{"role", "parts": [{"type": "text",
  "content"}, {"type": "tool_call", "id", "name", "arguments"}, {"type": "tool_call_response", "id",
  "response"}]}]`` (a JSON string, or a structured ``arrayValue``);
- ``gen_ai.system_instructions``: parts (or a string) put first as the system message;
- ``gen_ai.tool.definitions``: ``[{"type": "function", "name", "description", "parameters"}]``;
- Pydantic AI's ``model_request_parameters`` (JSON): ``function_tools`` and ``output_tools``, each
  ``{name, description, parameters_json_schema}``;
- ``gen_ai.conversation.id`` names the session (the trace id otherwise).

A model call whose last input message is a user message with text is the first step of a turn; calls whose
input ends with tool results are later steps and are skipped. Each span carries the whole conversation, so
spans can come in any order: the turn index is the number of user text messages before the prompt. When a
span lists its tool definitions, they are the turn's catalog (stored inline with the task).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.catalog_files import parse_tool_dump
from toolchoice_pipeline.util.errors import InputError, Problem
from toolchoice_pipeline.ingest.conversation import Conversation
from toolchoice_pipeline.ingest.jsonl import Warnings, read_json_lines
from toolchoice_pipeline.ingest.model import BoundedMap, RecordedCall, RecordedTurn, Step
from toolchoice_pipeline.util.sanitise import Sanitiser
from toolchoice_pipeline.ingest.turns import ToolLedger, recorded_call

SOURCE = "otel"
MODEL_CALL_OPERATIONS = {"chat", "text_completion", "generate_content"}
RECENT_TURNS = 20_000


def any_value(value: Any) -> Any:
    """A Python value from an OTLP/JSON ``AnyValue`` (``stringValue``, ``intValue``, ``arrayValue``...)."""
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "doubleValue" in value:
        return value["doubleValue"]
    if "arrayValue" in value:
        return [any_value(item) for item in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return {kv.get("key"): any_value(kv.get("value")) for kv in (value["kvlistValue"] or {}).get("values", [])}
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def span_attributes(span: dict[str, Any]) -> dict[str, Any]:
    return {kv.get("key"): any_value(kv.get("value")) for kv in span.get("attributes") or [] if isinstance(kv, dict)}


def _structured(value: Any) -> Any:
    """An attribute recorded as JSON text or in structured form, decoded (None when it does not decode)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _parts(message: Any) -> list[dict[str, Any]]:
    parts = message.get("parts") if isinstance(message, dict) else None
    if isinstance(parts, list):
        return [p for p in parts if isinstance(p, dict)]
    content = message.get("content") if isinstance(message, dict) else None
    return [{"type": "text", "content": content}] if isinstance(content, str) else []


def _text(parts: list[dict[str, Any]]) -> str:
    out = []
    for part in parts:
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("content"), str):
            out.append(part["content"])
        elif kind in ("blob", "uri", "file"):
            out.append(f"[{part.get('modality') or kind}]")
    return "\n".join(out)


def _is_prompt(message: Any) -> bool:
    parts = _parts(message)
    return (isinstance(message, dict) and message.get("role") == "user"
            and any(p.get("type") == "text" for p in parts)
            and not any(p.get("type") == "tool_call_response" for p in parts))


def _response_text(response: Any) -> str:
    return response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)


class _SpanReader:
    def __init__(self, shown: str, sanitiser: Sanitiser, ledger: ToolLedger, warnings: Warnings,
                 max_context_chars: int):
        self.shown, self.sanitiser, self.ledger = shown, sanitiser, ledger
        self.warnings, self.max_context_chars = warnings, max_context_chars
        self.seen_turns = BoundedMap(RECENT_TURNS)

    def requests(self, payload: dict[str, Any], line: int | None) -> Iterator[RecordedTurn]:
        for resource_spans in payload.get("resourceSpans") or []:
            for scope_spans in (resource_spans or {}).get("scopeSpans") or []:
                for span in (scope_spans or {}).get("spans") or []:
                    if isinstance(span, dict):
                        turn = self.span(span, line)
                        if turn is not None:
                            yield turn

    def span(self, span: dict[str, Any], line: int | None) -> RecordedTurn | None:
        attributes = span_attributes(span)
        operation = attributes.get("gen_ai.operation.name")
        if "gen_ai.input.messages" not in attributes or (operation and operation not in MODEL_CALL_OPERATIONS):
            return None
        where = f"span {str(span.get('spanId') or '?')[:16]}"
        inputs = _structured(attributes.get("gen_ai.input.messages"))
        outputs = _structured(attributes.get("gen_ai.output.messages"))
        if not isinstance(inputs, list) or not isinstance(outputs, list):
            self.warnings.add(self.shown, line, f"{where}: gen_ai.input.messages or gen_ai.output.messages is not "
                                                "a JSON list; span skipped")
            return None
        if not inputs or not _is_prompt(inputs[-1]):
            return None  # a later step of a turn (its input ends with tool results)
        session = str(attributes.get("gen_ai.conversation.id") or span.get("traceId") or "trace")
        index = sum(1 for message in inputs if _is_prompt(message)) - 1
        if (session, index) in self.seen_turns:
            seen_in = self.sanitiser.text(session)[:16]
            self.warnings.add(self.shown, line, f"{where}: turn {index} of {seen_in} seen before; span skipped")
            return None
        self.seen_turns[(session, index)] = True
        tools = self.tools(attributes, line, where)
        conversation = Conversation(self.max_context_chars)
        conversation.set_system(self._system(attributes.get("gen_ai.system_instructions")))
        for message in inputs[:-1]:
            self._feed(conversation, message, tools is None)
        prompt = self.sanitiser.message_text(_text(_parts(inputs[-1])).strip())
        turn = RecordedTurn(source=SOURCE, session_id=session, agent_id=None, index=index, file=self.shown,
                            line=line, messages=conversation.snapshot(prompt), tools=tools)
        reply = next((m for m in outputs if isinstance(m, dict) and m.get("role", "assistant") == "assistant"), None)
        if reply is not None:
            text, calls = self._assistant_parts(_parts(reply), record=tools is None)
            turn.first_step = Step(text=text, calls=calls)
            for call in calls:
                turn.record_call(call.name)
        return turn

    def tools(self, attributes: dict[str, Any], line: int | None, where: str) -> list[ToolDefinition] | None:
        """The span's tool definitions (GenAI ``gen_ai.tool.definitions`` or Pydantic AI's parameters), sanitised."""
        found: list[dict[str, Any]] = []
        definitions = _structured(attributes.get("gen_ai.tool.definitions"))
        if isinstance(definitions, list):
            found.extend(d for d in definitions if isinstance(d, dict))
        parameters = _structured(attributes.get("model_request_parameters"))
        if isinstance(parameters, dict):
            for tool in (parameters.get("function_tools") or []) + (parameters.get("output_tools") or []):
                if isinstance(tool, dict):
                    found.append({"name": tool.get("name"), "description": tool.get("description") or "",
                                  "parameters": tool.get("parameters_json_schema")})
        if not found:
            return None
        unique, names = [], set()
        for definition in found:  # a tool listed twice (function and output tools) is kept once, first wins
            if definition.get("name") not in names:
                names.add(definition.get("name"))
                unique.append(definition)
        try:
            tools = parse_tool_dump(unique, f"{self.shown}{'' if line is None else f':{line}'} {where}")
        except InputError as exc:
            raise InputError([Problem(file=p.file, line=None, field=f"gen_ai.tool.definitions{p.field or ''}",
                                      message=p.message) for p in exc.problems]) from None
        return [t.model_copy(update={"name": self.sanitiser.text(t.name),
                                     "description": self.sanitiser.text(t.description),
                                     "parameters": self.sanitiser.value(t.parameters)}) for t in tools]

    def _system(self, value: Any) -> str | None:
        value = _structured(value) if isinstance(value, str) and value.lstrip().startswith("[") else value
        text = value if isinstance(value, str) else _text([p for p in value or [] if isinstance(p, dict)])
        return self.sanitiser.message_text(text) if text else None

    def _feed(self, conversation: Conversation, message: Any, record: bool) -> None:
        if not isinstance(message, dict):
            return
        parts = _parts(message)
        role = message.get("role")
        for part in parts:
            if part.get("type") == "tool_call_response":
                conversation.add_tool_result(part.get("id"), self.sanitiser.tool_result(
                    _response_text(part.get("response"))))
        if role == "assistant":
            text, calls = self._assistant_parts(parts, record)
            conversation.add_assistant(None, text, calls)
        elif role in ("user", "system"):
            text = _text(parts).strip()
            if text:
                conversation.add_user(self.sanitiser.message_text(text))

    def _assistant_parts(self, parts: list[dict[str, Any]], record: bool) -> tuple[str | None, list[RecordedCall]]:
        text = _text(parts).strip()
        calls = []
        for part in parts:
            if part.get("type") == "tool_call" and isinstance(part.get("name"), str):
                call = recorded_call(part["name"], part.get("arguments"), part.get("id"), self.sanitiser)
                if record:
                    self.ledger.called(call)
                calls.append(call)
        return (self.sanitiser.message_text(text) if text else None), calls


def read_otel(path: Path, *, shown: str, sanitiser: Sanitiser, ledger: ToolLedger, warnings: Warnings,
              max_context_chars: int) -> Iterator[RecordedTurn]:
    """The turns in one OTLP/JSON trace file (see the module doc).

    Raises :class:`~toolchoice_pipeline.util.errors.InputError` when the file is not JSON (Lines) at all, is nested
    deeper than Python's recursion limit, or a span's tool definitions are malformed (naming the span).
    """
    try:
        yield from _read_otel(path, shown=shown, sanitiser=sanitiser, ledger=ledger, warnings=warnings,
                              max_context_chars=max_context_chars)
    except RecursionError:
        raise InputError(Problem(file=shown, message="not OTLP JSON: nested too deeply (more levels than Python's "
                                                     "recursion limit)")) from None


def _read_otel(path: Path, *, shown: str, sanitiser: Sanitiser, ledger: ToolLedger, warnings: Warnings,
               max_context_chars: int) -> Iterator[RecordedTurn]:
    reader = _SpanReader(shown, sanitiser, ledger, warnings, max_context_chars)
    if _is_single_document(path):
        try:
            with path.open("rb") as handle:
                payload = json.load(handle)
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(Problem(file=shown, line=getattr(exc, "lineno", None),
                                     message=f"not OTLP JSON: {getattr(exc, 'msg', 'not UTF-8 text')}")) from None
        if not isinstance(payload, dict) or "resourceSpans" not in payload:
            raise InputError(Problem(file=shown, field="resourceSpans", message="not an OTLP JSON trace export"))
        yield from reader.requests(payload, None)
        return
    for number, payload in read_json_lines(path, shown, warnings):
        if "resourceSpans" not in payload:
            warnings.add(shown, number, "line skipped: no resourceSpans (not an OTLP trace export)")
            continue
        yield from reader.requests(payload, number)


def _is_single_document(path: Path) -> bool:
    """True when the first non-blank line is not a whole JSON value (a pretty-printed export)."""
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                try:
                    json.loads(raw)
                except (ValueError, UnicodeDecodeError):
                    return raw.strip().startswith((b"{", b"["))
                return False
    return False
