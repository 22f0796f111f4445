"""One normalisation step from any model reply to our list of tool calls (used everywhere).

Accepted reply shapes (``response["format"]``, as in ``../shared/cases/scoring_cases.jsonl``):

- ``openai_chat``: ``{"message": {"content": ..., "tool_calls": [...]}}``; arguments a JSON string or an object;
  ``tool_calls: []`` means no call.
- ``anthropic_messages``: ``{"message": {"content": [{"type": "text"}, {"type": "tool_use"}, ...]}}``; text blocks
  are kept as the model's own text (its reasoning).
- ``openai_responses``: ``{"output": item | [items]}`` with ``function_call`` / ``custom_tool_call`` / ``message``
  items; a single item not inside a list is accepted.

A tool call written into the text (``<tool_call>`` tags, ``[TOOL_CALLS]``, a bare ``{"name", "arguments"}``
object...) is not a tool call the API returned: it becomes an *invalid call* (flag ``invalid_call``), counted
as a call and never as a correct "no call" (DESIGN §4). Arguments that cannot be decoded to a JSON object are
kept raw and flagged ``invalid_arguments``; a name outside the catalog is flagged ``hallucinated_tool`` by
:func:`flag_hallucinated`. Decoded arguments that break the tool's ``parameters`` schema carry one flag per kind
(:data:`ARGUMENT_SCHEMA_FLAGS`: ``missing_required``, ``wrong_type``, ``not_in_enum``, ``schema_violation`` for
any other rule), set by :mod:`toolchoice_pipeline.suites.argument_schema`; such a call is not
:attr:`ToolCall.arguments_valid`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

FLAG_INVALID_ARGUMENTS = "invalid_arguments"
FLAG_INVALID_CALL = "invalid_call"
FLAG_HALLUCINATED = "hallucinated_tool"
FLAG_MISSING_REQUIRED = "missing_required"
FLAG_WRONG_TYPE = "wrong_type"
FLAG_NOT_IN_ENUM = "not_in_enum"
FLAG_SCHEMA_VIOLATION = "schema_violation"
ARGUMENT_SCHEMA_FLAGS = (FLAG_MISSING_REQUIRED, FLAG_WRONG_TYPE, FLAG_NOT_IN_ENUM, FLAG_SCHEMA_VIOLATION)
"""Flags of decoded arguments that break the called tool's schema: a required argument missing, a value of the
wrong JSON type, a value outside ``enum``/``const``, any other rule (bounds, pattern, extra property...)."""

REPLY_FORMATS = ("openai_chat", "anthropic_messages", "openai_responses")


class ToolCall(BaseModel):
    """One tool call. ``arguments`` is the decoded object, or None when it could not be decoded to an object,
    in which case ``raw_arguments`` keeps the text as received."""

    name: str | None
    arguments: dict[str, Any] | None = None
    raw_arguments: str | None = None
    id: str | None = None
    flags: list[str] = Field(default_factory=list)

    @property
    def arguments_valid(self) -> bool:
        """Decoded to an object, a real tool call, and valid against the tool's schema (no
        :data:`ARGUMENT_SCHEMA_FLAGS` flag; a call not yet checked against its catalog has none)."""
        return (
            self.arguments is not None
            and FLAG_INVALID_CALL not in self.flags
            and not any(flag in ARGUMENT_SCHEMA_FLAGS for flag in self.flags)
        )

    @property
    def is_invalid_call(self) -> bool:
        return FLAG_INVALID_CALL in self.flags

    def arguments_json(self) -> str | None:
        """The arguments as JSON text: canonical-ish for decoded ones, the raw text for undecodable ones."""
        if self.arguments is not None:
            return json.dumps(self.arguments, ensure_ascii=False, sort_keys=True)
        return self.raw_arguments


class Reply(BaseModel):
    """A model reply reduced to its own ``text`` and its ``calls`` in the order the model listed them."""

    text: str | None = None
    calls: list[ToolCall] = Field(default_factory=list)

    @property
    def first_call(self) -> ToolCall | None:
        return self.calls[0] if self.calls else None

    @property
    def flags(self) -> list[str]:
        """Every flag of every call, each once, in order."""
        seen: list[str] = []
        for call in self.calls:
            for flag in call.flags:
                if flag not in seen:
                    seen.append(flag)
        return seen


class ReplyFormatError(ValueError):
    """A raw response whose shape is none of the accepted ones (the message names what is wrong)."""


def decode_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """``(object, raw_text)`` from arguments given as an object or a JSON string.

    A string that does not decode to a JSON object gives ``(None, text)``; anything decodable gives
    ``(object, None)``; ``None`` or ``""`` (some servers send these for a call with no arguments) give ``({}, None)``.
    """
    if isinstance(raw, dict):
        return raw, None
    if raw is None:
        return {}, None
    if isinstance(raw, str):
        if not raw.strip():
            return {}, None
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            return None, raw
        return (value, None) if isinstance(value, dict) else (None, raw)
    return None, json.dumps(raw, ensure_ascii=False)


def make_call(name: Any, raw_arguments: Any, call_id: str | None = None) -> ToolCall:
    """A :class:`ToolCall` from a name and arguments in either form, flagged when the arguments are undecodable."""
    arguments, raw = decode_arguments(raw_arguments)
    flags = [] if arguments is not None else [FLAG_INVALID_ARGUMENTS]
    return ToolCall(
        name=name if isinstance(name, str) else None, arguments=arguments, raw_arguments=raw, id=call_id, flags=flags
    )


# --- calls written into text -------------------------------------------------------------------------------

_TEXT_CALL_MARKERS = re.compile(
    r"<tool_call>|<\|tool_call|<function_call>|<function=|\[TOOL_CALLS\]|<\|python_tag\|>|<invoke name=",
    re.IGNORECASE,
)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_CALL_KEYS = ("arguments", "parameters", "input", "args")


def calls_in_text(text: str | None) -> list[ToolCall]:
    """Tool calls written into a reply's text, each as an *invalid call* (the API returned no call).

    The name is recovered when the embedded JSON parses, so a report can say what the model tried to call.
    """
    if not text or not text.strip():
        return []
    found: list[ToolCall] = []
    markers = list(_TEXT_CALL_MARKERS.finditer(text))
    if markers:
        for index, marker in enumerate(markers):
            end = markers[index + 1].start() if index + 1 < len(markers) else len(text)
            found.append(_invalid_call_from(text[marker.end() : end]))
        return found
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body.startswith(("{", "[")):
        return []
    try:
        value = json.loads(body)
    except (json.JSONDecodeError, RecursionError):
        # A JSON-looking reply cut off mid-call: an invalid call when it opens like one.
        if re.match(r'^\[?\s*\{\s*"(name|function|tool)"\s*:', body):
            return [_invalid_call_from(body)]
        return []
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("name"), str) and any(k in item for k in _CALL_KEYS):
            found.append(_invalid_call_from(json.dumps(item)))
    return found


def _invalid_call_from(fragment: str) -> ToolCall:
    name = None
    raw = fragment.strip()
    match = re.search(r'"name"\s*:\s*"([^"]+)"', raw) or re.match(r"([A-Za-z_][\w.\-]*)", raw)
    if match:
        name = match.group(1)
    return ToolCall(name=name, arguments=None, raw_arguments=raw[:2000] or None, flags=[FLAG_INVALID_CALL])


# --- the three reply shapes ----------------------------------------------------------------------------------


def _text_of(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = [
            part["text"]
            for part in content
            if isinstance(part, dict)
            and part.get("type") in ("text", "output_text")
            and isinstance(part.get("text"), str)
        ]
        return "\n".join(parts) if parts else None
    return None


def message_text(message: dict[str, Any]) -> str:
    """The text of a chat message as a reader of the conversation sees it: its ``content`` string, or the
    ``text`` of every part of a list of parts, one per line; ``""`` without text. (A reply's own text is read
    by :func:`from_openai_message`, which keeps only ``text``/``output_text`` parts.)"""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "") for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def from_openai_message(message: dict[str, Any]) -> Reply:
    """Normalise an OpenAI chat ``message`` (``content`` plus ``tool_calls``, or the legacy ``function_call``)."""
    text = _text_of(message.get("content"))
    calls: list[ToolCall] = []
    for item in message.get("tool_calls") or []:
        if not isinstance(item, dict):
            item = _as_dict(item)
        function = item.get("function") or {}
        if item.get("type") == "custom" or "custom" in item:
            custom = item.get("custom") or {}
            calls.append(make_call(custom.get("name"), {"input": custom.get("input")}, item.get("id")))
            continue
        calls.append(make_call(function.get("name"), function.get("arguments"), item.get("id")))
    legacy = message.get("function_call")
    if not calls and isinstance(legacy, dict):
        calls.append(make_call(legacy.get("name"), legacy.get("arguments")))
    if not calls:
        calls = calls_in_text(text)
    return Reply(text=text, calls=calls)


def from_anthropic_content(content: Any) -> Reply:
    """Normalise Anthropic Messages ``content``: text blocks become the text, ``tool_use`` blocks the calls."""
    if isinstance(content, str):
        return Reply(text=content, calls=calls_in_text(content))
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind in ("tool_use", "server_tool_use"):
            calls.append(make_call(block.get("name"), block.get("input"), block.get("id")))
    text = "\n".join(texts) if texts else None
    if not calls:
        calls = calls_in_text(text)
    return Reply(text=text, calls=calls)


def from_responses_output(output: Any) -> Reply:
    """Normalise OpenAI Responses ``output``: one item or a list of ``function_call`` / ``message`` items."""
    items = output if isinstance(output, list) else [output]
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "function_call":
            calls.append(make_call(item.get("name"), item.get("arguments"), item.get("call_id") or item.get("id")))
        elif kind == "custom_tool_call":
            calls.append(make_call(item.get("name"), {"input": item.get("input")}, item.get("call_id")))
        elif kind == "message":
            text = _text_of(item.get("content"))
            if text:
                texts.append(text)
    text = "\n".join(texts) if texts else None
    if not calls:
        calls = calls_in_text(text)
    return Reply(text=text, calls=calls)


def normalise_response(response: dict[str, Any]) -> Reply:
    """Normalise a raw reply tagged with its ``format`` (one of :data:`REPLY_FORMATS`).

    Raises :class:`ReplyFormatError` for an unknown format or a missing ``message`` / ``output``.
    """
    if not isinstance(response, dict):
        raise ReplyFormatError("a response must be a JSON object with a 'format'")
    fmt = response.get("format")
    if fmt == "openai_chat":
        message = response.get("message")
        if not isinstance(message, dict):
            raise ReplyFormatError("openai_chat response needs a 'message' object")
        return from_openai_message(message)
    if fmt == "anthropic_messages":
        message = response.get("message")
        content = message.get("content") if isinstance(message, dict) else response.get("content")
        if content is None and not isinstance(message, dict):
            raise ReplyFormatError("anthropic_messages response needs a 'message' with 'content'")
        return from_anthropic_content(content)
    if fmt == "openai_responses":
        if "output" not in response:
            raise ReplyFormatError("openai_responses response needs an 'output' item or list")
        return from_responses_output(response["output"])
    raise ReplyFormatError(f"unknown response format {fmt!r} (expected one of {', '.join(REPLY_FORMATS)})")


def flag_hallucinated(reply: Reply, tool_names: Iterable[str]) -> Reply:
    """A copy of ``reply`` whose calls to names outside ``tool_names`` carry the ``hallucinated_tool`` flag.

    Invalid calls whose name could not be read are left as they are.
    """
    names = set(tool_names)
    calls = []
    for call in reply.calls:
        if call.name is not None and call.name not in names and FLAG_HALLUCINATED not in call.flags:
            call = call.model_copy(update={"flags": [*call.flags, FLAG_HALLUCINATED]})
        calls.append(call)
    return reply.model_copy(update={"calls": calls})


def to_openai_message(reply: Reply) -> dict[str, Any]:
    """Render a reply as an OpenAI chat assistant message (for replay and for feeding episodes back).

    Valid calls become ``tool_calls`` (arguments as JSON text, undecodable ones as received); invalid calls
    written in text stay in the text, so normalising the result gives the same reply back.
    """
    tool_calls = []
    for index, call in enumerate(c for c in reply.calls if not c.is_invalid_call):
        arguments = call.raw_arguments if call.arguments is None else json.dumps(call.arguments, ensure_ascii=False)
        tool_calls.append(
            {
                "id": call.id or f"call_{index}",
                "type": "function",
                "function": {"name": call.name or "", "arguments": arguments or ""},
            }
        )
    text = reply.text
    invalid = [c for c in reply.calls if c.is_invalid_call]
    if invalid and not calls_in_text(text):
        text = "\n".join(filter(None, [text, *(f"<tool_call>{c.raw_arguments or ''}" for c in invalid)]))
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


def _as_dict(item: Any) -> dict[str, Any]:
    if hasattr(item, "model_dump"):
        return item.model_dump()
    return dict(item) if isinstance(item, dict) else {}
