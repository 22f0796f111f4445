"""Per-task figures over repeated samples (DESIGN §3 "Repeats"): right rates, pass^k, pass@k, flaky tasks.

A task run k times has k samples; a sample is *scored* when it is labelled and ran without an infrastructure
error. Over a model's samples:

- the task's **right rate** = right-tool samples / scored samples of the task;
- **pass^k** = share of tasks (with a scored sample) whose every scored sample chose the right tool, in points;
- **pass@k** = share of those tasks with at least one sample choosing the right tool, in points;
- **flaky tasks**: 0 < right-tool rate < 1 (task ids, sorted);
- the **flip rate**: the rate at which one sample's right-tool outcome differs from the task's usual one,
  estimated from the tasks with 2 or more scored samples: with ``D`` the mean over those tasks of the
  unbiased pairwise disagreement ``2·r·(1 − r)·n/(n − 1)``, the flip rate ``f`` solves ``2·f·(1 − f) = D``
  (``f = (1 − √(1 − 2D)) / 2``, at most 0.5). None when no task has two scored samples.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from toolchoice_pipeline.records.episodes import TaskScore


def flip_rate(rates: Iterable[tuple[float, int]]) -> float | None:
    """The flip rate (module docstring) from ``(right rate, scored samples)`` per task; None without a task of
    two or more samples."""
    disagreements = [2 * r * (1 - r) * n / (n - 1) for r, n in rates if n >= 2]
    if not disagreements:
        return None
    mean = min(0.5, sum(disagreements) / len(disagreements))
    return (1 - math.sqrt(1 - 2 * mean)) / 2


@dataclass(frozen=True)
class SampleFigures:
    """What the samples add to a model's scores (units as in :class:`~.summary.ModelScores`)."""

    repeats: int
    n_samples: int
    pass_k_pct: float | None
    pass_at_k_pct: float | None
    flaky_tasks: list[str]
    flip_rate: float | None


def figures_from_counts(counts: Mapping[str, tuple[int, int, int]]) -> SampleFigures:
    """:class:`SampleFigures` from per task ``(samples, scored samples, right-tool samples)``; the columnar
    path computes these counts in SQL."""
    scored = {task: (n, right) for task, (_, n, right) in counts.items() if n > 0}
    n = len(scored)
    estimate = flip_rate((right / n_scored, n_scored) for n_scored, right in scored.values())
    return SampleFigures(
        repeats=max((samples for samples, _, _ in counts.values()), default=1),
        n_samples=sum(samples for samples, _, _ in counts.values()),
        pass_k_pct=None if n == 0 else round(100.0 * sum(r == m for m, r in scored.values()) / n, 2),
        pass_at_k_pct=None if n == 0 else round(100.0 * sum(r > 0 for _, r in scored.values()) / n, 2),
        flaky_tasks=sorted(task for task, (m, r) in scored.items() if 0 < r < m),
        flip_rate=None if estimate is None else round(estimate, 4),
    )


def sample_figures(scores: list[TaskScore]) -> SampleFigures:
    """pass^k, pass@k, flaky tasks and the flip rate of one model's task scores (one per sample)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for score in scores:
        entry = counts[score.task_id]
        entry[0] += 1
        if score.error is None and score.right_tool is not None:
            entry[1] += 1
            entry[2] += bool(score.right_tool)
    return figures_from_counts({task: (a, b, c) for task, (a, b, c) in counts.items()})
