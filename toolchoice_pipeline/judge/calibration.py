"""Judge calibration, checked every run: does the judge have teeth? (DESIGN §5)

Two pieces of evidence:

- **Agreement with labels**: on labelled tasks, the judge's majority verdict per episode against right tool
  (DESIGN §2): accuracy, and Cohen's kappa (agreement beyond chance; Cohen 1960), computed here.
- **The canary session**: a recorded Claude Code session of four turns, one good choice and three bad ones
  (``data/sessions/canary.jsonl`` with ``canary.labels.jsonl``), judged against the demo suite's catalog. A
  judge with teeth scores it 0.25 (its TSQ is the mean of the four turns' TSQ).

The check fails, "the judge is toothless", when the canary scores above :data:`MAX_CANARY_TSQ` (0.5), or when
kappa is at most :data:`MIN_KAPPA` (0.2) on at least :data:`MIN_LABELLED` (20) labelled episodes. A judge that
sees only tool names (no descriptions) passes nearly every choice and fails this check; that is its purpose.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import BaseModel

from ..calls import ToolCall, from_anthropic_content
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

CANARY_SESSION = Path("sessions/canary.jsonl")
CANARY_LABELS = Path("sessions/canary.labels.jsonl")
CANARY_CATALOG = Path("suites/coding_agent/catalog.yaml")
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
    kappa = cohen_kappa(pairs)
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
    message = (f"judge calibration failed, the judge is toothless: {'; '.join(reasons)} [{figures}]" if reasons
               else f"judge calibration passed: {figures}")
    return CalibrationResult(passed=not reasons, n_labelled=n, accuracy=accuracy, kappa=kappa,
                             canary_tsq=canary_tsq, reasons=reasons, message=message)


# --- the canary session ----------------------------------------------------------------------------------

def _read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    shown = display_path(path)
    if not path.is_file():
        raise InputError(Problem(file=shown, message="file not found"))
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(Problem(file=shown, line=number, message=f"bad JSON: {exc.msg}")) from None
        if not isinstance(value, dict):
            raise InputError(Problem(file=shown, line=number, message="a line must be a JSON object"))
        rows.append((number, value))
    return rows


def _tool_result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _assistant_message(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    reply = from_anthropic_content(blocks)
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    calls = [_openai_call(call) for call in reply.calls if not call.is_invalid_call]
    if calls:
        message["tool_calls"] = calls
    return message


def _openai_call(call: ToolCall) -> dict[str, Any]:
    arguments = json.dumps(call.arguments, ensure_ascii=False) if call.arguments is not None else call.raw_arguments
    return {"id": call.id or "", "type": "function", "function": {"name": call.name or "", "arguments": arguments}}


def read_session_turns(path: Path) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """A minimal Claude Code transcript reader: for each user prompt, ``(conversation, reply_blocks)``.

    ``conversation`` is every message before the prompt in OpenAI chat format (prompts, assistant messages
    with their ``tool_calls``, tool results as ``tool`` messages) plus the prompt; ``reply_blocks`` are the
    content blocks of the first assistant message after it (lines sharing one ``message.id`` are joined).
    Meta lines, compaction summaries and side chains are skipped. The full parser is
    :mod:`toolchoice_pipeline.ingest`; this reader only needs the canary. Raises :class:`InputError`.
    """
    history: list[dict[str, Any]] = []
    turns: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
    pending: list[dict[str, Any]] | None = None  # the conversation of the turn whose reply is being read
    blocks: list[dict[str, Any]] = []
    message_id: str | None = None

    def flush() -> None:
        nonlocal blocks, message_id, pending
        if blocks:
            if pending is not None:
                turns.append((pending, list(blocks)))
                pending = None
            history.append(_assistant_message(blocks))
        blocks, message_id = [], None

    for _, record in _read_jsonl(path):
        if record.get("isSidechain") or record.get("isMeta") or record.get("isCompactSummary"):
            continue
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        if record.get("type") == "assistant":
            if message.get("id") != message_id:
                flush()
                message_id = message.get("id")
            content = message.get("content")
            blocks.extend(b for b in (content if isinstance(content, list) else [{"type": "text", "text": content}])
                          if isinstance(b, dict))
            continue
        if record.get("type") != "user":
            continue
        flush()
        content = message.get("content")
        results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] \
            if isinstance(content, list) else []
        if results:
            for block in results:
                history.append({"role": "tool", "tool_call_id": block.get("tool_use_id"),
                                "content": _tool_result_text(block.get("content"))})
            continue
        text = content if isinstance(content, str) else _tool_result_text(content)
        if text.strip():
            history.append({"role": "user", "content": text})
            pending = list(history)
    flush()
    return turns


def canary_turns(data_dir: Path, catalog: list[ToolDefinition] | None = None) -> list[JudgeItem]:
    """The canary session's judge inputs, one per user turn (task ids ``canary-0``... under model ``canary``).

    ``catalog`` defaults to the demo suite's ``suites/coding_agent/catalog.yaml`` under ``data_dir``.
    Raises :class:`InputError` when the session or the catalog is missing or malformed.
    """
    if catalog is None:
        from ..catalog_files import load_catalog_file

        catalog = load_catalog_file(data_dir / CANARY_CATALOG)
    items = []
    for index, (conversation, blocks) in enumerate(read_session_turns(data_dir / CANARY_SESSION)):
        items.append(JudgeItem(model=CANARY_MODEL, task_id=f"canary-{index}", conversation=conversation,
                               catalog=catalog, reply=from_anthropic_content(blocks)))
    if not items:
        raise InputError(Problem(file=display_path(data_dir / CANARY_SESSION), message="no user turn found"))
    return items


def canary_labels(data_dir: Path) -> dict[str, Expected]:
    """The canary's labels by task id (``canary-<turn>``): what a good agent calls first at each turn."""
    path = data_dir / CANARY_LABELS
    labels: dict[str, Expected] = {}
    for number, row in _read_jsonl(path):
        try:
            labels[f"canary-{int(row['turn'])}"] = Expected.model_validate(row["expected"])
        except Exception as exc:  # noqa: BLE001 - any malformed label line is bad input, named by line
            raise InputError(Problem(file=display_path(path), line=number, field="expected",
                                     message=f"not a label: {exc}")) from None
    return labels


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
