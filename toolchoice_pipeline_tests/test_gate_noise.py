"""The noise-aware gate: the paired interval against a reference computation, the false-fail rate against an
exact enumeration, ``gate.noise: require`` on a within-noise and a beyond-noise drop, mixed-k comparisons."""

from __future__ import annotations

import itertools
import math

import numpy as np

from toolchoice_pipeline.records.episodes import TaskScore
from toolchoice_pipeline.releases.document import GateDocument
from toolchoice_pipeline.releases.gate import check_gate, gate_markdown
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.noise import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    drop_interval,
    false_fail_rate,
    paired_drop_interval,
    repeats_for_false_fails,
    within_task_drop_interval,
)
from toolchoice_pipeline.releases.pairing import paired_tasks
from toolchoice_pipeline.releases.warehouse_tables import task_scores_table
from toolchoice_pipeline.scoring.summary import percentile
from toolchoice_pipeline_tests.scoring_reference import summarise

MODEL = "sim/m"


def lineage(release_id: str) -> Lineage:
    return Lineage(release_id=release_id, suite="demo", catalog_version="c1", run_id=f"run-{release_id}")


def scores_of(outcomes: dict[str, list[bool]]) -> list[TaskScore]:
    """Task scores of one model: per task id, the right-tool outcome of each sample (arguments alike)."""
    return [
        TaskScore(model=MODEL, task_id=task, sample=s, right_tool=right, right_args=right, calls=1, first_tool=None)
        for task, samples in outcomes.items()
        for s, right in enumerate(samples)
    ]


def gate(baseline: dict[str, list[bool]], now: dict[str, list[bool]], noise: str = "report"):
    before, after = scores_of(baseline), scores_of(now)
    paired = paired_tasks(task_scores_table(after, lineage("now")), task_scores_table(before, lineage("base")))
    return check_gate("now", summarise(after), "base", summarise(before), paired=paired, noise=noise)


def test_the_paired_interval_equals_a_reference_bootstrap():
    rng = np.random.default_rng(3)
    baseline, now = rng.random(37), rng.random(37)
    reference_rng = np.random.default_rng(BOOTSTRAP_SEED)
    differences = [100.0 * (b - n) for b, n in zip(baseline, now)]
    means = []
    for _ in range(BOOTSTRAP_RESAMPLES):  # one resample of the tasks at a time, one task at a time
        picks = [int(reference_rng.integers(0, len(differences))) for _ in differences]
        means.append(sum(differences[i] for i in picks) / len(picks))
    expected = (round(percentile(means, 0.025), 2), round(percentile(means, 0.975), 2))
    assert paired_drop_interval(baseline, now) == expected
    centre = sum(differences) / len(differences)
    assert expected[0] < centre < expected[1]


def test_the_false_fail_rate_equals_an_exact_enumeration():
    n, k, flip = 3, 2, 0.2
    per_task = {x - y: 0.0 for x in range(k + 1) for y in range(k + 1)}
    for x in range(k + 1):
        for y in range(k + 1):
            per_task[x - y] += (
                math.comb(k, x) * flip**x * (1 - flip) ** (k - x) * math.comb(k, y) * flip**y * (1 - flip) ** (k - y)
            )
    for limit in (2.0, 10.0, 20.0):
        expected = sum(
            math.prod(per_task[d] for d in ds)
            for ds in itertools.product(per_task, repeat=n)
            if round(100.0 * sum(ds) / (k * n), 2) > limit
        )
        assert math.isclose(false_fail_rate(n, k, flip, limit), expected, abs_tol=1e-9)
    assert false_fail_rate(73, 1, 0.05) > 0.25  # the issue's 73-task suite at a 5% flip rate
    k5 = repeats_for_false_fails(73, 0.05)
    assert false_fail_rate(73, k5, 0.05) < 0.05 <= false_fail_rate(73, k5 - 1, 0.05)


