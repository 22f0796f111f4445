"""Held-out recordings, built at test time in shapes the project's fixtures do not have.

- :func:`claude_code_session`: a Claude Code 2.x session (``type: user/assistant`` lines, ``tool_use`` and
  ``tool_result`` blocks) with the given prompts, tool calls and results;
- :func:`codex_rollout`: a Codex CLI rollout (``session_meta``, ``response_item`` ``function_call`` and
  ``function_call_output``; ``arguments`` a JSON *string*, as Codex writes it, so it can be malformed);
- :func:`otel_attributes_trace`: OTLP JSON of current GenAI semantic conventions (``gen_ai.input.messages``,
  ``gen_ai.output.messages`` and ``gen_ai.tool.definitions`` as span attributes), with an ``execute_tool``
  span per call (``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments``);
- :func:`otel_events_trace`: the older shape (semantic conventions 1.28) as Semantic Kernel writes it: the
  messages as span events (``gen_ai.user.message``, ``gen_ai.choice``), each event's content as JSON text in
  its ``gen_ai.event.content`` attribute, and no tool definitions.

A *turn* is ``(prompt, calls, results)``: ``calls`` a list of ``(name, arguments)`` (``arguments`` a dict, or a
string written as is: malformed JSON), ``results`` the text each call returned.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

Call = tuple[str, Any]
Turn = tuple[str, Sequence[Call], Sequence[str]]

OPS_TOOLS = [
    {
        "type": "function",
        "name": "get_service_status",
        "description": "Current health of one service: status, error rate and latency.",
        "parameters": {
            "type": "object",
            "properties": {"service": {"type": "string", "description": "Service name, e.g. checkout."}},
            "required": ["service"],
        },
    },
    {
        "type": "function",
        "name": "query_logs",
        "description": "Search the recent log lines of one service for a text.",
        "parameters": {
            "type": "object",
            "properties": {"service": {"type": "string"}, "text": {"type": "string"}},
            "required": ["service", "text"],
        },
    },
]


def _jsonl(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


def _args_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def claude_code_session(path: Path, turns: Sequence[Turn], cwd: str = "/work/app") -> Path:
    session = "0b5e55ed-0000-4000-8000-00000000c1a0"
    base = {"sessionId": session, "cwd": cwd, "version": "2.1.50", "gitBranch": "main", "userType": "external"}
    lines: list[dict[str, Any]] = []
    parent: str | None = None
    for t, (prompt, calls, results) in enumerate(turns):
        uid = f"u{t}"
        lines.append(
            {**base, "type": "user", "uuid": uid, "parentUuid": parent, "message": {"role": "user", "content": prompt}}
        )
        parent = uid
        for c, ((name, arguments), result) in enumerate(zip(calls, results)):
            tool_id = f"toolu_01HeldOut{t}x{c}"
            block: dict[str, Any] = {"type": "tool_use", "id": tool_id, "name": name}
            block["input"] = arguments if isinstance(arguments, dict) else {"raw": arguments}
            aid = f"a{t}x{c}"
            lines.append(
                {
                    **base,
                    "type": "assistant",
                    "uuid": aid,
                    "parentUuid": parent,
                    "message": {
                        "id": f"msg_{t}{c}",
                        "role": "assistant",
                        "model": "claude-sonnet-4-5",
                        "content": [block],
                    },
                }
            )
            rid = f"r{t}x{c}"
            lines.append(
                {
                    **base,
                    "type": "user",
                    "uuid": rid,
                    "parentUuid": aid,
                    "toolUseResult": {"stdout": result, "stderr": ""},
                    "message": {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": result}],
                    },
                }
            )
            parent = rid
        aid = f"a{t}end"
        lines.append(
            {
                **base,
                "type": "assistant",
                "uuid": aid,
                "parentUuid": parent,
                "message": {"id": f"msg_{t}end", "role": "assistant", "content": [{"type": "text", "text": "Done."}]},
            }
        )
        parent = aid
    return _jsonl(path, lines)


def codex_rollout(path: Path, turns: Sequence[Turn]) -> Path:
    stamp = "2026-11-30T10:00:00.000Z"
    lines: list[dict[str, Any]] = [
        {
            "timestamp": stamp,
            "type": "session_meta",
            "payload": {
                "id": "c0dec0de-0000-4000-8000-000000000029",
                "timestamp": stamp,
                "cwd": "/work/app",
                "originator": "codex_cli_rs",
                "cli_version": "0.63.0",
                "source": "cli",
                "model_provider": "openai",
            },
        },
        {"timestamp": stamp, "type": "turn_context", "payload": {"cwd": "/work/app", "model": "gpt-5-codex"}},
    ]
    for t, (prompt, calls, results) in enumerate(turns):
        lines.append({"timestamp": stamp, "type": "event_msg", "payload": {"type": "user_message", "message": prompt}})
        lines.append(
            {
                "timestamp": stamp,
                "type": "response_item",
                "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]},
            }
        )
        for c, ((name, arguments), result) in enumerate(zip(calls, results)):
            call_id = f"call_heldout_{t}_{c}"
            lines.append(
                {
                    "timestamp": stamp,
                    "type": "response_item",
                    "payload": {
                        "type": "function_call",
                        "name": name,
                        "arguments": _args_text(arguments),
                        "call_id": call_id,
                    },
                }
            )
            lines.append(
                {
                    "timestamp": stamp,
                    "type": "response_item",
                    "payload": {"type": "function_call_output", "call_id": call_id, "output": result},
                }
            )
        lines.append(
            {
                "timestamp": stamp,
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Done."}],
                },
            }
        )
    return _jsonl(path, lines)


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def _resource(service: str) -> dict[str, Any]:
    return {"attributes": [_attr("service.name", service), _attr("telemetry.sdk.language", "python")]}


def otel_attributes_trace(path: Path, turns: Sequence[Turn], tools: list[dict[str, Any]] | None = None) -> Path:
    """One trace per turn: a chat span whose output is the turn's calls, then an ``execute_tool`` span per call,
    then a second chat span that sees the results."""
    tools = OPS_TOOLS if tools is None else tools
    lines = []
    system = {"role": "system", "parts": [{"type": "text", "content": "You are an on-call assistant."}]}
    for t, (prompt, calls, results) in enumerate(turns):
        trace_id = f"{t + 1:032x}"
        start = 1_764_500_000_000_000_000 + t * 10_000_000_000
        user = {"role": "user", "parts": [{"type": "text", "content": prompt}]}
        parts = [
            {"type": "tool_call", "id": f"call_{t}_{c}", "name": name, "arguments": arguments}
            for c, (name, arguments) in enumerate(calls)
        ]
        spans = [
            {
                "traceId": trace_id,
                "spanId": f"{t + 1:04x}000000000001",
                "name": "chat gpt-4.1-mini",
                "kind": 3,
                "startTimeUnixNano": str(start),
                "endTimeUnixNano": str(start + 1_000_000),
                "attributes": [
                    _attr("gen_ai.operation.name", "chat"),
                    _attr("gen_ai.provider.name", "openai"),
                    _attr("gen_ai.request.model", "gpt-4.1-mini"),
                    _attr("gen_ai.input.messages", json.dumps([system, user])),
                    _attr("gen_ai.tool.definitions", json.dumps(tools)),
                    _attr(
                        "gen_ai.output.messages",
                        json.dumps([{"role": "assistant", "parts": parts, "finish_reason": "tool_call"}]),
                    ),
                    _attr("gen_ai.usage.input_tokens", 120),
                    _attr("gen_ai.usage.output_tokens", 20),
                ],
                "status": {},
            }
        ]
        for c, ((name, arguments), result) in enumerate(zip(calls, results)):
            spans.append(
                {
                    "traceId": trace_id,
                    "spanId": f"{t + 1:04x}0000000001{c + 2:02x}",
                    "name": f"execute_tool {name}",
                    "kind": 1,
                    "startTimeUnixNano": str(start + 2_000_000 + c),
                    "endTimeUnixNano": str(start + 3_000_000 + c),
                    "attributes": [
                        _attr("gen_ai.operation.name", "execute_tool"),
                        _attr("gen_ai.tool.name", name),
                        _attr("gen_ai.tool.call.id", f"call_{t}_{c}"),
                        _attr("gen_ai.tool.call.arguments", _args_text(arguments)),
                        _attr("gen_ai.tool.call.result", result),
                    ],
                    "status": {},
                }
            )
        lines.append(
            {
                "resourceSpans": [
                    {"resource": _resource("ops-agent"), "scopeSpans": [{"scope": {"name": "heldout"}, "spans": spans}]}
                ]
            }
        )
    return _jsonl(path, lines)


def otel_events_trace(path: Path, turns: Sequence[Turn]) -> Path:
    """Semantic conventions 1.28: one chat span per turn, the messages as span events, no tool definitions."""
    lines = []
    for t, (prompt, calls, _results) in enumerate(turns):
        start = 1_764_600_000_000_000_000 + t * 10_000_000_000
        tool_calls = [
            {"id": f"call_{t}_{c}", "type": "function", "function": {"name": name, "arguments": _args_text(arguments)}}
            for c, (name, arguments) in enumerate(calls)
        ]
        events = [
            {
                "timeUnixNano": str(start),
                "name": "gen_ai.user.message",
                "attributes": [
                    _attr("gen_ai.system", "openai"),
                    _attr("gen_ai.event.content", json.dumps({"role": "user", "content": prompt})),
                ],
            },
            {
                "timeUnixNano": str(start + 1),
                "name": "gen_ai.choice",
                "attributes": [
                    _attr("gen_ai.system", "openai"),
                    _attr(
                        "gen_ai.event.content",
                        json.dumps(
                            {
                                "index": 0,
                                "finish_reason": "tool_calls",
                                "message": {"role": "assistant", "tool_calls": tool_calls},
                            }
                        ),
                    ),
                ],
            },
        ]
        span = {
            "traceId": f"{t + 101:032x}",
            "spanId": f"{t + 1:016x}",
            "name": "chat gpt-4o-mini",
            "kind": 3,
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(start + 1_000_000),
            "attributes": [
                _attr("gen_ai.operation.name", "chat"),
                _attr("gen_ai.system", "openai"),
                _attr("gen_ai.request.model", "gpt-4o-mini"),
            ],
            "events": events,
            "status": {},
        }
        lines.append(
            {
                "resourceSpans": [
                    {
                        "resource": _resource("ops-agent"),
                        "scopeSpans": [{"scope": {"name": "heldout"}, "spans": [span]}],
                    }
                ]
            }
        )
    return _jsonl(path, lines)
