"""The trend chart and table say what happened (issue 29): every line visible, a line under an equal one too;
"gate failed" crosses only on the models that failed the gate; an axis on which a drop the size of the gate's
threshold shows; and each release's judge calibration, a failed one never reading "pass". Checked on the data
matplotlib was given (the Axes' lines and markers), not on pixels."""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import pytest

from toolchoice_pipeline.releases.gate import MAX_DROP_POINTS
from toolchoice_pipeline.releases.report import TrendPoint, load_trend, trend_figure, trend_rows


def point(release_id, model, tool, args=None, gate_passed=True, model_failed=False, calibration=None):
    return TrendPoint(
        release_id=release_id,
        kind="release",
        suite="s",
        model=model,
        right_tool_pct=tool,
        right_args_pct=tool if args is None else args,
        tsq_mean=None,
        gate_passed=gate_passed,
        model_failed=model_failed,
        calibration=calibration,
    )


def model_lines(axis):
    return {line.get_label(): line for line in axis.get_lines() if not line.get_label().startswith("_")}


@pytest.mark.parametrize("n_models", [2, 3, 5])
def test_equal_lines_each_stay_visible(n_models):
    models = [f"local/m{i}" for i in range(n_models)]
    points = [point(r, m, v) for r, v in (("r1", 70.0), ("r2", 70.0), ("r3", 64.5)) for m in models]
    fig = trend_figure(points)
    try:
        for axis in fig.axes:
            lines = model_lines(axis)
            assert list(lines) == models
            drawn = [(tuple(line.get_xdata()), line.get_marker(), line.get_markersize()) for line in lines.values()]
            assert len({xs for xs, _, _ in drawn}) == n_models  # side by side, not one over the other
            assert len({marker for _, marker, _ in drawn}) == n_models
            # a model drawn later has smaller markers: the one under it shows around them
            sizes = [size for _, _, size in drawn]
            assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == n_models
            for line in lines.values():  # each still at its own releases, within a third of a step
                assert [round(x) for x in line.get_xdata()] == [0, 1, 2]
                assert all(abs(x - round(x)) < 1 / 3 for x in line.get_xdata())
                assert list(line.get_ydata()) == [70.0, 70.0, 64.5]
    finally:
        plt.close(fig)


def test_gate_failed_crosses_only_on_the_model_that_failed():
    points = [
        point("r1", "local/a", 80.0),
        point("r1", "local/b", 80.0),
        point("r2", "local/a", 73.15, gate_passed=False, model_failed=True),
        point("r2", "local/b", 80.0, gate_passed=False, model_failed=False),  # passed: no cross
    ]
    fig = trend_figure(points)
    try:
        for axis in fig.axes:
            crosses = [tuple(xy) for collection in axis.collections for xy in collection.get_offsets()]
            failing = model_lines(axis)["local/a"]
            assert crosses == [(failing.get_xdata()[1], 73.15)]
        legend = [text.get_text() for text in fig.legends[0].get_texts()]
        assert legend.count("gate failed") == 1
    finally:
        plt.close(fig)


@pytest.mark.parametrize(
    "values",
    [
        [80.0, 80.0, 80.0 - MAX_DROP_POINTS],  # a drop the size of the gate's threshold
        [80.0, 73.15],  # the 6.85-point drop of the issue
        [99.5, 100.0, 100.0 - MAX_DROP_POINTS],  # near the top
        [1.0, 0.0, 0.5],  # near the bottom
        [10.0, 95.0],  # a wide range stays whole
    ],
)
def test_the_axis_shows_a_drop_the_size_of_the_gates_threshold(values):
    points = [point(f"r{i}", "local/a", v) for i, v in enumerate(values)]
    fig = trend_figure(points)
    try:
        low, high = fig.axes[0].get_ylim()
        assert 0 <= low <= min(values) and max(values) <= high <= 100  # every point on the chart
        assert high - low <= max(4 * MAX_DROP_POINTS * 1.25, 1.25 * (max(values) - min(values)))
        assert MAX_DROP_POINTS / (high - low) >= 0.2 or max(values) - min(values) > 8 * MAX_DROP_POINTS
    finally:
        plt.close(fig)


def write_release(root, release_id, *, evaluated_at, gate_passed, failing, calibration):
    figures = {"n_tasks": 10, "errors": 0, "right_tool_pct": 70.0, "right_args_pct": 60.0, "calls_per_task": 1.0}
    figures |= {"tsq_mean": None, "agent_cost_usd": 0.0, "judge_cost_usd": 0.0}
    figures |= {"latency_ms_p50": 1.0, "latency_ms_p95": 2.0}
    models = {m: figures for m in ("a", "b")}
    judge = None
    if calibration is not None:
        passed, blocks = calibration
        judge = {
            "model": "local/catalog-judge",
            "polls": 3,
            "rubric_version": "0" * 12,
            "calibration": {"passed": passed, "blocks_promotion": blocks, "mode": "fail" if blocks else "warn"},
        }
    gate = {
        "passed": gate_passed,
        "max_drop_points": MAX_DROP_POINTS,
        "failures": [{"model": m, "metric": "right_tool_pct", "reason": "dropped"} for m in failing],
    }
    document = {
        "release_id": release_id,
        "kind": "release",
        "suite": "s",
        "evaluated_at": evaluated_at,
        "models": models,
        "judge": judge,
        "gate": gate,
    }
    (root / release_id).mkdir(parents=True)
    (root / release_id / "scores.json").write_text(json.dumps(document), encoding="utf-8")


def test_report_rows_show_each_releases_calibration_and_a_failed_one_never_reads_pass(tmp_path):
    root = tmp_path / "releases"
    write_release(
        root, "r1", evaluated_at="2026-01-01T00:00:00Z", gate_passed=True, failing=[], calibration=(True, False)
    )
    write_release(
        root, "r2", evaluated_at="2026-01-02T00:00:00Z", gate_passed=True, failing=[], calibration=(False, True)
    )
    write_release(
        root, "r3", evaluated_at="2026-01-03T00:00:00Z", gate_passed=True, failing=[], calibration=(False, False)
    )
    write_release(root, "r4", evaluated_at="2026-01-04T00:00:00Z", gate_passed=False, failing=["b"], calibration=None)
    points = load_trend(tmp_path)
    assert {(p.release_id, p.model): p.model_failed for p in points if p.release_id == "r4"} == {
        ("r4", "a"): False,
        ("r4", "b"): True,
    }
    _, rows = trend_rows(points)
    status = {row[0]: (row[2], row[3]) for row in rows}
    assert status == {
        "r1": ("pass", "pass"),
        "r2": ("FAIL (calibration)", "FAIL"),  # exit 4: never promoted
        "r3": ("pass", "warn"),
        "r4": ("FAIL", "–"),
    }
