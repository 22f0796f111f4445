"""Labels for ingested turns: what a good agent would have called first, so a session counts in the shares.

A labels file is JSON Lines, one label per line::

    {"session": "c45af7b1-...", "turn": 0, "expected": {"tool": "Read", "arguments": {"file_path": "a.py"}}}

- ``session``: the session id (Claude Code ``sessionId``, Codex ``session_meta.id``, OpenTelemetry
  ``gen_ai.conversation.id`` or trace id); may be left out when one file holding one session is ingested.
- ``agent``: the subagent's ``agentId``, for a turn of a subagent file (optional).
- ``turn``: the 0-based index of the user prompt in that session (or subagent).
- ``expected``: a task's ``expected`` object (DESIGN §3: ``tool``, ``arguments`` with matchers, ``calls``).

A label naming no ingested turn is an error (file, line, field), as is a label given twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolchoice_pipeline.suites.tasks import Expected
from toolchoice_pipeline.util.errors import InputError, Problem, display_path, pydantic_problems
from toolchoice_pipeline.util.json_text import json_objects


class LabelLine(BaseModel):
    """One line of a labels file."""

    model_config = ConfigDict(extra="forbid")

    session: str | None = None
    agent: str | None = None
    turn: int = Field(ge=0, strict=True)  # strict: `true` is not turn 1
    expected: Expected


@dataclass
class Label:
    entry: LabelLine
    line: int
    used: bool = False


class Labels:
    """The labels of one ingest by ``(session, agent, turn)``; ``session`` None matches any session."""

    def __init__(self, file: str, labels: list[Label]):
        self.file = file
        self._by_key = {(label.entry.session, label.entry.agent, label.entry.turn): label for label in labels}

    def __len__(self) -> int:
        return len(self._by_key)

    def take(self, session: str, agent: str | None, turn: int) -> tuple[Expected, int] | None:
        """The label of a turn (marking it used) with its line, or None."""
        label = self._by_key.get((session, agent, turn)) or self._by_key.get((None, agent, turn))
        if label is None:
            return None
        label.used = True
        return label.entry.expected, label.line

    def unused_problems(self, turns: dict[tuple[str, str | None], int]) -> list[Problem]:
        """A problem for each label that named no ingested turn; ``turns`` counts the turns of each session."""
        problems = []
        for label in sorted(self._by_key.values(), key=lambda item: item.line):
            if label.used:
                continue
            entry = label.entry
            matching = [
                count
                for (session, agent), count in turns.items()
                if entry.session in (None, session) and agent == entry.agent
            ]
            if not matching:
                who = f"session '{entry.session}'" if entry.session else "the ingested file"
                field = "agent" if entry.agent and entry.session is None else "session"
                message = (
                    f"no ingested {who}"
                    + (f" with agent '{entry.agent}'" if entry.agent else "")
                    + f" (sessions: {', '.join(sorted({s for s, _ in turns})) or 'none'})"
                )
                problems.append(Problem(file=self.file, line=label.line, field=field, message=message))
            else:
                count = max(matching)
                has = f"{count} turns (0 to {count - 1})" if count else "no user prompts"
                problems.append(
                    Problem(
                        file=self.file,
                        line=label.line,
                        field="turn",
                        message=f"no turn {entry.turn}: the session has {has}",
                    )
                )
        return problems

    def sessionless_problems(self, sessions: set[str]) -> list[Problem]:
        """A problem for each label without ``session`` when the ingested files hold several sessions (it
        would apply to that turn of every session)."""
        if len(sessions) < 2:
            return []
        return [
            Problem(
                file=self.file,
                line=label.line,
                field="session",
                message=f"required: the ingested files hold {len(sessions)} sessions "
                f"({', '.join(sorted(sessions)[:5])}{', ...' if len(sessions) > 5 else ''})",
            )
            for label in sorted(self._by_key.values(), key=lambda item: item.line)
            if label.entry.session is None
        ]


def load_labels(path: Path, *, session_optional: bool) -> Labels:
    """Read a labels file; raises :class:`InputError` listing every problem (file, line, field)."""
    shown = display_path(path)
    if not path.is_file():
        raise InputError(Problem(file=shown, message="labels file not found"))
    labels: list[Label] = []
    problems: list[Problem] = []
    first: dict[tuple, int] = {}
    for number, data in json_objects(path, problems, "a label"):
        try:
            entry = LabelLine.model_validate(data)
        except ValidationError as exc:
            problems.extend(pydantic_problems(exc, file=shown, line=number, model=LabelLine))
            continue
        if entry.session is None and not session_optional:
            problems.append(
                Problem(
                    file=shown, line=number, field="session", message="required when more than one file is ingested"
                )
            )
            continue
        key = (entry.session, entry.agent, entry.turn)
        if key in first:
            problems.append(
                Problem(
                    file=shown,
                    line=number,
                    field="turn",
                    message=f"turn {entry.turn} is labelled twice (first on line {first[key]})",
                )
            )
            continue
        first[key] = number
        labels.append(Label(entry=entry, line=number))
    if problems:
        raise InputError(problems)
    return Labels(shown, labels)
