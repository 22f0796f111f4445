"""Per-model release scores from task scores: the ``models`` entries of ``scores.json`` (DESIGN §3).

Units and denominators:

- ``right_tool_pct`` / ``right_args_pct`` are shares in points (0–100, 2 decimals) over the *scored* tasks:
  labelled tasks that ran without an infrastructure error (``n_scored``); None when there are none.
  ``*_ci95_pct`` is the 95% Wilson score interval of the share, in points.
- ``errors``: episodes with an infrastructure error; ``error_pct`` = errors / n_tasks in points.
- ``calls_per_task`` (2 decimals), ``tsq_mean`` (4 decimals, a fraction 0–1), ``provider_ms_p50/p95`` (the
  provider's time per episode, summed over its model calls: what to compare between providers) and
  ``latency_ms_p50/p95`` (the same calls as our client timed them, its own queueing included; linear
  interpolation as numpy and DuckDB ``quantile_cont``) are over the episodes without an infrastructure error;
  ``tsq_mean`` ignores episodes without a valid vote.
- ``agent_cost_usd`` / ``judge_cost_usd`` sum every episode and every vote, failed ones included (6 decimals);
  ``judge_tokens`` sums the votes' prompt + completion tokens. ``agent_cost_unpriced`` / ``judge_cost_unpriced``
  say that the agent / judge model has no known price (no ``price:``, not in LiteLLM's pricing table): its
  calls were counted at 0.0 USD, so the cost is unknown, never shown as 0 (:func:`mark_unpriced`). Built-in
  ``local/`` models are priced at 0.
- ``n_unjudged``: episodes that ran (no infrastructure error) and were sent to the judge but got no valid
  vote (the ``judge_failed`` flag: invalid answers, abstentions, an exhausted budget); their TSQ is missing
  and ``tsq_mean`` is over the rest.
- ``flags``: how many tasks carry each flag; ``tags``: the shares per task tag.
- ``confusion`` / ``tools`` / ``any_call``: tool confusion over every scored episode (all samples), by first
  tool: :mod:`.confusion`.

With repeats (k samples per task, :mod:`.samples`): every share, ``calls_per_task``, ``tsq_mean``, the
latencies, ``errors``/``error_pct`` and the per-tag figures are over *samples* (a mean over all samples);
``n_tasks`` counts distinct tasks and ``n_samples`` the samples; ``repeats`` is k (the most samples any task
has); ``pass_k_pct``/``pass_at_k_pct`` (points), ``flaky_tasks`` and ``flip_rate`` (a fraction) come from the
per-task right-tool rates; ``agent_cost_per_sample_usd`` = ``agent_cost_usd`` / ``n_samples``.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from toolchoice_pipeline.records.episodes import TaskScore
from toolchoice_pipeline.scoring.confusion import (
    AnyCallCounts,
    ConfusionEntry,
    Pair,
    ToolScore,
    confusion_entries,
    tool_scores,
)
from toolchoice_pipeline.scoring.samples import SampleFigures
from toolchoice_pipeline.scoring.task_scores import FLAG_ORDER

Z_95 = 1.959963984540054  # two-sided 95% normal quantile


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """95% Wilson score interval of a proportion, as fractions ``(low, high)``; None when ``n`` is 0.

    Wilson (1927), the interval recommended by Brown, Cai & DasGupta (2001) for small samples.
    """
    if n <= 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile (0–1) by linear interpolation between closest ranks; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def points(successes: int, n: int) -> float | None:
    """A share in points, 2 decimals; None for an empty denominator."""
    return None if n == 0 else round(100.0 * successes / n, 2)


def interval_points(successes: int, n: int) -> list[float] | None:
    interval = wilson_interval(successes, n)
    return None if interval is None else [round(100.0 * interval[0], 2), round(100.0 * interval[1], 2)]


# Sums of the same floats added in another order (Python's loop, DuckDB's parallel sum) differ in their last bits,
# and at a rounding tie those bits decide: snapped to this many more decimals first, they round alike.
_SUM_NOISE_DECIMALS = 6


def _round(value: float | None, digits: int) -> float | None:
    """``value`` rounded to ``digits`` decimals, the same on both scoring paths (see :data:`_SUM_NOISE_DECIMALS`)."""
    return None if value is None else round(round(value, digits + _SUM_NOISE_DECIMALS), digits)


class TagScores(BaseModel):
    """The shares of one model on the tasks carrying one tag."""

    n_tasks: int
    errors: int
    n_scored: int
    right_tool_pct: float | None
    right_args_pct: float | None
    right_tool_ci95_pct: list[float] | None
    right_args_ci95_pct: list[float] | None
    tsq_mean: float | None


def metric(label: str | None = None, digits: int | None = None, column_type: str | None = None, **field: Any) -> Any:
    """Declare a :class:`ModelScores` field. With ``label`` the field is a column of the per-model scores table
    (terminal and Dagster Markdown), shown with ``digits`` decimals (None: as it is); ``column_type`` overrides
    the ``release_scores`` column type its annotation gives (``"int64"`` for counts that may pass 2**31).
    ``field`` goes to pydantic's ``Field`` (a ``default`` for fields that older ``scores.json`` documents lack)."""
    return Field(json_schema_extra={"label": label, "digits": digits, "column_type": column_type}, **field)


