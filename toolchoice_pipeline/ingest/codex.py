"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) into recorded turns.

Each line is ``{"timestamp", "type", "payload"}``. ``session_meta`` gives the session id and ``cwd``;
``response_item`` payloads are the OpenAI Responses items the model saw and produced; ``compacted`` replaces
the context with its summary. ``event_msg`` lines repeat the response items for the UI and are skipped, as
are ``turn_context`` lines (after their ``cwd`` is noted); any other line type is skipped with a warning.
Rollouts written before the envelope existed (a first line ``{"id", "timestamp", "instructions"}``, then the
bare items and ``{"record_type": "state"}`` lines) are read too.

Response items:

- ``message`` with role ``user``: a real prompt, unless it is context Codex injects itself
  (``<environment_context>``, ``<user_instructions>``, AGENTS.md instructions...); ``developer`` and
  ``system`` messages are skipped; ``assistant`` messages are the model's text.
- ``function_call`` (``arguments`` is JSON text), ``custom_tool_call`` (free-form ``input``, recorded as
  ``{"input": ...}`` like :func:`toolchoice_pipeline.records.calls.from_responses_output` does),
  ``local_shell_call`` (recorded as ``local_shell`` with its ``action``) and ``web_search_call``
  (``web_search`` with its ``action``): tool calls.
- ``*_output`` items: the result of the call with the same ``call_id`` (a string, or content items).
- ``reasoning``: left out.

Codex items carry no message id: consecutive model items up to the next tool output or user message form
one step (one assistant message).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from toolchoice_pipeline.ingest.jsonl import Warnings, read_json_lines
from toolchoice_pipeline.ingest.model import RecordedTurn
from toolchoice_pipeline.ingest.turns import ToolLedger, TurnAssembler
from toolchoice_pipeline.util.sanitise import Sanitiser

SOURCE = "codex"
_RESPONSE_ITEMS = {
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "local_shell_call_output",
    "web_search_call",
    "reasoning",
}
_INJECTED = (
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "# AGENTS.md instructions",
    "<user_shell_command>",
    "<turn_aborted>",
)
_SKIPPED_LINES = {"event_msg", "turn_context"}


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        for key in ("content", "output", "text"):
            if isinstance(content.get(key), str):
                return content[key]
        return json.dumps(content, ensure_ascii=False)
    parts = []
    for item in content or []:
        if isinstance(item, dict):
            if isinstance(item.get("text"), str):
                parts.append(item["text"])
            elif item.get("type") in ("input_image", "output_image"):
                parts.append("[image]")
    return "\n".join(parts)


def _output_text(output: Any) -> str:
    """A tool output: a string (sometimes JSON ``{"output": ..., "metadata": ...}``), or content items."""
    if isinstance(output, str):
        stripped = output.lstrip()
        if stripped.startswith("{"):
            try:
                decoded = json.loads(output)
            except ValueError:
                return output
            if isinstance(decoded, dict) and isinstance(decoded.get("output"), str):
                return decoded["output"]
        return output
    return _content_text(output)


class _CodexSession:
    def __init__(self, path: Path, shown: str, sanitiser: Sanitiser, ledger: ToolLedger, max_context_chars: int):
        self.path, self.shown, self.sanitiser = path, shown, sanitiser
        self.ledger, self.max_context_chars = ledger, max_context_chars
        self.session_id: str | None = None
        self.assembler: TurnAssembler | None = None
        self.step = 0

    def ensure(self) -> TurnAssembler:
        if self.assembler is None:
            self.assembler = TurnAssembler(
                source=SOURCE,
                session_id=self.session_id or self.path.stem,
                agent_id=None,
                file=self.shown,
                sanitiser=self.sanitiser,
                ledger=self.ledger,
                max_context_chars=self.max_context_chars,
            )
        return self.assembler

    def item(self, item: dict[str, Any], number: int) -> RecordedTurn | None:
        kind = item.get("type")
        assembler = self.ensure()
        step_id = f"step-{self.step}"
        if kind == "message":
            role = item.get("role")
            text = _content_text(item.get("content"))
            if role == "user":
                self.step += 1
                stripped = text.strip()
                if not stripped or stripped.startswith(_INJECTED):
                    return None
                closed, _ = assembler.prompt(stripped, number)
                return closed
            if role == "assistant" and text.strip():
                assembler.assistant(step_id, text, [])
        elif kind == "function_call":
            assembler.assistant(
                step_id, None, [(str(item.get("name") or ""), item.get("arguments"), item.get("call_id"))]
            )
        elif kind == "custom_tool_call":
            assembler.assistant(
                step_id, None, [(str(item.get("name") or ""), {"input": item.get("input")}, item.get("call_id"))]
            )
        elif kind in ("local_shell_call", "web_search_call"):
            action = {k: v for k, v in (item.get("action") or {}).items() if k != "type"}
            name = "local_shell" if kind == "local_shell_call" else "web_search"
            assembler.assistant(step_id, None, [(name, action, item.get("call_id") or item.get("id"))])
        elif isinstance(kind, str) and kind.endswith("_output"):
            self.step += 1
            assembler.tool_result(item.get("call_id"), _output_text(item.get("output")))
        return None


def read_codex(
    path: Path, *, shown: str, sanitiser: Sanitiser, ledger: ToolLedger, warnings: Warnings, max_context_chars: int
) -> Iterator[RecordedTurn]:
    """The turns of one Codex CLI rollout, in file order (see the module doc).

    Raises :class:`~toolchoice_pipeline.util.errors.InputError` when the file is not JSON Lines at all.
    """
    session = _CodexSession(path, shown, sanitiser, ledger, max_context_chars)
    for number, line in read_json_lines(path, shown, warnings):
        kind = line.get("type")
        payload = line.get("payload") if isinstance(line.get("payload"), dict) else None
        if payload is None:
            if kind in _RESPONSE_ITEMS:  # the pre-envelope layout: bare items
                kind, payload = "response_item", line
            elif "record_type" in line:
                continue
            elif "instructions" in line and isinstance(line.get("id"), str):
                kind, payload = "session_meta", line
            else:
                payload = {}
        if isinstance(payload.get("cwd"), str):
            sanitiser.learn_path(payload["cwd"])
        if kind == "session_meta":
            if session.session_id is None and isinstance(payload.get("id"), str):
                session.session_id = payload["id"]
        elif kind == "response_item":
            closed = session.item(payload, number)
            if closed is not None:
                yield closed
        elif kind == "compacted":
            session.ensure().compacted(payload.get("message") if isinstance(payload.get("message"), str) else None)
        elif kind not in _SKIPPED_LINES:
            warnings.add(shown, number, f"line skipped: unknown line type {sanitiser.text(str(kind))[:40]!r}")
    if session.assembler is not None:
        closed = session.assembler.close()
        if closed is not None:
            yield closed
