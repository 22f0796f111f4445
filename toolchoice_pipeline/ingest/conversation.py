"""The conversation so far, in OpenAI chat format, kept within a size budget while a session streams past.

Oldest messages are dropped first once the budget (characters of content and arguments) is exceeded; a
snapshot then opens with a user note saying how many were left out. A snapshot is always a conversation a
chat API accepts: tool results whose call is no longer in the window are dropped, and calls without a
recorded result get a ``[no result recorded]`` tool message, so ``toolchoice run`` can send an ingested task
to a real model as well as to the judge.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from typing import Any

from toolchoice_pipeline.ingest.model import RecordedCall

DEFAULT_MAX_CONTEXT_CHARS = 32_000
NO_RESULT = "[no result recorded]"


@dataclass
class _Entry:
    message: dict[str, Any]
    size: int
    alive: bool = True


def _arguments_text(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _openai_call(call: RecordedCall, index: int) -> dict[str, Any]:
    return {
        "id": call.id or f"call_{index}",
        "type": "function",
        "function": {"name": call.name, "arguments": _arguments_text(call.arguments)},
    }


class Conversation:
    """A sliding window over one session's messages (see the module doc). ``position`` counts every message
    ever added, so a record can remember where the conversation stood when it was read."""

    def __init__(self, max_chars: int = DEFAULT_MAX_CONTEXT_CHARS):
        self.max_chars = max_chars
        self.system: str | None = None
        self._entries: deque[_Entry] = deque()
        self._size = 0
        self._base = 0  # messages before the window's first one (trimmed, or replaced by a compaction)
        self._trimmed = 0  # messages trimmed for the budget since the last compaction
        self._open_id: str | None = None
        self._open: _Entry | None = None
        self._call_count = 0

    @property
    def position(self) -> int:
        return self._base + len(self._entries)

    def set_system(self, text: str | None) -> None:
        """The system instructions (kept outside the budget: they tell the agent how to use its tools)."""
        self.system = text or None

    def add_user(self, text: str, name: str | None = None) -> None:
        """A user message; ``name`` (OpenAI's optional participant name) marks one a framework sent."""
        self._close_assistant()
        self._append({"role": "user", "content": text, **({"name": name} if name else {})}, len(text))

    def add_assistant(self, message_id: str | None, text: str | None, calls: list[RecordedCall]) -> None:
        """Add assistant text and calls; lines of the message already open (same ``message_id``) are merged."""
        if message_id is not None and message_id == self._open_id and self._open is not None and self._open.alive:
            entry = self._open
            message = entry.message
            added = 0
            if text:
                message["content"] = f"{message['content']}\n{text}" if message.get("content") else text
                added += len(text)
            if calls:
                tool_calls = message.setdefault("tool_calls", [])
                for call in calls:
                    tool_calls.append(_openai_call(call, self._next_call_index()))
                    added += len(call.name) + len(_arguments_text(call.arguments))
            entry.size += added
            self._size += added
            self._trim()
            return
        message = {"role": "assistant", "content": text or None}
        size = len(text or "")
        if calls:
            message["tool_calls"] = [_openai_call(call, self._next_call_index()) for call in calls]
            size += sum(len(c.name) + len(_arguments_text(c.arguments)) for c in calls)
        self._open_id = message_id
        self._open = self._append(message, size)

    def add_tool_result(self, call_id: str | None, text: str) -> None:
        self._append({"role": "tool", "tool_call_id": call_id or "", "content": text}, len(text))

    def reset(self, summary: str | None = None) -> None:
        """A compaction: everything so far is replaced by ``summary`` (as the agent itself then saw it)."""
        self._base += len(self._entries)
        self._trimmed = 0
        for entry in self._entries:
            entry.alive = False
        self._entries.clear()
        self._size = 0
        self._close_assistant()
        if summary:
            self.add_user(summary)

    def rewind(self, position: int) -> bool:
        """Go back to ``position`` (a conversation fork: the user edited an earlier prompt). False when that
        point has already left the window."""
        if position < self._base or position > self.position:
            return False
        while self.position > position:
            entry = self._entries.pop()
            entry.alive = False
            self._size -= entry.size
        self._close_assistant()
        return True

    def snapshot(self, prompt: str) -> list[dict[str, Any]]:
        """The conversation so far plus ``prompt``, repaired into a shape chat APIs accept (see the module doc)."""
        messages: list[dict[str, Any]] = []
        if self.system:
            messages.append({"role": "system", "content": self.system})
        body, kept = self._repaired()
        omitted = self._trimmed + (len(self._entries) - kept)
        if omitted:
            messages.append({"role": "user", "content": f"[{omitted} earlier messages of this session are left out]"})
        elif body and body[0]["role"] != "user":
            messages.append({"role": "user", "content": "[the recording starts in the middle of the session]"})
        messages.extend(body)
        messages.append({"role": "user", "content": prompt})
        return messages

    # --- internals ----------------------------------------------------------------------------------------

    def _next_call_index(self) -> int:
        self._call_count += 1
        return self._call_count - 1

    def _close_assistant(self) -> None:
        self._open_id = None
        self._open = None

    def _append(self, message: dict[str, Any], size: int) -> _Entry:
        entry = _Entry(message, size + 16)
        self._entries.append(entry)
        self._size += entry.size
        self._trim()
        return entry

    def _trim(self) -> None:
        while self._size > self.max_chars and len(self._entries) > 1:
            entry = self._entries.popleft()
            entry.alive = False
            self._size -= entry.size
            self._base += 1
            self._trimmed += 1

    def _repaired(self) -> tuple[list[dict[str, Any]], int]:
        """The window's messages made valid (see the module doc), and how many of them were kept."""
        out: list[dict[str, Any]] = []
        answered: set[str] = set()
        pending: list[str] = []  # call ids of the last assistant message still waiting for a result
        offered: set[str] = set()
        kept = 0

        def close_pending() -> None:
            for call_id in pending:
                if call_id not in answered:
                    answered.add(call_id)  # a result arriving after this point would be out of order
                    out.append({"role": "tool", "tool_call_id": call_id, "content": NO_RESULT})
            pending.clear()

        for entry in self._entries:
            message = entry.message
            role = message["role"]
            if role == "tool":
                call_id = message.get("tool_call_id")
                if call_id not in offered or call_id in answered:
                    continue
                answered.add(call_id)
                out.append(dict(message))
                kept += 1
                continue
            close_pending()
            copy = dict(message)
            if role == "assistant" and message.get("tool_calls"):
                copy["tool_calls"] = [dict(call) for call in message["tool_calls"]]
                for call in copy["tool_calls"]:
                    offered.add(call["id"])
                    pending.append(call["id"])
            out.append(copy)
            kept += 1
        close_pending()
        return out, kept
