"""Secrets out of a model's reply before anything stores it (the call journal, staged and published calls).

:func:`sanitise_reply` runs the ingest's sanitiser (:class:`~.sanitise.Sanitiser`, secrets only: a reply's
e-mail addresses and paths may be what the task asks for) on the strings of an OpenAI-format assistant message:
``content`` (a string or text parts), each tool call's ``arguments`` (JSON text decoded, every string value and
key sanitised, a value under a secret-like key such as ``password`` redacted whole, then encoded again; text
that does not decode is sanitised as text) and the legacy ``function_call``. Names, ids and other fields are
kept. A string is only scanned when a cheap pre-filter finds something a rule could match (a run of 12+
characters with no space or quote, ``://``, or a word such as key, token, pass, secret, auth); a reply with
nothing to redact is returned as the same object.
"""

from __future__ import annotations

import json
import re
from typing import Any

from toolchoice_pipeline.util.sanitise import Sanitiser

# Every rule of the sanitiser needs one of these: a long run (a key, a token, a base64 blob), a URL with
# credentials, or a word naming a secret (assignments, headers, ``mysql -p``, ``.netrc``, the context rule).
_MAYBE_SECRET = re.compile(
    r"[^\s\"'`,;(){}\[\]<>]{16,}|://"
    r"|(?i:pass|pwd|secret|key|token|cred|auth|bearer|basic|mysql|mariadb|putty|machine|ssws|cookie|webhook)"
)
_SANITISER = Sanitiser(personal=False)


def _text(text: Any) -> Any:
    if isinstance(text, str) and _MAYBE_SECRET.search(text):
        return _SANITISER.text(text)
    return text


def _value(value: Any) -> Any:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, (dict, list)) and _MAYBE_SECRET.search(json.dumps(value, ensure_ascii=False)):
        return _SANITISER.value(value)
    return value


def _arguments(arguments: Any) -> Any:
    if not isinstance(arguments, str):
        return _value(arguments)
    if not _MAYBE_SECRET.search(arguments):
        return arguments
    try:
        decoded = json.loads(arguments)
    except ValueError:
        return _SANITISER.text(arguments)
    clean = _SANITISER.value(decoded)
    return arguments if clean == decoded else json.dumps(clean, ensure_ascii=False)


def _call(call: Any) -> Any:
    if not isinstance(call, dict):
        return call
    function = call.get("function")
    if isinstance(function, dict) and "arguments" in function:
        arguments = _arguments(function["arguments"])
        if arguments is not function["arguments"]:
            return {**call, "function": {**function, "arguments": arguments}}
    elif "arguments" in call:
        arguments = _arguments(call["arguments"])
        if arguments is not call["arguments"]:
            return {**call, "arguments": arguments}
    return call


def sanitise_reply(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` (an OpenAI-format assistant message) with the secrets in its content and call arguments
    replaced by ``[REDACTED:<kind>]``; the same object when there was nothing to replace."""
    out = dict(message)
    content = message.get("content")
    if isinstance(content, str):
        out["content"] = _text(content)
    elif isinstance(content, list):
        out["content"] = [
            {**part, "text": _text(part["text"])}
            if isinstance(part, dict) and isinstance(part.get("text"), str)
            else part
            for part in content
        ]
    if isinstance(message.get("tool_calls"), list):
        out["tool_calls"] = [_call(call) for call in message["tool_calls"]]
    if isinstance(message.get("function_call"), dict):
        out["function_call"] = _call(message["function_call"])
    return message if out == message else out