def steady(n: int, right: int) -> dict[str, list[bool]]:
    return {f"t{i:03d}": [i < right] for i in range(n)}


def test_require_passes_a_within_noise_drop_with_a_warning():
    baseline = steady(73, 60)
    now = dict(baseline)
    for task in ("t000", "t001", "t002"):  # three tasks flip right → wrong: 4.11 points on 73 tasks
        now[task] = [False]
    reported = gate(baseline, now)
    [comparison, _] = reported.comparisons
    assert comparison.drop == 4.11 and comparison.beyond_noise is False
    assert comparison.ci95[0] <= 0.0 <= comparison.ci95[1]
    assert not reported.passed  # report: the 2-point rule decides
    required = gate(baseline, now, noise="require")
    assert required.passed and not required.failures
    assert any("within noise" in w and f"[{comparison.ci95[0]}, {comparison.ci95[1]}]" in w for w in required.warnings)
    document = GateDocument.model_validate(required.to_json())
    assert document.noise == "require" and document.comparisons[0].ci95 == comparison.ci95
    assert "within noise" in gate_markdown(required, {}, {})


def test_require_fails_a_beyond_noise_drop():
    baseline = steady(400, 300)
    now = {task: [False] if int(task[1:]) < 40 else outcome for task, outcome in baseline.items()}
    required = gate(baseline, now, noise="require")
    assert not required.passed
    failure = required.failures[0]
    assert failure.drop == 10.0 and "beyond noise" in failure.reason
    assert all(c.beyond_noise and c.ci95[0] > 0 for c in required.comparisons)


def test_mixed_repeats_and_task_sets_compare_only_on_what_they_share():
    baseline = {f"t{i}": [True] for i in range(10)}
    now = {f"t{i}": [True, False, False] for i in range(12)}  # sample 0 as before; two new tasks
    result = gate(baseline, now)
    assert result.passed  # on sample 0 of the ten shared tasks nothing changed
    tool = next(c for c in result.comparisons if c.metric == "right_tool_pct")
    assert (tool.baseline, tool.now, tool.drop) == (100.0, 100.0, 0.0)
    assert summarise(scores_of(now))[MODEL].right_tool_pct == 33.33  # the stored share is over all samples
    [note] = result.models[MODEL].notes
    assert "10 tasks scored in both (0 only in the baseline, 2 only in this release)" in note
    assert "samples 0..0 (baseline repeats 1, this release 3)" in note


def test_the_advice_names_the_false_fail_rate_and_the_repeats_that_fix_it():
    outcomes = {f"t{i:03d}": [True, True, True, False] if i % 5 == 0 else [True] * 4 for i in range(73)}
    figures = summarise(scores_of(outcomes))[MODEL]
    result = check_gate("now", {MODEL: figures}, "base", {MODEL: figures})
    [advice] = result.advice
    rate = false_fail_rate(73, 4, figures.flip_rate)
    assert f"{100 * rate:.1f}%" in advice and "73 tasks, repeats 4" in advice
    assert f"repeats {repeats_for_false_fails(73, figures.flip_rate)} bring it under 5%" in advice
    one_sample = summarise(scores_of({"a": [True]}))[MODEL]
    [advice] = check_gate("now", {MODEL: one_sample}, "base", {MODEL: one_sample}).advice
    assert "not observable with one sample per task" in advice


def test_a_baseline_written_before_repeats_pairs_as_sample_zero():
    baseline = task_scores_table(scores_of(steady(20, 15)), lineage("base"))
    baseline = baseline.drop_columns(["sample"])  # a task_scores file from before the sample column
    now = task_scores_table(scores_of({f"t{i:03d}": [i < 15, False] for i in range(20)}), lineage("now"))
    paired = paired_tasks(now, baseline)[MODEL]
    assert len(paired.tasks) == 20
    assert paired.share_pct("baseline", "right_tool") == paired.share_pct("now", "right_tool") == 75.0
    assert "samples 0..0 (baseline repeats 1, this release 2)" in paired.shared_note


