"""Model calls from OpenTelemetry GenAI spans and log records, whatever form the producer recorded them in.

Each model call (one ``chat`` span, keyed by trace and span id) is put together from every record that
carries part of it, and its messages are brought to the GenAI semantic conventions' form (``{"role",
"parts": [{"type": "text", "content"}, {"type": "tool_call", "id", "name", "arguments"},
{"type": "tool_call_response", "id", "response"}]}``). Forms read (docs/ingest.md has the producer table):

- span attributes ``gen_ai.input.messages`` / ``gen_ai.output.messages`` / ``gen_ai.system_instructions`` /
  ``gen_ai.tool.definitions`` (JSON text or structured values);
- the same attributes on a ``gen_ai.client.inference.operation.details`` event (an OTLP log record or a
  span event), joined to its span by trace and span id;
- one event per message: ``gen_ai.system.message``, ``gen_ai.user.message``, ``gen_ai.assistant.message``,
  ``gen_ai.tool.message`` and ``gen_ai.choice`` (log records with the content in the body, span events with
  it in their attributes or as JSON text in ``gen_ai.event.content`` (Semantic Kernel), or Pydantic AI < 1.0's
  ``events`` span attribute);
- the older flat attributes ``gen_ai.prompt.N.role`` / ``.content`` / ``.tool_calls.M.name`` / ``.tool_call_id``
  and ``gen_ai.completion.N.*``, with ``llm.request.functions.N.name`` / ``.description`` / ``.parameters``;
- Pydantic AI's ``model_request_parameters`` (``function_tools`` and ``output_tools``);
- Langtrace's span events ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` (attributes
  ``gen_ai.prompt`` / ``gen_ai.completion``: JSON lists of OpenAI chat messages, an assistant's calls as a list
  in ``content``) and ``gen_ai.request.tools`` (a list holding the OpenAI ``tools`` as JSON text).

A JSON-valued attribute that does not decode and was cut (the SDK's ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``)
is recorded in :attr:`ModelCall.truncated` with its length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from toolchoice_pipeline.ingest.otlp_json import Record, any_value, attributes
from toolchoice_pipeline.util.json_text import strict_decoder

MODEL_CALL_OPERATIONS = {"chat", "text_completion", "generate_content"}
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE_EVENT = "gen_ai.choice"
EVENT_CONTENT = "gen_ai.event.content"
CONTENT_EVENTS = {"gen_ai.content.prompt": "gen_ai.prompt", "gen_ai.content.completion": "gen_ai.completion"}
_STRICT = strict_decoder()  # NaN, 1e999 and repeated keys inside an attribute: not decoded
RESULT_KEYS = ("response", "result", "content", "output")  # where producers put a tool result
_FLAT = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")
_FUNCTIONS = re.compile(r"^llm\.request\.functions\.(\d+)\.(name|description|parameters)$")


@dataclass
class ModelCall:
    """One model call with everything recorded about it (see the module doc). ``inputs`` and ``outputs`` are
    in the GenAI parts form (None: not recorded); ``definitions`` the raw tool definitions offered (None: not
    recorded); ``truncated`` names attributes cut by an attribute length limit."""

    trace_id: str
    span_id: str
    file: str = ""
    line: int | None = None
    time: int = 0
    scope: str = ""
    model_call: bool = False
    inputs: list[dict[str, Any]] | None = None
    outputs: list[dict[str, Any]] | None = None
    system: list[str] = field(default_factory=list)
    definitions: list[dict[str, Any]] | None = None
    truncated: list[str] = field(default_factory=list)
    conversation_id: str | None = None
    _events_in: list[tuple[int, int, dict[str, Any]]] = field(default_factory=list)
    _events_out: list[dict[str, Any]] = field(default_factory=list)

    def finish(self) -> None:
        """Fold per-message events into ``inputs`` / ``outputs`` when no other form recorded them."""
        if self.inputs is None and self._events_in:
            self.inputs = [message for _, _, message in sorted(self._events_in, key=lambda e: (e[0], e[1]))]
        if self.outputs is None and self._events_out:
            self.outputs = self._events_out

    @property
    def has_content(self) -> bool:
        """True when some input message holds text (content capture was on)."""
        return any(
            isinstance(part.get("content"), str) and part["content"]
            for message in self.inputs or []
            for part in parts(message)
            if part.get("type") == "text"
        )


def parts(message: Any) -> list[dict[str, Any]]:
    """A message's parts (GenAI form), or its OpenAI-style ``content`` as one text part."""
    if not isinstance(message, dict):
        return []
    found = message.get("parts")
    if isinstance(found, list):
        return [p for p in found if isinstance(p, dict)]
    content = message.get("content")
    return [{"type": "text", "content": content}] if isinstance(content, str) else []


