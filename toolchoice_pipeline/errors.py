"""Errors for bad input: every problem names the file, the line (for JSON Lines) and the field.

A :class:`Problem` renders as one line, ``<file>:<line>: <field>: <message>`` (the line part is left out for
files that are not line-based, the field part when the whole line or file is wrong). :class:`InputError`
carries one or more problems; the CLI prints each on its own line and exits with code 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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
    """The path as the user would recognise it: relative to the working directory when inside it."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def pydantic_problems(exc, file: str, line: int | None = None, prefix: str = "") -> list[Problem]:
    """Turn a ``pydantic.ValidationError`` into problems, one per error, with dotted field paths."""
    problems = []
    for err in exc.errors():
        loc = ".".join(str(part) for part in (prefix, *err["loc"]) if part != "")
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "missing":
            msg = "required field is missing"
        problems.append(Problem(file=file, line=line, field=loc or None, message=msg))
    return problems
