"""Judge calibration, checked every run: does the judge have teeth? (DESIGN §5)

Two pieces of evidence:

- **Agreement with labels**: on labelled tasks, the judge's majority verdict per episode against right tool
  (DESIGN §2): accuracy, and Cohen's kappa (agreement beyond chance; Cohen 1960), computed here.
- **The canary session**: a recorded Claude Code session of four turns, one good choice and three bad ones
  (``canary.jsonl`` with ``canary.labels.jsonl``), judged against its own catalog snapshot
  (``canary.catalog.yaml``, the demo catalog), so editing a suite's catalog never moves the yardstick. A judge
  with teeth scores it 0.25 (its TSQ is the mean of the four turns' TSQ). The canary ships with the package
  (:data:`PACKAGED_CANARY`); a data directory may bring its own in ``sessions/`` (:func:`canary_source`).

The check fails, "the judge is toothless", when the canary scores above :data:`MAX_CANARY_TSQ` (0.5), or when
kappa is at most :data:`MIN_KAPPA` (0.2) on at least :data:`MIN_LABELLED` (20) labelled episodes. A judge that
sees only tool names (no descriptions) passes nearly every choice and fails this check; that is its purpose.
A canary at or below 0.5 but not 0.25 (a judge that also fails the good choice) passes with a warning.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import BaseModel

from ..calls import Reply, make_call
from ..catalog import ToolDefinition
from ..config import JudgeConfig, RetryConfig
from ..errors import InputError, Problem, display_path
from ..records import JudgeVote
from ..tasks import Expected
from .polling import EpisodeKey, JudgeBudget, JudgeItem, judge_items, tsq_by_episode

MIN_LABELLED = 20
MIN_KAPPA = 0.2
MAX_CANARY_TSQ = 0.5
CANARY_EXPECTED_TSQ = 0.25

CANARY_SESSION = Path("canary.jsonl")
CANARY_LABELS = Path("canary.labels.jsonl")
CANARY_CATALOG = Path("canary.catalog.yaml")
PACKAGED_CANARY = Path(__file__).resolve().parent / "canary"
"""The canary shipped with the package: the three files above."""
DATA_DIR_CANARY = Path("sessions")
"""Where a data directory's own canary lives (the three files above), used instead of the packaged one."""
CANARY_MODEL = "canary"


class CalibrationResult(BaseModel):
    """The outcome of the calibration check. ``accuracy`` and ``kappa`` are fractions (None when there is no
    labelled episode, or kappa is undefined because both raters used one verdict only); ``reasons`` says why
    the check failed (empty when it passed); ``message`` is one line for logs and Dagster metadata."""

    passed: bool
    n_labelled: int
    accuracy: float | None
    kappa: float | None
    canary_tsq: float | None
    canary_expected_tsq: float = CANARY_EXPECTED_TSQ
    reasons: list[str]
    warnings: list[str] = []
    message: str


