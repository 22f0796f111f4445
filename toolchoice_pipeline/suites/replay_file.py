"""Replay files: a recorded model's first-step replies, one JSON line per task (DESIGN §3).

Each non-blank line is one of::

    {"task_id": "grep-def-001", "tool_calls": [{"name": "Grep", "arguments": {"pattern": "def load_settings"}}],
     "content": null}
    {"task_id": "grep-def-001", "response": {"format": "openai_chat" | "anthropic_messages" | "openai_responses", ...}}

``arguments`` is an object or a JSON string (kept raw and flagged ``invalid_arguments`` when it does not
decode); ``response`` is the raw reply as a provider returned it. Both forms go through the one normalisation
step of :mod:`toolchoice_pipeline.records.calls` (:func:`~toolchoice_pipeline.records.calls.make_call` / :func:`~toolchoice_pipeline.records.calls.normalise_response`), so a replayed reply is
graded exactly like a live one. Calls written into ``content`` become invalid calls there too.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from toolchoice_pipeline.records.calls import Reply, ReplyFormatError, from_openai_message, normalise_response
from toolchoice_pipeline.util.errors import InputError, Problem, display_path, pydantic_problems
from toolchoice_pipeline.util.json_text import json_objects


class ReplayCall(BaseModel):
    """One recorded call: a tool name and its arguments (an object or JSON text)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    arguments: dict[str, Any] | str | None = None

    @field_validator("arguments", mode="before")
    @classmethod
    def _object_or_text(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, (dict, str)):
            raise ValueError(f"must be an object or a JSON string, not {type(value).__name__}")
        return value


class ReplayLine(BaseModel):
    """One line of a replay file: ``tool_calls``/``content``, or instead a raw ``response``."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(min_length=1)
    tool_calls: list[ReplayCall] | None = None
    content: str | None = None
    response: dict[str, Any] | None = None

    def reply(self) -> Reply:
        """The normalised reply; raises :class:`~toolchoice_pipeline.records.calls.ReplyFormatError` for a raw response of unknown shape."""
        if self.response is not None:
            return normalise_response(self.response)
        message = {
            "role": "assistant",
            "content": self.content,
            "tool_calls": [
                {"type": "function", "function": {"name": call.name, "arguments": call.arguments}}
                for call in self.tool_calls or []
            ],
        }
        return from_openai_message(message)


def replay_line(data: dict[str, Any], file: str, line: int) -> ReplayLine:
    """One replay line's object as a :class:`ReplayLine`; raises :class:`InputError` naming file, line and field."""
    try:
        entry = ReplayLine.model_validate(data)
    except ValidationError as exc:
        raise InputError(pydantic_problems(exc, file=file, line=line, model=ReplayLine)) from None
    if entry.response is not None and (entry.tool_calls is not None or entry.content is not None):
        raise InputError(
            Problem(
                file=file,
                line=line,
                field="response",
                message="give either 'response' or 'tool_calls'/'content', not both",
            )
        )
    return entry


def read_replay(path: Path) -> dict[str, Reply]:
    """Every reply of a replay file by task id (uncached; see :func:`load_replay`).

    Collects every problem (missing file, a line that is not UTF-8 or not JSON, unknown or missing fields, an
    unknown ``response`` shape, duplicate task ids) and raises one :class:`InputError` listing them all, each
    naming file, line and field. Lines are read by :func:`~.json_text.json_objects`.
    """
    shown = display_path(path)
    if not path.is_file():
        raise InputError(Problem(file=shown, message="replay file not found"))
    replies: dict[str, Reply] = {}
    first_line: dict[str, int] = {}
    problems: list[Problem] = []
    for number, data in json_objects(path, problems, "a replay line"):
        try:
            entry = replay_line(data, shown, number)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        if entry.task_id in first_line:
            problems.append(
                Problem(
                    file=shown,
                    line=number,
                    field="task_id",
                    message=f"duplicate task id '{entry.task_id}' (first on line {first_line[entry.task_id]})",
                )
            )
            continue
        try:
            reply = entry.reply()
        except ReplyFormatError as exc:
            problems.append(Problem(file=shown, line=number, field="response", message=str(exc)))
            continue
        first_line[entry.task_id] = number
        replies[entry.task_id] = reply
    if problems:
        raise InputError(problems)
    return replies


def load_replay(path: str | Path) -> dict[str, Reply]:
    """Every reply of the replay file at ``path`` by task id, cached by path, modification time and size.

    Returns a new dict on each call; the :class:`~toolchoice_pipeline.records.calls.Reply` values are shared with the cache, so treat them
    as read-only. Raises :class:`InputError` as :func:`read_replay` does.
    """
    resolved = Path(path).resolve()
    try:
        stat = resolved.stat()
    except OSError:
        raise InputError(Problem(file=display_path(path), message="replay file not found")) from None
    return dict(_cached_replay(str(resolved), stat.st_mtime_ns, stat.st_size))


@lru_cache(maxsize=32)
def _cached_replay(path: str, mtime_ns: int, size: int) -> dict[str, Reply]:
    return read_replay(Path(path))
