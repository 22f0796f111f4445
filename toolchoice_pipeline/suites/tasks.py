"""Eval tasks and their JSON Lines file (DESIGN §3).

One task per line::

    {"id": "grep-def-001",
     "messages": [{"role": "user", "content": "Where is load_settings defined?"}],
     "expected": {"tool": "Grep", "arguments": {"pattern": {"regex": "load_settings"}}},
     "tools": null, "tool_results": {"Glob": "src/settings.py"}, "tags": ["search"]}

``expected.tool`` null means no call is expected. ``expected`` itself may be null for an unlabelled task (an
ingested session turn without a label): the judge grades it, but it counts in no share. ``expected.calls``
(optional, used by the ``bfcl`` profile) lists every expected call of a parallel-call task; ``tool`` and
``arguments`` then repeat its first entry. ``expected.any_call`` true (with ``tool`` null) means any call is
right (BFCL's relevance tasks). A tag starting ``flag:`` marks a task kept as its source wrote it although it is
known to be odd (:data:`FLAG_UNPASSABLE`, :data:`FLAG_NO_TOOLS`); ``validate`` accepts exactly that oddity. Unknown
fields are an error, named with file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_serializer

from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.util.errors import InputError, Problem, display_path, pydantic_problems
from toolchoice_pipeline.util.identifiers import check_identifier
from toolchoice_pipeline.util.json_text import json_lines, load_json

FLAG_UNPASSABLE = "flag:unpassable"
"""Tag: the expectation names arguments the tool's schema lacks, so no reply can pass (kept to score as the
source does; ``validate`` accepts those arguments on such a task)."""
FLAG_NO_TOOLS = "flag:no_tools"
"""Tag: the task offers no tools (``tools: []``) and expects no call (``validate`` accepts the empty catalog)."""
FLAG_HALLUCINATED_TOOL = "flag:hallucinated_tool"
"""Tag: the recorded choice (an ingested session's replay line) calls a tool outside the task's catalog."""


class ChatMessage(BaseModel):
    """One message in OpenAI chat format. Provider-specific extra keys (``tool_calls``, ``name``...) are kept."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[Any] | None = None


class ExpectedCall(BaseModel):
    """One expected call: a tool name and its key arguments (matcher grammar, see :mod:`.matchers`)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class Expected(BaseModel):
    """What a good agent calls first: ``tool`` (null = no call) with its key ``arguments``. Strict types:
    ``"any_call": "yes"`` is refused, not read as true."""

    model_config = ConfigDict(extra="forbid", strict=True)

    tool: Annotated[str, Field(min_length=1)] | None
    arguments: dict[str, Any] = Field(default_factory=dict)
    calls: list[ExpectedCall] | None = None
    any_call: bool | None = None

    @model_serializer(mode="wrap")
    def _without_unset_any_call(self, handler):
        # Left out unless set, so tasks written before the field existed keep their fixture_version.
        data = handler(self)
        if data.get("any_call") is None:
            data.pop("any_call", None)
        return data


class Task(BaseModel):
    """One eval item. ``tools`` is an inline catalog for this task only (null = the suite's catalog)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    messages: list[ChatMessage] = Field(min_length=1)
    expected: Expected | None
    tools: list[ToolDefinition] | None = None
    tool_results: dict[str, Any] | None = None
    tags: list[str] = Field(default_factory=list)

    @field_validator("id")
    @classmethod
    def _id_has_no_surrounding_space(cls, value: str) -> str:
        if value != value.strip():
            raise ValueError("task id has leading or trailing whitespace")
        return check_identifier(value, "task id")

    def message_dicts(self) -> list[dict[str, Any]]:
        """The messages as plain dicts in OpenAI chat format (``None`` values dropped except ``content``)."""
        out = []
        for message in self.messages:
            data = message.model_dump(exclude_none=True)
            data.setdefault("content", None)
            out.append(data)
        return out

    def to_json_line(self) -> str:
        """This task as one line of ``tasks.jsonl`` (all fields, key order as in DESIGN §3)."""
        data = {
            "id": self.id,
            "messages": self.message_dicts(),
            # ``tool`` stays even when null (no call expected); other unset fields are left out.
            "expected": None
            if self.expected is None
            else {"tool": self.expected.tool, **self.expected.model_dump(exclude_none=True)},
            "tools": None if self.tools is None else [t.as_dict() for t in self.tools],
            "tool_results": self.tool_results,
            "tags": self.tags,
        }
        return json.dumps(data, ensure_ascii=False)


def parse_task_line(text: str, file: str, line: int) -> Task:
    """Parse one JSONL line into a :class:`Task`; raises :class:`InputError` naming file, line and field."""
    data = load_json(text, file, line)
    if not isinstance(data, dict):
        raise InputError(
            Problem(file=file, line=line, message=f"a task line must be a JSON object, not {_json_kind(data)}")
        )
    try:
        return Task.model_validate(data)
    except ValidationError as exc:
        problems = pydantic_problems(exc, file=file, line=line, model=Task)
        raise InputError([_with_hint(p) for p in problems]) from None


_MISSING_HINTS = {
    "id": 'a stable name such as "grep-def-001"',
    "messages": 'the conversation, e.g. [{"role": "user", "content": "..."}]',
    "expected": '{"tool": "Grep", "arguments": {...}}; {"tool": null} when no call is expected; null for an '
    "unlabelled task",
    "expected.tool": "a tool name, or null when no call is expected",
}


def _with_hint(problem: Problem) -> Problem:
    if problem.message == "required field is missing" and problem.field in _MISSING_HINTS:
        return Problem(
            file=problem.file,
            line=problem.line,
            field=problem.field,
            message=f"required field is missing: give {_MISSING_HINTS[problem.field]}",
        )
    return problem


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "null" if value is None else type(value).__name__


def load_numbered_tasks(path: Path) -> list[tuple[int, Task]]:
    """Read ``tasks.jsonl``: one task per non-blank line, each with its 1-based line number.

    Collects every problem (bad JSON, unknown or missing fields, wrong types, duplicate ids) before raising one
    :class:`InputError` that lists them all.
    """
    tasks, problems = read_numbered_tasks(path)
    if problems:
        raise InputError(problems)
    return tasks


def iter_numbered_tasks(path: Path, problems: list[Problem]) -> Iterator[tuple[int, Task]]:
    """Yield every well-formed task of ``tasks.jsonl`` with its 1-based line number, one at a time; append the
    problems of the other lines to ``problems``.

    Lines are read by :func:`~.json_text.json_lines`: a byte that is not UTF-8 is reported on its line and the
    other lines are still read. A repeated id is a problem on the later line (only the ids are remembered, so
    memory does not grow with the tasks). Raises :class:`InputError` only when the file cannot be read at all.
    """
    shown = display_path(path)
    first_line: dict[str, int] = {}
    for number, text in json_lines(path, problems):
        try:
            task = parse_task_line(text, shown, number)
        except InputError as exc:
            first = not first_line and not problems
            problems.extend(_one_task_per_line_hint(p, text) if first else p for p in exc.problems)
            continue
        if task.id in first_line:
            problems.append(
                Problem(
                    file=shown,
                    line=number,
                    field="id",
                    message=f"duplicate task id '{task.id}' (first on line {first_line[task.id]})",
                )
            )
            continue
        first_line[task.id] = number
        yield number, task


def read_numbered_tasks(path: Path) -> tuple[list[tuple[int, Task]], list[Problem]]:
    """Every well-formed task of ``tasks.jsonl`` with its 1-based line number, and the problems of the others
    (:func:`iter_numbered_tasks` into a list)."""
    problems: list[Problem] = []
    tasks = list(iter_numbered_tasks(path, problems))
    return tasks, problems


def _one_task_per_line_hint(problem: Problem, text: str) -> Problem:
    """The first line's bad-JSON problem, told that a task is one line when the line opens an object that the
    end of the line leaves open (a task pretty-printed over several lines)."""
    if not problem.message.startswith("bad JSON") or not text.lstrip().startswith("{"):
        return problem
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos < len(text.rstrip()):
            return problem
    except ValueError:
        return problem
    return Problem(
        file=problem.file,
        line=problem.line,
        field=problem.field,
        message=f"{problem.message}; the object does not close on this line: write one task per line "
        "(JSON Lines), not one task over several lines",
    )


def write_tasks(path: Path, tasks: list[Task]) -> None:
    """Write tasks as JSON Lines (UTF-8, one task per line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for task in tasks:
            handle.write(task.to_json_line() + "\n")
