"""The trend's chart marks failed gates and the baseline, and its Markdown table (shown in the Dagster UI) says
the same (issue 14)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import pytest

from toolchoice_pipeline.releases.report import TrendPoint, render_chart, trend_figure, trend_markdown


def _points() -> list[TrendPoint]:
    rows = [("r1", True, 80.0), ("r2", True, 82.5), ("r3", False, 60.0)]
    return [
        TrendPoint(
            release_id=r,
            kind="release",
            suite="s",
            model=m,
            right_tool_pct=v - i,
            right_args_pct=v - 10 - i,
            tsq_mean=None,
            gate_passed=passed,
            model_failed=not passed and m == "local/a",  # r3's gate failed on local/a's drops only
            calibration="pass",
        )
        for r, passed, v in rows
        for i, m in enumerate(("local/a", "local/b"))
    ]


def test_the_chart_marks_failed_gates_and_the_baseline():
    fig = trend_figure(_points(), baseline="r2")
    try:
        for axis in fig.axes:
            ticks = {t.get_text(): mcolors.to_hex(t.get_color()) for t in axis.get_xticklabels()}
            assert ticks == {"r1": "#000000", "r2 (baseline)": "#000000", "r3": "#ff0000"}
            crosses = [tuple(xy) for c in axis.collections for xy in c.get_offsets()]
            assert len(crosses) == 1 and round(crosses[0][0]) == 2  # at r3, on the line of the model that failed
            [failing] = [line for line in axis.get_lines() if line.get_label() == "local/a"]
            assert crosses[0][0] == failing.get_xdata()[2] and crosses[0][1] == failing.get_ydata()[2]
            dashed = [line for line in axis.get_lines() if line.get_linestyle() == "--"]
            assert [tuple(line.get_xdata()) for line in dashed] == [(1, 1)]  # the baseline, r2
        legend = [t.get_text() for t in fig.legends[0].get_texts()]
        assert legend == ["local/a", "gate failed", "local/b", "baseline"]
    finally:
        plt.close(fig)


def test_without_a_failed_gate_or_baseline_nothing_is_marked(tmp_path):
    points = [p for p in _points() if p.release_id != "r3"]
    fig = trend_figure(points)
    try:
        assert all(
            not axis.collections and all(line.get_linestyle() != "--" for line in axis.get_lines()) for axis in fig.axes
        )
    finally:
        plt.close(fig)
    assert render_chart(points, tmp_path / "t.png").stat().st_size > 1000


def test_the_trend_markdown_names_the_baseline_and_the_failed_gate():
    assert trend_markdown(_points(), baseline="r2").splitlines() == [
        "| release | kind | gate | calibration | local/a (right tool % / right args %) "
        "| local/b (right tool % / right args %) |",
        "|---|---|---|---|---:|---:|",
        "| r1 | release | pass | pass | 80.00 / 70.00 | 79.00 / 69.00 |",
        "| r2 (baseline) | release | pass | pass | 82.50 / 72.50 | 81.50 / 71.50 |",
        "| r3 | release | FAIL | pass | 60.00 / 50.00 | 59.00 / 49.00 |",
    ]


@pytest.mark.slow
def test_the_dagster_ui_shows_the_trend_and_the_gate_report_and_paths_are_absolute(tmp_path, monkeypatch):
    import dagster as dg

    from toolchoice_pipeline_tests.pipeline_helpers import (
        check_evaluations,
        copy_data,
        dagster_instance,
        materialise,
        materialised_assets,
        read_scores,
        trim_tasks,
    )

    trim_tasks(copy_data(tmp_path / "data"), 8)  # a release of 8 demo tasks: the trend needs one point
    monkeypatch.chdir(tmp_path)  # a relative data directory, as a daemon run started from the project has
    with dagster_instance(tmp_path / "home") as instance:
        result = materialise(Path("data"), instance, "r1", kind="release", judge=False)
    assert result.success
    metadata = materialised_assets(result)["release_scores"].metadata
    assert isinstance(metadata["trend"], dg.MarkdownMetadataValue)
    rows = metadata["trend"].value.splitlines()
    assert rows[0].startswith("| release | kind | gate | calibration | local/bm25-router (right tool % / right args %)")
    router = read_scores(tmp_path / "data", "r1")["models"]["local/bm25-router"]
    # not judged: no calibration
    assert rows[2].startswith(
        f"| r1 | release | pass | – | {router['right_tool_pct']:.2f} / {router['right_args_pct']:.2f} |"
    )
    assert Path(metadata["scores_json"].value).is_absolute() and Path(metadata["scores_json"].value).is_file()
    assert "trend_chart" not in metadata  # drawn only when asked: `toolchoice run --chart`, `toolchoice report`
    gate = check_evaluations(result)["release_gate"].metadata
    assert isinstance(gate["gate_report"], dg.MarkdownMetadataValue)
    assert gate["gate_report"].value == (tmp_path / "data" / "releases" / "r1" / "gate.md").read_text(encoding="utf-8")
    assert gate["gate_report"].value.startswith("## Gate")