def decoded(value: Any) -> Any:
    """An attribute recorded as JSON text or in structured form, decoded (None when it does not decode)."""
    if isinstance(value, str):
        try:
            return _STRICT.decode(value)
        except ValueError:
            return None
    return value


def from_openai(message: dict[str, Any], role: str | None = None) -> dict[str, Any]:
    """An OpenAI chat message (or a per-message event body) in the GenAI parts form."""
    role = role or message.get("role") or "user"
    content = message.get("content")
    found: list[dict[str, Any]] = []
    if role == "tool":
        call_id = message.get("tool_call_id") or message.get("id")
        found.append({"type": "tool_call_response", "id": call_id, "response": content})
        return {"role": role, "parts": found}
    if isinstance(content, str) and content:
        found.append({"type": "text", "content": content})
    elif isinstance(content, list):
        for item in content:
            if isinstance(item, dict) and isinstance(item.get("function"), dict):  # Langtrace: calls as content
                found.append(
                    {
                        "type": "tool_call",
                        "id": item.get("id"),
                        "name": item["function"].get("name"),
                        "arguments": item["function"].get("arguments"),
                    }
                )
            elif isinstance(item, dict) and isinstance(item.get("text") or item.get("content"), str):
                found.append({"type": "text", "content": item.get("text") or item.get("content")})
            elif isinstance(item, str):
                found.append({"type": "text", "content": item})
    elif content is None and "content" not in message and role in ("user", "system"):
        found.append({"type": "text"})  # recorded without its content (content capture off)
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            nested = call.get("function")
            function = nested if isinstance(nested, dict) else call
            found.append(
                {
                    "type": "tool_call",
                    "id": call.get("id"),
                    "name": function.get("name"),
                    "arguments": function.get("arguments"),
                }
            )
    return {"role": role, "parts": found}