class ModelScores(BaseModel):
    """One model's scores in one release (a ``models`` entry of ``scores.json``; units in the module docstring).

    Each field is declared once, here: its type gives the ``release_scores`` column (int → int32, float →
    float64; an interval ``[low, high]`` → ``<name without _pct>_low_pct``/``_high_pct``; ``flags`` →
    ``n_<flag>``; ``tags`` → ``tags_json``) and its :func:`metric` label and decimals the table column. A new
    metric is one field here plus its computation.
    """

    n_tasks: int = metric("tasks")
    errors: int = metric("errors")
    # Beside the task count (issue 29): the shares are of the labelled tasks that ran, not of every task.
    n_scored: int = metric("labelled", default=0)
    n_unlabelled: int = metric("unlabelled", default=0)
    right_tool_pct: float | None = metric("right tool %", 2)
    right_args_pct: float | None = metric("right args %", 2)
    right_tool_ci95_pct: list[float] | None = metric(default=None)
    right_args_ci95_pct: list[float] | None = metric(default=None)
    calls_per_task: float | None = metric("calls/task", 2)
    tsq_mean: float | None = metric("TSQ", 2)
    agent_cost_usd: float = metric("agent USD", 4)
    judge_cost_usd: float = metric("judge USD", 4)
    judge_tokens: int = metric("judge tokens", default=0, column_type="int64")
    n_unjudged: int = metric("unjudged", default=0)
    latency_ms_p50: float | None = metric()
    latency_ms_p95: float | None = metric()
    error_pct: float = metric(default=0.0)
    flags: dict[str, int] = metric(default_factory=dict)
    tags: dict[str, TagScores] = metric(default_factory=dict)
    repeats: int = metric(default=1)
    n_samples: int = metric(default=0)
    pass_k_pct: float | None = metric("pass^k %", 2, default=None)
    pass_at_k_pct: float | None = metric("pass@k %", 2, default=None)
    flaky_tasks: list[str] = metric(default_factory=list)
    flip_rate: float | None = metric(default=None)
    agent_cost_per_sample_usd: float | None = metric(default=None)
    # Added after latency_ms_p50/p95 (which include our client's queueing): documents written before lack them.
    provider_ms_p50: float | None = metric("p50 ms", 1, default=None)
    provider_ms_p95: float | None = metric("p95 ms", 1, default=None)
    # Added with issue 12: a cost counted at 0 USD because the model has no known price is "unpriced", not free.
    agent_cost_unpriced: bool = metric(default=False)
    judge_cost_unpriced: bool = metric(default=False)
    # Added with issue 25 (tool confusion, :mod:`.confusion`): not release_scores columns (the warehouse's
    # tool_confusion and tool_scores views hold them).
    confusion: list[ConfusionEntry] = metric(default_factory=list)
    tools: list[ToolScore] = metric(default_factory=list)
    any_call: AnyCallCounts | None = metric(default=None)

    @property
    def n_episodes(self) -> int:
        """Episodes run, one per task and sample: the denominator of every share of episodes (``errors``,
        ``n_unjudged``). ``n_samples``; ``n_tasks`` in documents written before repeats."""
        return self.n_samples or self.n_tasks


# ModelScores fields kept out of the release_scores table (the tool_confusion/tool_scores views show them).
NOT_RELEASE_SCORES_COLUMNS = ("confusion", "tools", "any_call")


def mark_unpriced(
    models: dict[str, ModelScores], *, agents: Collection[str] = (), judge: bool = False
) -> dict[str, ModelScores]:
    """``models`` with ``agent_cost_unpriced`` set for the models named in ``agents`` and ``judge_cost_unpriced``
    set for every model when ``judge`` (the judge model that judged them is unpriced)."""
    return {
        model: scores.model_copy(
            update={
                "agent_cost_unpriced": scores.agent_cost_unpriced or model in agents,
                "judge_cost_unpriced": scores.judge_cost_unpriced or judge,
            }
        )
        for model, scores in models.items()
    }


