"""The canary session the judge calibration scores every run (DESIGN §5): a recorded Claude Code session of four
turns, one good choice and three bad ones, read with the ingest parser so its turns are exactly what an ingested
session's tasks hold, with its labels and its own catalog snapshot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolchoice_pipeline.ingest.claude_code import SeenRecords, read_claude_code
from toolchoice_pipeline.ingest.conversation import DEFAULT_MAX_CONTEXT_CHARS
from toolchoice_pipeline.ingest.jsonl import Warnings, check_readable
from toolchoice_pipeline.ingest.labels import load_labels
from toolchoice_pipeline.ingest.turns import ToolLedger
from toolchoice_pipeline.judge.calibration import CANARY_MODEL
from toolchoice_pipeline.judge.polling import JudgeItem
from toolchoice_pipeline.records.calls import Reply, make_call
from toolchoice_pipeline.scoring.matching import match_reply
from toolchoice_pipeline.suites import read_once
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.catalog_files import load_catalog_file
from toolchoice_pipeline.suites.tasks import Expected
from toolchoice_pipeline.util.errors import InputError, Problem, display_path
from toolchoice_pipeline.util.sanitise import Sanitiser

CANARY_SESSION = Path("canary.jsonl")
CANARY_LABELS = Path("canary.labels.jsonl")
CANARY_CATALOG = Path("canary.catalog.yaml")
PACKAGED_CANARY = Path(__file__).resolve().parent / "canary_session"
"""The canary shipped with the package: the three files above."""
DATA_DIR_CANARY = Path("sessions")
"""Where a data directory's own canary lives (the three files above), used instead of the packaged one."""


SessionTurn = tuple[str, int, list[dict[str, Any]], Reply]


def read_session_turns(path: Path) -> list[SessionTurn]:
    """The turns of a Claude Code session: ``(session_id, turn, conversation, first-step reply)`` for each user
    prompt with a recorded reply, read and sanitised by the ingest parser
    (:func:`toolchoice_pipeline.ingest.claude_code.read_claude_code`), so they are exactly what an ingested
    session's tasks hold. While a ``toolchoice run`` lasts (:mod:`toolchoice_pipeline.suites.read_once`) the
    session is parsed once (judging the canary and deriving its expected score both need it).
    Raises :class:`InputError`.
    """
    turns = read_once.held("canary_session", str(path))
    if turns is None:
        files = read_once.signature([path])
        turns = read_once.hold("canary_session", str(path), files, _parse_session_turns(path))
    return turns


def _parse_session_turns(path: Path) -> list[SessionTurn]:
    shown = display_path(path)
    problem = check_readable(path, shown)
    if problem is not None:
        raise InputError(problem)
    turns = read_claude_code(
        path,
        shown=shown,
        file_index=0,
        sanitiser=Sanitiser(),
        ledger=ToolLedger(),
        seen=SeenRecords(),
        warnings=Warnings(),
        max_context_chars=DEFAULT_MAX_CONTEXT_CHARS,
    )
    out = []
    for turn in turns:
        if turn.first_step is None:
            continue
        calls = [make_call(call.name, call.arguments, call.id) for call in turn.first_step.calls]
        out.append((turn.session_id, turn.index, turn.messages, Reply(text=turn.first_step.text, calls=calls)))
    return out


def canary_source(data_dir: Path) -> Path:
    """The directory the canary is read from: ``<data_dir>/sessions`` when it holds ``canary.jsonl`` (the data
    directory's own canary, with its labels and catalog beside it), else :data:`PACKAGED_CANARY`."""
    own = Path(data_dir) / DATA_DIR_CANARY
    return own if (own / CANARY_SESSION).is_file() else PACKAGED_CANARY


def describe_canary(data_dir: Path) -> str:
    """One line for ``toolchoice validate``: which canary the judge calibration will use."""
    source = canary_source(data_dir)
    whose = "the packaged canary" if source == PACKAGED_CANARY else "the data directory's own canary"
    return f"judge canary {display_path(source / CANARY_SESSION)} ({whose})"


def canary_turns(data_dir: Path, catalog: list[ToolDefinition] | None = None) -> list[JudgeItem]:
    """The canary session's judge inputs, one per user turn (task ids ``canary-0``... under model ``canary``).

    The session is read from :func:`canary_source` (``data_dir``'s own ``sessions/canary.jsonl``, else the
    packaged one); ``catalog`` defaults to the snapshot ``canary.catalog.yaml`` beside it. The pipeline may
    equally judge the canary ingested as a suite (``toolchoice ingest claude-code``): the items of its replayed
    episodes (:func:`toolchoice_pipeline.judge.polling.episode_items`) are the same. Raises :class:`InputError`
    when the session or the catalog is missing or malformed.
    """
    source = canary_source(data_dir)
    if catalog is None:
        catalog = load_catalog_file(source / CANARY_CATALOG)
    session = source / CANARY_SESSION
    items = [
        JudgeItem(model=CANARY_MODEL, task_id=f"canary-{turn}", conversation=conversation, catalog=catalog, reply=reply)
        for _, turn, conversation, reply in read_session_turns(session)
    ]
    if not items:
        raise InputError(Problem(file=display_path(session), message="no user turn found"))
    return items


def canary_problem(data_dir: Path) -> str | None:
    """Why the canary session of ``data_dir`` cannot be read (its first problem, one line), or None."""
    try:
        canary_turns(data_dir)
    except InputError as exc:
        return str(exc.problems[0])
    return None


def canary_labels(data_dir: Path) -> dict[str, Expected]:
    """The canary's labels by task id (``canary-<turn>``): what a good agent calls first at each turn.

    Read with the ingest's labels reader (:func:`toolchoice_pipeline.ingest.labels.load_labels`) from
    :func:`canary_source`; raises :class:`InputError` naming file, line and field for a bad label.
    """
    source = canary_source(data_dir)
    labels = load_labels(source / CANARY_LABELS, session_optional=True)
    found: dict[str, Expected] = {}
    for session, turn, _, _ in read_session_turns(source / CANARY_SESSION):
        label = labels.take(session, None, turn)
        if label is not None:
            found[f"canary-{turn}"] = label[0]
    return found


def canary_expected_tsq(data_dir: Path) -> float | None:
    """The canary's TSQ from a judge with teeth: the share of its turns whose recorded first step is the right tool
    by the canary's labels (:func:`canary_labels`; right tool of
    :func:`~toolchoice_pipeline.scoring.matching.match_reply`), 0.25 for the packaged canary (one good choice in
    four turns). None when a turn has no label or the canary cannot be read (the judge calibration then says so
    through :func:`canary_problem`, or does not check the expected score)."""
    try:
        items = canary_turns(data_dir)
        labels = canary_labels(data_dir)
    except InputError:
        return None
    if any(item.task_id not in labels for item in items):
        return None
    right = [match_reply(labels[item.task_id], item.reply, item.catalog, "key_args").right_tool for item in items]
    return sum(right) / len(right)