class CallCollector:
    """Model calls by ``(trace id, span id)`` from every record of one ingest (see the module doc)."""

    def __init__(self) -> None:
        self.calls: dict[tuple[str, str], ModelCall] = {}
        self._order = 0
        self._file = ""

    def add(self, record: Record, file: str) -> None:
        """Take what ``record`` (read from ``file``, as shown) holds about a model call, if anything."""
        self._file = file
        if record.kind == "span":
            self._span(record)
        else:
            name = record.data.get("eventName") or record.attributes.get("event.name")
            body = any_value(record.data.get("body"))
            self._event(record, str(name or ""), record.attributes, body, record.time)

    def finished(self) -> list[ModelCall]:
        """The model calls in time order, events folded in."""
        out = []
        for call in self.calls.values():
            call.finish()
            if call.model_call or call.inputs is not None:
                out.append(call)
        return sorted(out, key=lambda c: (c.time, c.trace_id, c.span_id))

    # --- internals ----------------------------------------------------------------------------------------

    def _call(self, record: Record) -> ModelCall:
        key = (record.trace_id, record.span_id)
        call = self.calls.get(key)
        if call is None:
            call = self.calls[key] = ModelCall(
                record.trace_id, record.span_id, self._file, record.line, record.time, record.scope
            )
        return call

    def _span(self, record: Record) -> None:
        attrs = record.attributes
        operation = attrs.get("gen_ai.operation.name") or attrs.get("llm.request.type")
        is_call = operation in MODEL_CALL_OPERATIONS
        if operation is not None and not is_call:
            return  # an agent, tool or embeddings span
        content_keys = any(key.startswith(("gen_ai.input.", "gen_ai.prompt.")) for key in attrs) or "events" in attrs
        if not is_call and not content_keys:
            return
        call = self._call(record)
        call.model_call = call.model_call or is_call
        call.file, call.line, call.time, call.scope = self._file, record.line, record.time, record.scope
        self._attributes(call, attrs)
        for event in record.data.get("events") or []:
            if isinstance(event, dict):
                self._event(
                    record, str(event.get("name") or ""), attributes(event), None, int(event.get("timeUnixNano") or 0)
                )
        pydantic_events = decoded(attrs.get("events"))
        if isinstance(pydantic_events, list):  # Pydantic AI < 1.0: one dict per message event
            for event in pydantic_events:
                if isinstance(event, dict):
                    self._message_event(call, str(event.get("event.name") or ""), event, record.time)

    def _event(self, record: Record, name: str, attrs: dict[str, Any], body: Any, time: int) -> None:
        if not record.span_id or not (
            name == DETAILS_EVENT or name in MESSAGE_EVENTS or name == CHOICE_EVENT or name in CONTENT_EVENTS
        ):
            return
        call = self._call(record)
        if name in CONTENT_EVENTS:
            messages = decoded(attrs.get(CONTENT_EVENTS[name]))
            if isinstance(messages, list):  # a list in place of a message: Langtrace's lost assistant calls
                converted = [from_openai(m) for m in messages if isinstance(m, dict)]
                if name == "gen_ai.content.prompt":
                    call.inputs = converted
                else:
                    call.outputs = [{**m, "role": "assistant"} for m in converted]
        elif name == DETAILS_EVENT:
            self._attributes(call, attrs)
        else:
            if not isinstance(body, dict):
                # a span event's content: its attributes, or one JSON text in ``gen_ai.event.content`` (Semantic
                # Kernel), which holds the body a log record would carry
                content = decoded(attrs.get(EVENT_CONTENT))
                body = content if isinstance(content, dict) else attrs
            self._message_event(call, name, body, time)

    def _message_event(self, call: ModelCall, name: str, body: dict[str, Any], time: int) -> None:
        if name == CHOICE_EVENT:
            choice = body.get("message")
            message = choice if isinstance(choice, dict) else body
            call._events_out.append(from_openai(message, "assistant"))
        elif name in MESSAGE_EVENTS:
            self._order += 1
            call._events_in.append((time, self._order, from_openai(body, MESSAGE_EVENTS[name])))

    def _attributes(self, call: ModelCall, attrs: dict[str, Any]) -> None:
        for key in (
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.system_instructions",
            "gen_ai.tool.definitions",
            "model_request_parameters",
        ):
            if key in attrs:
                self._json_attribute(call, key, attrs[key])
        if attrs.get("gen_ai.conversation.id"):
            call.conversation_id = str(attrs["gen_ai.conversation.id"])
        flat = _flat_messages(attrs)
        if flat is not None:
            prompts, completions = flat
            call.inputs = call.inputs if call.inputs is not None else prompts
            call.outputs = call.outputs if call.outputs is not None else completions
        functions = _flat_functions(attrs, call)
        if functions:
            call.definitions = (call.definitions or []) + functions
        requested = attrs.get("gen_ai.request.tools")  # Langtrace: '["<OpenAI tools as JSON text>"]'
        if isinstance(requested, str) and isinstance(decoded(requested), list):
            requested = decoded(requested)
        for item in requested if isinstance(requested, list) else [requested] if requested else []:
            if isinstance(item, dict):
                call.definitions = (call.definitions or []) + [item]
                continue
            tools = decoded(item)
            if isinstance(tools, list):
                call.definitions = (call.definitions or []) + [t for t in tools if isinstance(t, dict)]
            elif _looks_json(item):
                call.truncated.append(f"gen_ai.request.tools ({len(item)} characters)")

    def _json_attribute(self, call: ModelCall, key: str, raw: Any) -> None:
        value = decoded(raw) if key != "gen_ai.system_instructions" or _looks_json(raw) else raw
        if value is None:
            if isinstance(raw, str) and _looks_json(raw):
                call.truncated.append(f"{key} ({len(raw)} characters)")
            return
        if key == "gen_ai.input.messages" and isinstance(value, list):
            call.inputs = [m for m in value if isinstance(m, dict)]
        elif key == "gen_ai.output.messages" and isinstance(value, list):
            call.outputs = [m for m in value if isinstance(m, dict)]
        elif key == "gen_ai.system_instructions":
            texts = (
                [value] if isinstance(value, str) else [p.get("content") for p in value or [] if isinstance(p, dict)]
            )
            call.system.extend(t for t in texts if isinstance(t, str) and t and t not in call.system)
        elif key == "gen_ai.tool.definitions" and isinstance(value, list):
            call.definitions = (call.definitions or []) + [d for d in value if isinstance(d, dict)]
        elif key == "model_request_parameters" and isinstance(value, dict):
            tools = [
                t
                for t in (value.get("function_tools") or []) + (value.get("output_tools") or [])
                if isinstance(t, dict)
            ]
            call.definitions = (call.definitions or []) + [
                {
                    "name": t.get("name"),
                    "description": t.get("description") or "",
                    "parameters": t.get("parameters_json_schema"),
                }
                for t in tools
            ]