def table_columns() -> list[tuple[str, str, int | None]]:
    """``(field, label, digits)`` of every :class:`ModelScores` field shown in the per-model scores table."""
    columns: list[tuple[str, str, int | None]] = []
    for name, info in ModelScores.model_fields.items():
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        label, digits = extra.get("label"), extra.get("digits")
        if isinstance(label, str) and label:
            columns.append((name, label, digits if isinstance(digits, int) else None))
    return columns


@dataclass
class Tally:
    """Counts behind the shares of one model (or one model and tag); the columnar path fills them with SQL."""

    n_tasks: int = 0
    errors: int = 0
    n_scored: int = 0
    right_tool: int = 0
    right_args: int = 0
    tsq_sum: float = 0.0
    tsq_n: int = 0

    @classmethod
    def of(cls, scores: Iterable[TaskScore]) -> Tally:
        tally = cls()
        for s in scores:
            tally.n_tasks += 1
            if s.error is not None:
                tally.errors += 1
                continue
            if s.right_tool is not None:
                tally.n_scored += 1
                tally.right_tool += bool(s.right_tool)
                tally.right_args += bool(s.right_args)
            if s.tsq is not None:
                tally.tsq_sum += s.tsq
                tally.tsq_n += 1
        return tally

    def shares(self) -> dict[str, Any]:
        """The fields of :class:`TagScores` (points, Wilson intervals, TSQ mean) from these counts."""
        return {
            "n_tasks": self.n_tasks,
            "errors": self.errors,
            "n_scored": self.n_scored,
            "right_tool_pct": points(self.right_tool, self.n_scored),
            "right_args_pct": points(self.right_args, self.n_scored),
            "right_tool_ci95_pct": interval_points(self.right_tool, self.n_scored),
            "right_args_ci95_pct": interval_points(self.right_args, self.n_scored),
            "tsq_mean": _round(self.tsq_sum / self.tsq_n, 4) if self.tsq_n else None,
        }


def build_model_scores(
    overall: Tally,
    *,
    n_ran: int,
    calls_sum: int,
    agent_cost_usd: float,
    judge_cost_usd: float,
    latency_ms_p50: float | None,
    latency_ms_p95: float | None,
    n_unlabelled: int,
    flags: dict[str, int],
    tags: dict[str, Tally],
    judge_tokens: int = 0,
    n_unjudged: int = 0,
    samples: SampleFigures | None = None,
    n_distinct_tasks: int | None = None,
    provider_ms_p50: float | None = None,
    provider_ms_p95: float | None = None,
    pairs: Mapping[Pair, int] | None = None,
    any_call: AnyCallCounts | None = None,
) -> ModelScores:
    """A model's scores from its counts and sums (``n_ran`` = episodes without an infrastructure error;
    ``overall`` counts samples; ``samples`` the per-task figures over repeats, None = one sample per task;
    ``pairs`` the ``{(expected tool, first tool): episodes}`` counts of scored episodes, :mod:`.confusion`)."""
    shares = overall.shares()
    extra: dict[str, Any] = {"n_samples": overall.n_tasks}
    if samples is not None:
        extra.update(
            repeats=samples.repeats,
            pass_k_pct=samples.pass_k_pct,
            pass_at_k_pct=samples.pass_at_k_pct,
            flaky_tasks=samples.flaky_tasks,
            flip_rate=samples.flip_rate,
        )
    if n_distinct_tasks is not None:
        shares["n_tasks"] = n_distinct_tasks
    return ModelScores(
        **shares,
        **extra,
        agent_cost_per_sample_usd=_round(agent_cost_usd / overall.n_tasks, 6) if overall.n_tasks else None,
        calls_per_task=_round(calls_sum / n_ran, 2) if n_ran else None,
        agent_cost_usd=_round(agent_cost_usd, 6),
        judge_cost_usd=_round(judge_cost_usd, 6),
        judge_tokens=int(judge_tokens),
        n_unjudged=int(n_unjudged),
        latency_ms_p50=_round(latency_ms_p50, 2),
        latency_ms_p95=_round(latency_ms_p95, 2),
        provider_ms_p50=_round(provider_ms_p50, 2),
        provider_ms_p95=_round(provider_ms_p95, 2),
        n_unlabelled=n_unlabelled,
        error_pct=points(overall.errors, overall.n_tasks) or 0.0,
        flags={flag: 0 for flag in FLAG_ORDER} | flags,
        tags={tag: TagScores(**tally.shares()) for tag, tally in sorted(tags.items())},
        confusion=confusion_entries(pairs or {}),
        tools=tool_scores(pairs or {}),
        any_call=any_call if any_call is not None and any_call.episodes else None,
    )
