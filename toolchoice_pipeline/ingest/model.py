"""What the session readers produce: recorded turns, each with its context and the assistant's first step.

A *turn* starts at a real user prompt. Its ``messages`` are the conversation so far (OpenAI chat format,
sanitised and truncated) ending with that prompt; its ``first_step`` is the assistant's first message in
reply (all the calls it listed, in order), which becomes the turn's replay line. ``index`` counts the
prompts of one session (or one subagent) from 0, in file order; labels refer to it.
"""

from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from toolchoice_pipeline.suites.catalog import ToolDefinition

MAX_CALL_NAMES = 64  # names of calls kept per turn


@dataclass
class RecordedCall:
    """One recorded tool call; ``arguments`` is the sanitised object, or the raw text when it did not decode."""

    name: str
    arguments: dict[str, Any] | str
    id: str | None = None


@dataclass
class Step:
    """One assistant message: its text (None when it had none) and its calls in the order listed."""

    text: str | None = None
    calls: list[RecordedCall] = field(default_factory=list)


@dataclass
class RecordedTurn:
    """One user prompt and what the recorded agent did with it (see the module doc)."""

    source: str
    session_id: str
    agent_id: str | None
    index: int
    file: str
    line: int | None
    messages: list[dict[str, Any]]
    first_step: Step | None = None
    call_names: list[str] = field(default_factory=list)
    tool_results: dict[str, str] = field(default_factory=dict)
    tools: list[ToolDefinition] | None = None
    catalog_gap: str | None = None  # why a turn without ``tools`` has no recorded catalog (OpenTelemetry)

    @property
    def prompt(self) -> str:
        content = self.messages[-1].get("content")
        return content if isinstance(content, str) else ""

    def record_call(self, name: str) -> None:
        if len(self.call_names) < MAX_CALL_NAMES:
            self.call_names.append(name)


class BoundedMap:
    """A dict that forgets its oldest keys beyond ``capacity`` (state that must not grow with file size)."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._values: dict[Any, Any] = {}
        self._order: deque[Any] = deque()

    def __contains__(self, key: Any) -> bool:
        return key in self._values

    def get(self, key: Any, default: Any = None) -> Any:
        return self._values.get(key, default)

    def __setitem__(self, key: Any, value: Any) -> None:
        if key not in self._values:
            self._order.append(key)
            if len(self._order) > self.capacity:
                self._values.pop(self._order.popleft(), None)
        self._values[key] = value


class BloomSet:
    """Set membership in a fixed amount of memory (a Bloom filter): ``2**bits`` bits, 4 hashes per key.

    ``in`` is never wrong for a key that was added; for another key it is wrongly true with probability about
    ``(1 - exp(-4n / 2**bits)) ** 4`` after ``n`` keys: below 1e-6 up to 100,000 keys with the default 2**24
    bits (2 MiB). Memory does not grow with the number of keys.
    """

    def __init__(self, bits: int = 24):
        self._mask = (1 << bits) - 1
        self._bits = bytearray(1 << (bits - 3))

    def _positions(self, key: str) -> list[int]:
        digest = int.from_bytes(hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest(), "big")
        return [(digest >> (32 * i)) & self._mask for i in range(4)]

    def add(self, key: str) -> None:
        for position in self._positions(key):
            self._bits[position >> 3] |= 1 << (position & 7)

    def __contains__(self, key: str) -> bool:
        return all(self._bits[p >> 3] & (1 << (p & 7)) for p in self._positions(key))

    def update(self, other: BloomSet) -> None:
        """Add every key of ``other`` (same size)."""
        merged = int.from_bytes(self._bits, "little") | int.from_bytes(other._bits, "little")
        self._bits[:] = merged.to_bytes(len(self._bits), "little")

    def clear(self) -> None:
        self._bits[:] = bytes(len(self._bits))