def _looks_json(value: Any) -> bool:
    return isinstance(value, str) and value.lstrip().startswith(("[", "{"))


def _flat_messages(attrs: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` attributes as GenAI messages, or None."""
    found: dict[str, dict[int, dict[str, Any]]] = {"prompt": {}, "completion": {}}
    for key, value in attrs.items():
        match = _FLAT.match(str(key))
        if match:
            kind, index, rest = match.group(1), int(match.group(2)), match.group(3)
            message = found[kind].setdefault(index, {})
            if rest.startswith("tool_calls."):
                _, number, name = (rest.split(".", 2) + ["", ""])[:3]
                if number.isdigit():
                    message.setdefault("_calls", {}).setdefault(int(number), {})[name] = value
            else:
                message[rest] = value
    if not found["prompt"] and not found["completion"]:
        return None

    def messages(kind: str) -> list[dict[str, Any]]:
        out = []
        for _, message in sorted(found[kind].items()):
            calls = [
                {"id": c.get("id"), "function": {"name": c.get("name"), "arguments": c.get("arguments")}}
                for _, c in sorted(message.pop("_calls", {}).items())
            ]
            if calls:
                message["tool_calls"] = calls
            out.append(from_openai(message, message.get("role") or ("assistant" if kind == "completion" else None)))
        return out

    return messages("prompt"), messages("completion")


def _flat_functions(attrs: dict[str, Any], call: ModelCall) -> list[dict[str, Any]]:
    """OpenLLMetry's ``llm.request.functions.N.*`` attributes as tool definitions."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        match = _FUNCTIONS.match(str(key))
        if match:
            found.setdefault(int(match.group(1)), {})[match.group(2)] = value
    out = []
    for index, item in sorted(found.items()):
        parameters = item.get("parameters")
        if isinstance(parameters, str):
            decoded_parameters = decoded(parameters)
            if decoded_parameters is None:
                call.truncated.append(f"llm.request.functions.{index}.parameters ({len(parameters)} characters)")
                continue
            parameters = decoded_parameters
        out.append({"name": item.get("name"), "description": item.get("description") or "", "parameters": parameters})
    return out
