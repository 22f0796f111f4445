"""How much of a drop is noise (docs/scoring.md "The noise-aware gate"): the paired interval and the advice.

- :func:`drop_interval`: the interval the gate uses. With two or more scored samples per task it is the
  **within-task interval** (:func:`within_task_drop_interval`): the suite's tasks are fixed, only the samples
  are random, so the noise of the drop is what the samples of each task disagree on in each release. A model
  whose samples all agree (observed flip rate 0) has no noise, and every task that changed is a real change.
  With one sample per task (within-task variation cannot be seen) it falls back to the paired bootstrap.
- :func:`paired_drop_interval`: the 95% interval of the drop (baseline − now, points) of a share, paired over
  the tasks both releases scored: a **paired bootstrap** over tasks (resampling tasks with replacement,
  :data:`BOOTSTRAP_RESAMPLES` resamples, fixed seed :data:`BOOTSTRAP_SEED`, percentile interval) of the mean
  per-task difference of right rates. A drop is *beyond noise* when the interval does not contain 0. When the
  differences take few distinct values (most tasks agree), a resample is drawn as the multinomial count of
  each value (the same distribution, without touching every task), so a suite of 10⁵ tasks costs milliseconds.
- :func:`false_fail_rate`: the chance that the 2-point rule fails an unchanged model with ``n`` tasks, ``k``
  samples per task and flip rate ``f`` (each task's samples are right with probability ``1 − f`` or ``f``;
  the drop is the difference of two independent releases). Computed exactly: the per-task difference of
  right counts is ``X − Y`` with ``X, Y ~ Binomial(k, f)``, its n-fold sum's distribution comes from one FFT.
- :func:`repeats_for_false_fails`: the smallest k whose false-fail rate is under a target (5%).
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

import numpy as np

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 11
FALSE_FAIL_TARGET = 0.05
CHUNK_ELEMENTS = 1 << 22  # task draws per block of resamples (32 MB of indices)
MULTINOMIAL_FACTOR = 8  # the multinomial draw is used when the distinct differences are at most n / 8
Z95 = 1.959963984540054  # the normal's 97.5th percentile: a two-sided 95% interval

IntervalMethod = Literal["within_task", "task_bootstrap"]


class DropInterval(NamedTuple):
    """A 95% interval of a drop in points (2 decimals) and how it was made (:func:`drop_interval`)."""

    low: float
    high: float
    method: IntervalMethod


def _within_variances(scored: np.ndarray, right: np.ndarray) -> np.ndarray | None:
    """Per task the unbiased estimate of p·(1 − p) from its samples, ``x(k − x) / (k(k − 1))``; a task with one
    scored sample gets the mean of the others. None when no task has two scored samples."""
    many = scored >= 2
    if not many.any():
        return None
    safe = np.where(many, scored, 2.0)
    variances = right * (safe - right) / (safe * (safe - 1.0))
    return np.where(many, variances, variances[many].mean())


def within_task_drop_interval(
    baseline_scored: np.ndarray, baseline_right: np.ndarray, now_scored: np.ndarray, now_right: np.ndarray
) -> tuple[float, float] | None:
    """95% interval ``(low, high)`` of the mean per-task drop (baseline − now right rate, points), the tasks
    fixed and the samples random: ``d ± 1.96·σ``, ``σ² = Σ_t (v_b,t / k_b,t + v_n,t / k_n,t) / n²`` with
    ``v`` the unbiased within-task variance of each release's samples (:func:`_within_variances`; its mean
    over tasks is ``f(1 − f)`` for the observed flip rate ``f``). All samples agreeing (``f = 0``) gives
    ``σ = 0``: the interval is the drop itself. Arrays are per shared task, aligned; counts of scored and
    right samples. None when neither release has a task with two scored samples; ``ValueError`` when the
    arrays are empty or of different lengths, or a task has no scored sample.
    """
    arrays = [np.asarray(a, dtype=float) for a in (baseline_scored, baseline_right, now_scored, now_right)]
    if len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("paired counts must be non-empty and of one length")
    b_scored, b_right, n_scored, n_right = arrays
    if (b_scored < 1).any() or (n_scored < 1).any():
        raise ValueError("every paired task needs a scored sample in both releases")
    v_base, v_now = _within_variances(b_scored, b_right), _within_variances(n_scored, n_right)
    if v_base is None and v_now is None:
        return None
    # One side of one sample per task (not the case when both share samples 0..m−1): its tasks' variance is
    # taken as the other side's.
    v_base = v_now if v_base is None else v_base
    v_now = v_base if v_now is None else v_now
    n = b_scored.size
    drop = 100.0 * float((b_right / b_scored - n_right / n_scored).mean())
    sigma = 100.0 * math.sqrt(float((v_base / b_scored + v_now / n_scored).sum())) / n
    return round(drop - Z95 * sigma, 2), round(drop + Z95 * sigma, 2)


def drop_interval(
    baseline_scored: np.ndarray, baseline_right: np.ndarray, now_scored: np.ndarray, now_right: np.ndarray
) -> DropInterval:
    """The gate's 95% interval of a drop (points): :func:`within_task_drop_interval` when a task has two or
    more scored samples, else :func:`paired_drop_interval` over the per-task right rates (``task_bootstrap``).
    Arguments as in :func:`within_task_drop_interval`."""
    within = within_task_drop_interval(baseline_scored, baseline_right, now_scored, now_right)
    if within is not None:
        return DropInterval(within[0], within[1], "within_task")
    baseline = np.asarray(baseline_right, dtype=float) / np.asarray(baseline_scored, dtype=float)
    now = np.asarray(now_right, dtype=float) / np.asarray(now_scored, dtype=float)
    low, high = paired_drop_interval(baseline, now)
    return DropInterval(low, high, "task_bootstrap")


def paired_drop_interval(
    baseline: np.ndarray, now: np.ndarray, *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float]:
    """95% paired-bootstrap interval ``(low, high)`` of the mean of ``baseline − now`` in points (2 decimals).

    ``baseline`` and ``now`` are per-task right rates (fractions 0–1), aligned by task; raises ``ValueError``
    when they differ in length or are empty.
    """
    baseline, now = np.asarray(baseline, dtype=float), np.asarray(now, dtype=float)
    if baseline.shape != now.shape or baseline.size == 0:
        raise ValueError("paired rates must be non-empty and of one length")
    differences = 100.0 * (baseline - now)
    rng = np.random.default_rng(seed)
    n = differences.size
    values, counts = np.unique(differences, return_counts=True)
    if values.size * MULTINOMIAL_FACTOR <= n:
        # Few distinct differences (the usual case: most tasks are 0): resampling n tasks with replacement is a
        # multinomial draw of how often each value is picked, O(resamples × values) instead of × n.
        means = rng.multinomial(n, counts / n, size=resamples) @ values / n
    else:
        # Resamples in blocks of rows (the same stream as one draw): memory stays bounded.
        rows = max(1, CHUNK_ELEMENTS // n)
        means = np.concatenate(
            [
                differences[rng.integers(0, n, size=(min(rows, resamples - done), n))].mean(axis=1)
                for done in range(0, resamples, rows)
            ]
        )
    low, high = np.percentile(means, [2.5, 97.5])
    return round(float(low), 2), round(float(high), 2)


def _binomial(k: int, p: float) -> np.ndarray:
    return np.array([math.comb(k, i) * p**i * (1 - p) ** (k - i) for i in range(k + 1)])


def false_fail_rate(n_tasks: int, repeats: int, flip: float, max_drop_points: float = 2.0) -> float:
    """P(drop > ``max_drop_points``) on one metric for an unchanged model (module docstring), a fraction.

    The drop is rounded to 2 decimals before the comparison, as the gate does.
    """
    if n_tasks <= 0 or flip <= 0:
        return 0.0
    k = repeats
    counts = _binomial(k, flip)
    difference = np.convolve(counts, counts[::-1])  # X − Y on −k..k
    size = 2 * k * n_tasks + 1
    length = 1 << (size - 1).bit_length()
    spectrum = np.fft.rfft(difference, length) ** n_tasks
    total = np.clip(np.fft.irfft(spectrum, length)[:size], 0.0, None)  # the sum on −kn..kn, index + kn
    sums = np.arange(size) - k * n_tasks
    drops = np.round(100.0 * sums / (k * n_tasks), 2)
    return float(min(1.0, total[drops > max_drop_points].sum()))


def repeats_for_false_fails(
    n_tasks: int, flip: float, max_drop_points: float = 2.0, target: float = FALSE_FAIL_TARGET, max_repeats: int = 100
) -> int | None:
    """The smallest k (1..``max_repeats``) whose :func:`false_fail_rate` is under ``target``; None if none is."""
    for k in range(1, max_repeats + 1):
        if false_fail_rate(n_tasks, k, flip, max_drop_points) < target:
            return k
    return None