def test_many_tasks_with_few_distinct_differences_take_the_multinomial_draw_of_the_same_distribution(monkeypatch):
    import toolchoice_pipeline.releases.noise as noise

    rng = np.random.default_rng(5)
    baseline, now = (rng.random(4000) < 0.8).astype(float), (rng.random(4000) < 0.77).astype(float)
    multinomial = paired_drop_interval(baseline, now)  # 3 distinct differences among 4,000 tasks
    monkeypatch.setattr(noise, "MULTINOMIAL_FACTOR", 10**9)  # force the task-by-task resampling
    by_task = paired_drop_interval(baseline, now)
    differences = 100.0 * (baseline - now)
    half = 1.959963984540054 * differences.std() / math.sqrt(differences.size)
    for low, high in (multinomial, by_task):
        assert abs(low - (differences.mean() - half)) < 0.3 and abs(high - (differences.mean() + half)) < 0.3
    assert multinomial != by_task  # two different draws of one distribution


def test_require_fails_the_deterministic_regression_of_issue_30():
    """73 tasks, k = 3, every sample agreeing in both releases; 7 tasks right → wrong and 2 wrong → right: the
    right-tool share drops 6.85 points. The bootstrap over tasks called it within noise; with no disagreement
    between samples nothing of it is noise."""
    baseline = {f"t{i:03d}": [i < 50] * 3 for i in range(73)}
    now = dict(baseline)
    for i in range(7):
        now[f"t{i:03d}"] = [False] * 3
    for i in (60, 61):
        now[f"t{i:03d}"] = [True] * 3
    required = gate(baseline, now, noise="require")
    assert summarise(scores_of(now))[MODEL].flip_rate == 0.0
    assert not required.passed and not required.warnings
    tool = next(c for c in required.comparisons if c.metric == "right_tool_pct")
    assert tool.drop == 6.85 and tool.ci95 == [6.85, 6.85] and tool.beyond_noise and tool.ci_method == "within_task"
    assert required.models[MODEL].status == "failed"
    assert "beyond noise" in required.failures[0].reason
    # The interval the task bootstrap gives the same differences contains 0: the fault this replaces.
    low, high = paired_drop_interval(np.array([float(i < 50) for i in range(73)]), tool_rates(now))
    assert low <= 0.0 <= high


def tool_rates(outcomes: dict[str, list[bool]]) -> np.ndarray:
    return np.array([sum(samples) / len(samples) for _, samples in sorted(outcomes.items())])


def test_the_within_task_interval_widens_with_the_samples_disagreement():
    rng = np.random.default_rng(4)
    n, k = 200, 4
    scored = np.full(n, float(k))
    base = rng.binomial(k, 0.7, n).astype(float)
    now = rng.binomial(k, 0.7, n).astype(float)
    low, high = within_task_drop_interval(scored, base, scored, now)
    # Reference: the normal interval from each release's per-task sample variances, written out task by task.
    variance = sum(x * (k - x) / (k * (k - 1)) / k + y * (k - y) / (k * (k - 1)) / k for x, y in zip(base, now)) / n**2
    centre = 100.0 * sum((x - y) / k for x, y in zip(base, now)) / n
    half = 100.0 * 1.959963984540054 * math.sqrt(variance)
    assert (low, high) == (round(centre - half, 2), round(centre + half, 2))
    assert low < 0.0 < high  # an unchanged model at p = 0.7: within noise
    steady = np.full(n, float(k)) * (base > 2)  # the same tasks, every sample agreeing
    tight = within_task_drop_interval(scored, steady, scored, steady)
    assert tight == (0.0, 0.0)
    ones = np.ones(n)
    assert within_task_drop_interval(ones, ones, ones, ones * 0) is None  # one sample per task: not observable
    assert drop_interval(ones, ones, ones, ones * 0).method == "task_bootstrap"
    assert drop_interval(scored, base, scored, now).method == "within_task"