def cohen_kappa(pairs: Iterable[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of two binary raters over ``(a, b)`` pairs: (p_o - p_e) / (1 - p_e).

    None when there is no pair, or when chance agreement is 1 (both raters gave one and the same verdict to
    everything), where kappa is undefined.
    """
    items = list(pairs)
    if not items:
        return None
    n = len(items)
    observed = sum(a == b for a, b in items) / n
    a_yes = sum(a for a, _ in items) / n
    b_yes = sum(b for _, b in items) / n
    chance = a_yes * b_yes + (1 - a_yes) * (1 - b_yes)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1 - chance)


def calibrate(majority_verdicts: Mapping[EpisodeKey, bool | None], right_tool: Mapping[EpisodeKey, bool | None],
              canary_tsq: float | None) -> CalibrationResult:
    """Check that the judge has teeth (see the module docstring).

    ``majority_verdicts``: the judge's majority verdict per ``(model, task_id)`` (True = correct; None = no
    majority), e.g. :func:`.polling.majority_verdicts`; ``right_tool``: right tool per episode (None for an
    unlabelled task or an infrastructure error); ``canary_tsq``: :func:`canary_tsq`'s result. Episodes in both
    with a non-None value on each side are the labelled ones.
    """
    pairs = [(bool(right_tool[key]), bool(verdict)) for key, verdict in majority_verdicts.items()
             if verdict is not None and right_tool.get(key) is not None]
    n = len(pairs)
    accuracy = sum(a == b for a, b in pairs) / n if n else None
    # Agreement beyond chance needs both outcomes among the labels: when right tool is the same on every
    # episode (a replay of gold answers, say), kappa is 0 by construction and says nothing about the judge.
    labels_vary = len({label for label, _ in pairs}) > 1
    kappa = cohen_kappa(pairs) if labels_vary else None
    reasons: list[str] = []
    if canary_tsq is None:
        reasons.append("the canary session got no valid judge vote, so the judge's teeth could not be shown")
    elif canary_tsq > MAX_CANARY_TSQ:
        reasons.append(f"the canary session (1 good, 3 bad choices) scored TSQ {canary_tsq:.2f} > "
                       f"{MAX_CANARY_TSQ}: the judge passes choices it should fail (it should score "
                       f"{CANARY_EXPECTED_TSQ}); does it see the tool descriptions?")
    if n >= MIN_LABELLED and kappa is not None and kappa <= MIN_KAPPA:
        reasons.append(f"the judge's majority verdicts agree with right tool no better than chance: Cohen's kappa "
                       f"{kappa:.2f} <= {MIN_KAPPA} on {n} labelled episodes (accuracy {accuracy:.2f})")
    shown_kappa = "n/a" if kappa is None else f"{kappa:.2f}"
    shown_accuracy = "n/a" if accuracy is None else f"{accuracy:.2f}"
    shown_canary = "n/a" if canary_tsq is None else f"{canary_tsq:.2f}"
    figures = (f"canary TSQ {shown_canary} (want {CANARY_EXPECTED_TSQ}), accuracy {shown_accuracy}, "
               f"kappa {shown_kappa} on {n} labelled episodes")
    if n < MIN_LABELLED:
        figures += f" (kappa is checked from {MIN_LABELLED} labelled episodes)"
    elif not labels_vary:
        figures += " (kappa not checked: right tool is the same on every labelled episode)"
    warnings: list[str] = []
    if not reasons and canary_tsq is not None and abs(canary_tsq - CANARY_EXPECTED_TSQ) > 1e-9:
        warnings.append(f"the canary scored TSQ {canary_tsq:.2f}, not {CANARY_EXPECTED_TSQ}: the judge also "
                        "fails the good choice (too harsh) or passes one of the bad ones")
    if reasons:
        message = f"judge calibration failed, the judge is toothless: {'; '.join(reasons)} [{figures}]"
    elif warnings:
        message = f"judge calibration passed, with a warning: {'; '.join(warnings)} [{figures}]"
    else:
        message = f"judge calibration passed: {figures}"
    return CalibrationResult(passed=not reasons, n_labelled=n, accuracy=accuracy, kappa=kappa,
                             canary_tsq=canary_tsq, reasons=reasons, warnings=warnings, message=message)


# --- the canary session ----------------------------------------------------------------------------------

def read_session_turns(path: Path) -> list[tuple[str, int, list[dict[str, Any]], Reply]]:
    """The turns of a Claude Code session: ``(session_id, turn, conversation, first-step reply)`` for each user
    prompt with a recorded reply, read and sanitised by the ingest parser
    (:func:`toolchoice_pipeline.ingest.claude_code.read_claude_code`), so they are exactly what an ingested
    session's tasks hold. Raises :class:`InputError`.
    """
    from ..ingest.claude_code import SeenRecords, read_claude_code
    from ..ingest.conversation import DEFAULT_MAX_CONTEXT_CHARS
    from ..ingest.jsonl import Warnings, check_readable
    from ..ingest.sanitise import Sanitiser
    from ..ingest.turns import ToolLedger

    shown = display_path(path)
    problem = check_readable(path, shown)
    if problem is not None:
        raise InputError(problem)
    turns = read_claude_code(path, shown=shown, file_index=0, sanitiser=Sanitiser(), ledger=ToolLedger(),
                             seen=SeenRecords(), warnings=Warnings(), max_context_chars=DEFAULT_MAX_CONTEXT_CHARS)
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
    packaged one); ``catalog`` defaults to the snapshot ``canary.catalog.yaml`` beside it. The
    pipeline may equally judge the canary ingested as a suite (``toolchoice ingest claude-code``): the items of
    its replayed episodes (:func:`.polling.episode_items`) are the same. Raises :class:`InputError` when the session or the catalog is missing or malformed.
    """
    if catalog is None:
        from ..catalog_files import load_catalog_file

        catalog = load_catalog_file(canary_source(data_dir) / CANARY_CATALOG)
    session = canary_source(data_dir) / CANARY_SESSION
    items = [JudgeItem(model=CANARY_MODEL, task_id=f"canary-{turn}", conversation=conversation, catalog=catalog,
                       reply=reply)
             for _, turn, conversation, reply in read_session_turns(session)]
    if not items:
        raise InputError(Problem(file=display_path(session), message="no user turn found"))
    return items


def canary_labels(data_dir: Path) -> dict[str, Expected]:
    """The canary's labels by task id (``canary-<turn>``): what a good agent calls first at each turn.

    Read with the ingest's labels reader (:func:`toolchoice_pipeline.ingest.labels.load_labels`); raises
    :class:`InputError` naming file, line and field for a bad label.
    """
    from ..ingest.labels import load_labels

    source = canary_source(data_dir)
    labels = load_labels(source / CANARY_LABELS, session_optional=True)
    found: dict[str, Expected] = {}
    for session, turn, _, _ in read_session_turns(source / CANARY_SESSION):
        label = labels.take(session, None, turn)
        if label is not None:
            found[f"canary-{turn}"] = label[0]
    return found


def canary_score(votes: Iterable[JudgeVote]) -> float | None:
    """The canary's TSQ: the mean of its turns' TSQ (turns without a valid vote left out); None if none has one."""
    scores = [s for s in tsq_by_episode(votes).values() if s is not None]
    return sum(scores) / len(scores) if scores else None


async def judge_canary(items: list[JudgeItem], judge: JudgeConfig, *, retries: RetryConfig,
                       budget: JudgeBudget | None = None) -> list[JudgeVote]:
    """ChainPoll votes on the canary's items (store them like any other votes)."""
    return await judge_items(items, judge, retries=retries, budget=budget)


def canary_tsq(items: list[JudgeItem], judge: JudgeConfig, retries: RetryConfig, *,
               budget: JudgeBudget | None = None) -> float | None:
    """Judge the canary ``items`` (from :func:`canary_turns`, or ingested turns) and return its TSQ."""
    return canary_score(asyncio.run(judge_canary(items, judge, retries=retries, budget=budget)))
