"""Reading session files line by line, keeping what parses and warning about the rest.

Lines are split on ``\\n`` only (bytes are read, so U+2028 and U+2029 inside a JSON string never break a
line). A line that is not JSON (a truncated write, a crash mid-line) or not a JSON object is skipped with a
warning naming the file and line; the rest of the file is kept. A file in which no line holds a JSON
object is not JSON Lines at all: :class:`~toolchoice_pipeline.util.errors.InputError`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolchoice_pipeline.util.errors import InputError, Problem
from toolchoice_pipeline.util.json_text import bounded_lines, strict_decoder, too_long

MAX_KEPT_WARNINGS = 200
_STRICT = strict_decoder()  # no NaN, Infinity, 1e999 or repeated key (util/json_text.py)


@dataclass
class Warnings:
    """Warnings of one ingest: the first :data:`MAX_KEPT_WARNINGS` kept as text, all of them counted."""

    items: list[str] = field(default_factory=list)
    count: int = 0

    def add(self, file: str, line: int | None, message: str) -> None:
        self.count += 1
        if len(self.items) < MAX_KEPT_WARNINGS:
            where = file if line is None else f"{file}:{line}"
            self.items.append(f"{where}: {message}")


def check_readable(path: Path, shown: str) -> Problem | None:
    """Why ``path`` cannot be read as a session file, or None."""
    if not path.exists():
        return Problem(file=shown, message="file not found")
    if not path.is_file():
        return Problem(file=shown, message="not a file")
    return None


def read_json_lines(path: Path, shown: str, warnings: Warnings) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each line of ``path`` holding a JSON object (see the module doc)."""
    good = 0
    first_bad: int | None = None
    with path.open("rb") as handle:
        for number, raw in bounded_lines(handle):
            if raw is None:
                first_bad = first_bad or number
                warnings.add(shown, number, too_long(shown, number).message.replace("not read", "line skipped"))
                continue
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if not raw.strip():
                continue
            try:
                value = _STRICT.decode(raw.decode("utf-8"))
            except UnicodeDecodeError:
                reason = "not UTF-8 text"
            except (ValueError, RecursionError) as exc:
                reason = f"not valid JSON ({getattr(exc, 'msg', 'too deeply nested')})"
            else:
                if isinstance(value, dict):
                    good += 1
                    yield number, value
                    continue
                reason = "not a JSON object"
            first_bad = first_bad or number
            warnings.add(shown, number, f"line skipped: {reason}")
    if good == 0:
        raise InputError(
            Problem(file=shown, line=first_bad, message="not a JSON Lines file: no line holds a JSON object")
        )
