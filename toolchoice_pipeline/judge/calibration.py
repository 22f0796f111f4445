"""Judge calibration, checked every run: does the judge have teeth? (DESIGN §5)

Two pieces of evidence:

- **Agreement with labels**: on labelled tasks, the judge's majority verdict per episode against right tool
  (DESIGN §2): accuracy, and Cohen's kappa (agreement beyond chance; Cohen 1960), computed here.
- **The canary session**: a recorded Claude Code session of four turns, one good choice and three bad ones
  (``canary.jsonl`` with ``canary.labels.jsonl``, shipped in ``toolchoice_pipeline/ingest/canary_session/``,
  read by :mod:`toolchoice_pipeline.ingest.canary`),
  judged against its own catalog snapshot (``canary.catalog.yaml``, the demo catalog), so editing a suite's
  catalog never moves the yardstick. A judge with teeth scores it what its labels say (0.25 here: the share of
  turns whose recorded choice is the right tool, derived by :func:`toolchoice_pipeline.ingest.canary.canary_expected_tsq`;
  its TSQ is the mean of the four turns' TSQ). The canary ships with the package; a data directory may bring its
  own in ``sessions/``.

Every run judges the canary in the ``judge_votes`` asset, under the run's judge budget (its votes are stored
with the others, model :data:`CANARY_MODEL`, and its cost counts as judge cost), and stores the outcome in
``scores.json`` (:func:`release_calibration`). A failed calibration fails the run (exit code 4) and blocks
promotion to baseline, unless ``judge.calibration: warn``. A missing canary session fails it too, saying so.

The check fails, "the judge is toothless", when the canary scores above its ceiling (:func:`canary_ceiling`:
:data:`MAX_CANARY_TSQ`, 0.5, unless the canary's labels expect that much or more), or when
kappa is at most :data:`MIN_KAPPA` (0.2) on at least :data:`MIN_LABELLED` (20) labelled episodes. A judge that
sees only tool names (no descriptions) passes nearly every choice and fails this check; that is its purpose.
A canary at or below 0.5 but not its expected score (a judge that also fails the good choice) passes with a
warning.

**Per judged model** (issue 30): the same agreement, on each model's own labelled episodes
(:func:`model_agreement`). Pooled over models, built-in baselines the judge reads well can hide a model it
cannot: the check also fails when any model's kappa is at most :data:`MIN_KAPPA` on at least
:data:`MIN_LABELLED` of its labelled episodes, naming the model (its TSQ is not to be trusted). The canary is a
fixed session, not a model's episodes: it is the judge's, shown once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from toolchoice_pipeline.execution.rate_limits import RateLimiters
from toolchoice_pipeline.judge.polling import EpisodeKey, JudgeBudget, JudgeItem, judge_items, tsq_by_episode
from toolchoice_pipeline.records.episodes import JudgeVote
from toolchoice_pipeline.suites.config import JudgeConfig, RetryConfig

MIN_LABELLED = 20
MIN_KAPPA = 0.2
MAX_CANARY_TSQ = 0.5
CANARY_MODEL = "canary"  # the model name the canary's judge votes are stored under


class ModelAgreement(BaseModel):
    """The judge's agreement with right tool on one model's labelled episodes: ``kappa``/``accuracy`` fractions
    (None as in :class:`CalibrationResult`), ``n_labelled`` episodes; ``passed`` False when kappa is at most
    :data:`MIN_KAPPA` on at least :data:`MIN_LABELLED` episodes."""

    kappa: float | None
    accuracy: float | None
    n_labelled: int
    passed: bool


class CalibrationResult(BaseModel):
    """The outcome of the calibration check. ``accuracy`` and ``kappa`` are fractions (None when there is no
    labelled episode, or kappa is undefined because both raters used one verdict only); ``reasons`` says why
    the check failed (empty when it passed); ``message`` is one line for logs and Dagster metadata;
    ``per_model`` the agreement per judged model (:func:`model_agreement`); ``canary_expected_tsq`` what a judge
    with teeth scores the canary (from its labels; None when not known)."""

    passed: bool
    n_labelled: int
    accuracy: float | None
    kappa: float | None
    canary_tsq: float | None
    canary_expected_tsq: float | None = None
    reasons: list[str]
    warnings: list[str] = []
    message: str
    per_model: dict[str, ModelAgreement] = {}


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


def _agreement(pairs: list[tuple[bool, bool]]) -> ModelAgreement:
    """Agreement of ``(right tool, verdict)`` pairs; kappa only when the labels vary (see :func:`calibrate`)."""
    n = len(pairs)
    accuracy = sum(a == b for a, b in pairs) / n if n else None
    kappa = cohen_kappa(pairs) if len({label for label, _ in pairs}) > 1 else None
    passed = not (n >= MIN_LABELLED and kappa is not None and kappa <= MIN_KAPPA)
    return ModelAgreement(kappa=kappa, accuracy=accuracy, n_labelled=n, passed=passed)


def _labelled_pairs(
    majority_verdicts: Mapping[EpisodeKey, bool | None], right_tool: Mapping[EpisodeKey, bool | None]
) -> dict[EpisodeKey, tuple[bool, bool]]:
    return {
        key: (bool(right_tool[key]), bool(verdict))
        for key, verdict in majority_verdicts.items()
        if verdict is not None and right_tool.get(key) is not None
    }


def model_agreement(
    majority_verdicts: Mapping[EpisodeKey, bool | None], right_tool: Mapping[EpisodeKey, bool | None]
) -> dict[str, ModelAgreement]:
    """Per judged model (the first part of the ``(model, task_id)`` keys, sorted), the judge's agreement with
    right tool on its labelled episodes (arguments as in :func:`calibrate`)."""
    by_model: dict[str, list[tuple[bool, bool]]] = {}
    for (model, *_), pair in _labelled_pairs(majority_verdicts, right_tool).items():
        by_model.setdefault(model, []).append(pair)
    return {model: _agreement(pairs) for model, pairs in sorted(by_model.items())}


def canary_ceiling(expected_tsq: float | None) -> float:
    """The highest canary TSQ a judge with teeth may score: :data:`MAX_CANARY_TSQ` (0.5), or, for a canary whose
    labels expect 0.5 or more (a data directory's own session with more good choices than bad), halfway from the
    expected score to 1.0, the score of a judge that passes every choice."""
    if expected_tsq is None or expected_tsq < MAX_CANARY_TSQ:
        return MAX_CANARY_TSQ
    return (expected_tsq + 1.0) / 2


def calibrate(
    majority_verdicts: Mapping[EpisodeKey, bool | None],
    right_tool: Mapping[EpisodeKey, bool | None],
    canary_tsq: float | None,
    *,
    canary_missing: str | None = None,
    canary_expected_tsq: float | None = None,
) -> CalibrationResult:
    """Check that the judge has teeth (see the module docstring).

    ``majority_verdicts``: the judge's majority verdict per ``(model, task_id)`` (True = correct; None = no
    majority), e.g. :func:`.polling.majority_verdicts`; ``right_tool``: right tool per episode (None for an
    unlabelled task or an infrastructure error); ``canary_tsq``: :func:`canary_tsq`'s result;
    ``canary_missing``: why there is no canary session to judge (then the check fails saying so, plainly: the
    judge's teeth were not checked, which is not the same as a toothless judge); ``canary_expected_tsq``: the
    canary's score from a judge with teeth, from its labels
    (:func:`toolchoice_pipeline.ingest.canary.canary_expected_tsq`): a different score passes with a warning
    (None: not checked). Episodes in both with a non-None value on each side are the labelled ones.
    """
    pairs = list(_labelled_pairs(majority_verdicts, right_tool).values())
    n = len(pairs)
    accuracy = sum(a == b for a, b in pairs) / n if n else None
    # Agreement beyond chance needs both outcomes among the labels: when right tool is the same on every
    # episode (a replay of gold answers, say), kappa is 0 by construction and says nothing about the judge.
    labels_vary = len({label for label, _ in pairs}) > 1
    kappa = cohen_kappa(pairs) if labels_vary else None
    reasons: list[str] = []
    unchecked: list[str] = []  # reasons that say the teeth could not be checked (not that there are none)
    if canary_missing is not None:
        unchecked.append(
            f"there is no canary session to judge ({canary_missing}), so the judge's teeth were not checked"
        )
    elif canary_tsq is None:
        unchecked.append("the canary session got no valid judge vote, so the judge's teeth could not be shown")
    elif canary_tsq > canary_ceiling(canary_expected_tsq):
        should = "" if canary_expected_tsq is None else f" (it should score {canary_expected_tsq:.2f})"
        reasons.append(
            f"the canary session scored TSQ {canary_tsq:.2f} > {canary_ceiling(canary_expected_tsq):g}: the judge "
            f"passes choices it should fail{should}; does it see the tool descriptions?"
        )
    if n >= MIN_LABELLED and kappa is not None and kappa <= MIN_KAPPA:
        reasons.append(
            f"the judge's majority verdicts agree with right tool no better than chance: Cohen's kappa "
            f"{kappa:.2f} <= {MIN_KAPPA} on {n} labelled episodes (accuracy {accuracy:.2f})"
        )
    per_model = model_agreement(majority_verdicts, right_tool)
    poor = {model: agreement for model, agreement in per_model.items() if not agreement.passed}
    if poor:
        reasons.append(
            f"on {', '.join(poor)} the judge agrees with right tool no better than chance ("
            + "; ".join(
                f"{model}: Cohen's kappa {a.kappa:.2f} <= {MIN_KAPPA} on {a.n_labelled} labelled episodes, "
                f"accuracy {a.accuracy:.2f}"
                for model, a in poor.items()
            )
            + f"): {'its' if len(poor) == 1 else 'their'} TSQ is not to be trusted"
        )
    shown_kappa = "n/a" if kappa is None else f"{kappa:.2f}"
    shown_accuracy = "n/a" if accuracy is None else f"{accuracy:.2f}"
    shown_canary = "n/a" if canary_tsq is None else f"{canary_tsq:.2f}"
    wanted = "" if canary_expected_tsq is None else f" (want {canary_expected_tsq:.2f})"
    figures = (
        f"canary TSQ {shown_canary}{wanted}, accuracy {shown_accuracy}, kappa {shown_kappa} on {n} labelled episodes"
    )
    if n < MIN_LABELLED:
        figures += f" (kappa is checked from {MIN_LABELLED} labelled episodes)"
    elif not labels_vary:
        figures += " (kappa not checked: right tool is the same on every labelled episode)"
    warnings: list[str] = []
    if (
        not reasons
        and canary_tsq is not None
        and canary_expected_tsq is not None
        and abs(canary_tsq - canary_expected_tsq) > 1e-9
    ):
        warnings.append(
            f"the canary scored TSQ {canary_tsq:.2f}, not {canary_expected_tsq:.2f}: the judge also "
            "fails a good choice (too harsh) or passes a bad one"
        )
    if reasons:
        message = f"judge calibration failed, the judge is toothless: {'; '.join(reasons + unchecked)} [{figures}]"
    elif unchecked:
        message = f"judge calibration failed, the judge could not be checked: {'; '.join(unchecked)} [{figures}]"
    elif warnings:
        message = f"judge calibration passed, with a warning: {'; '.join(warnings)} [{figures}]"
    else:
        message = f"judge calibration passed: {figures}"
    reasons += unchecked
    return CalibrationResult(
        passed=not reasons,
        n_labelled=n,
        accuracy=accuracy,
        kappa=kappa,
        canary_tsq=canary_tsq,
        canary_expected_tsq=canary_expected_tsq,
        reasons=reasons,
        warnings=warnings,
        message=message,
        per_model=per_model,
    )


# --- the canary's score ------------------------------------------------------------------------------------


def canary_score(votes: Iterable[JudgeVote]) -> float | None:
    """The canary's TSQ: the mean of its turns' TSQ (turns without a valid vote left out); None if none has one."""
    scores = [s for s in tsq_by_episode(votes).values() if s is not None]
    return sum(scores) / len(scores) if scores else None


async def judge_canary(
    items: list[JudgeItem],
    judge: JudgeConfig,
    *,
    retries: RetryConfig,
    budget: JudgeBudget | None = None,
    rate_limits: RateLimiters | None = None,
) -> list[JudgeVote]:
    """ChainPoll votes on the canary's items (store them like any other votes); ``rate_limits`` as in
    :func:`judge_items`."""
    return await judge_items(items, judge, retries=retries, budget=budget, rate_limits=rate_limits)


def canary_tsq(
    items: list[JudgeItem], judge: JudgeConfig, retries: RetryConfig, *, budget: JudgeBudget | None = None
) -> float | None:
    """Judge the canary ``items`` (from :func:`canary_turns`, or ingested turns) and return its TSQ."""
    from toolchoice_pipeline.execution.llm import run_sync

    return canary_score(run_sync(judge_canary(items, judge, retries=retries, budget=budget)))


def release_calibration(
    votes: Iterable[JudgeVote],
    right_tool: Mapping[EpisodeKey, bool | None],
    canary_missing: str | None | Callable[[], str | None] = None,
    mode: str = "fail",
    canary_expected_tsq: float | None = None,
) -> dict[str, Any]:
    """The ``judge.calibration`` object of ``scores.json`` for a release whose judge ran.

    ``votes``: the release's judge votes, the canary's included (model :data:`CANARY_MODEL`, judged by the
    ``judge_votes`` asset under the same budget); ``right_tool``: per episode; ``canary_missing``: why the canary
    session could not be read (None when it was), or a function saying so, asked only when no canary vote was judged (so
    a canary that was judged is not read again); ``mode``: ``judge.calibration`` (``fail`` or ``warn``);
    ``canary_expected_tsq`` as in :func:`calibrate`. Keys:
    ``passed``, ``mode``, ``blocks_promotion`` (failed in ``fail`` mode), ``message``, ``reasons``, ``warnings``,
    ``canary_tsq``, ``accuracy``, ``kappa``, ``n_labelled``, ``canary_judge_cost_usd``, ``canary_judge_tokens``,
    ``per_model`` (``{model: {kappa, accuracy, n_labelled, passed}}``, :func:`model_agreement`)
    (:class:`~toolchoice_pipeline.releases.document.CalibrationInfo`).
    """
    from toolchoice_pipeline.judge.polling import majority_verdicts

    votes = list(votes)
    canary = [v for v in votes if v.model == CANARY_MODEL]
    missing = (None if canary else canary_missing()) if callable(canary_missing) else canary_missing
    # with repeats, agreement is measured on each task's first sample (the keys are (model, task_id))
    result = calibrate(
        majority_verdicts(v for v in votes if v.model != CANARY_MODEL and v.sample == 0),
        right_tool,
        canary_score(canary),
        canary_missing=missing,
        canary_expected_tsq=canary_expected_tsq,
    )
    return {
        "passed": result.passed,
        "mode": mode,
        "blocks_promotion": not result.passed and mode == "fail",
        "message": result.message,
        "reasons": result.reasons,
        "warnings": result.warnings,
        "canary_tsq": result.canary_tsq,
        "accuracy": result.accuracy,
        "kappa": result.kappa,
        "n_labelled": result.n_labelled,
        "canary_judge_cost_usd": round(sum(v.cost_usd for v in canary), 6),
        "canary_judge_tokens": sum(v.prompt_tokens + v.completion_tokens for v in canary),
        "per_model": {model: agreement.model_dump() for model, agreement in result.per_model.items()},
    }
