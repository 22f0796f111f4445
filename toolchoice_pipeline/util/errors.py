"""Errors for bad input: every problem names the file, the line (for JSON Lines) and the field.

A :class:`Problem` renders as one line, ``<file>:<line>: <field>: <message>`` (the line part is left out when
it is not known, e.g. for a live JSON dump; the field part when the whole line or file is wrong). :class:`InputError`
carries one or more problems; the CLI prints each on its own line and exits with code 2.
"""

from __future__ import annotations

import difflib
import json
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError
    from pydantic_core import ErrorDetails


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one input file."""

    file: str
    message: str
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class InputError(Exception):
    """Bad input (a file, a flag, a configuration). ``problems`` lists every problem found, in file order."""

    def __init__(self, problems: list[Problem] | Problem | str):
        if isinstance(problems, str):
            problems = [Problem(file="<input>", message=problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def display_path(path: str | Path) -> str:
    """The path as the user would recognise it: relative to the working directory when inside it; a URL
    (``s3://bucket/key``, an object store's path) as it is."""
    if "://" in str(path):
        return str(path)
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)
    except (RuntimeError, OSError):  # a symlink loop on the way (RuntimeError before Python 3.13): not resolved
        return str(p)


def field_path(parts: tuple | list) -> str:
    """A field path as users read it: ``messages[0].role``, ``[2].parameters``, ``models[1].params.api_key``."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part != "":
            text += f".{part}" if text else str(part)
    return text


# Pydantic adds a union member's tag to the error location ("str", "list[any]", "function-after[...]"...).
_UNION_TAG = re.compile(r"^(str|int|float|bool|bytes|none|[a-z-]+\[.*\])$")


def validation_errors(exc: ValidationError | list[ErrorDetails], model: type | None = None) -> list[tuple[tuple, str]]:
    """``(location, message)`` for each problem of a ``pydantic.ValidationError``, worded for users.

    ``exc`` is the error or its ``errors()`` list. Union-member tags are dropped from locations and the errors
    they split are joined ("a valid string or a valid list"); an unknown field lists the allowed ones (and
    the closest, when it looks misspelt) if ``model`` (the validated pydantic model class) is given; other
    messages end with the value found.
    """
    errors = exc.errors() if hasattr(exc, "errors") else exc
    merged: dict[tuple, list[str]] = {}
    for err in errors:
        loc = tuple(part for part in err["loc"] if not (isinstance(part, str) and _UNION_TAG.match(part)))
        kind = err["type"]
        if kind == "extra_forbidden":
            message = _unknown_field(model, loc)
        elif kind == "missing":
            message = "required field is missing"
        else:
            message = err["msg"]
            if kind == "value_error" and message.startswith("Value error, "):
                message = message[len("Value error, ") :]
            elif kind not in {"value_error", "assertion_error"}:
                message += f" (got {_shown_value(err.get('input'))})"
        if loc in merged:
            if message.startswith("Input should be ") and merged[loc][-1].startswith("Input should be "):
                merged[loc][-1] = merged[loc][-1].split(" (got ")[0] + " or " + message[len("Input should be ") :]
            elif message not in merged[loc]:
                merged[loc].append(message)
        else:
            merged[loc] = [message]
    return [(loc, message) for loc, messages in merged.items() for message in messages]


def pydantic_problems(
    exc: ValidationError | list[ErrorDetails],
    file: str,
    line: int | None = None,
    prefix: str = "",
    model: type | None = None,
) -> list[Problem]:
    """Turn a ``pydantic.ValidationError`` into problems, one per error, with field paths like ``tools[0].name``.

    ``prefix`` is put before every field path; ``model`` (the validated class) lets an unknown field list the
    allowed ones (see :func:`validation_errors`).
    """
    problems = []
    for loc, message in validation_errors(exc, model):
        where = field_path(((prefix,) if prefix else ()) + loc)
        problems.append(Problem(file=file, line=line, field=where or None, message=message))
    return problems


# Names other formats use for one of our fields (MCP's inputSchema, Anthropic's input_schema...).
_ALIASES = {
    "inputSchema": "parameters",
    "input_schema": "parameters",
    "args": "arguments",
    "input": "arguments",
    "name": "tool",
    "function": "tool",
    "tool_name": "tool",
}


def _unknown_field(model: type | None, loc: tuple) -> str:
    name = loc[-1] if loc else ""
    allowed = _fields_at(model, loc[:-1]) if model is not None else None
    if not allowed:
        return "unknown field"
    close = (
        [_ALIASES[name]]
        if _ALIASES.get(name) in allowed
        else difflib.get_close_matches(str(name), allowed, n=1, cutoff=0.6)
    )
    hint = f"did you mean '{close[0]}'? " if close else ""
    return f"unknown field ({hint}allowed: {', '.join(allowed)})"


def _fields_at(model: type, loc: tuple) -> list[str] | None:
    """Field names of the pydantic model found at ``loc`` inside ``model`` (None when it cannot be told)."""
    from pydantic import BaseModel

    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        target = _model_in(current)
        if target is None or part not in target.model_fields:
            return None
        current = target.model_fields[part].annotation
    target = _model_in(current)
    return list(target.model_fields) if target is not None and issubclass(target, BaseModel) else None


def _model_in(annotation: Any) -> Any:
    """The pydantic model inside an annotation such as ``Expected``, ``list[ToolDefinition] | None``."""
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _shown_value(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
