"""What ``toolchoice run`` prints at the end (issue 14, the README tried as a new user): the gate line when a
suite has no baseline (an adhoc run of a suite that has had releases before is not its "first release"), and the
scores table whole in a CI log (no header cut to "calls/t…"), and no line of text broken there (found on 3.11 and
3.13: the paths line and the advice lines were cut at 160 columns)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from toolchoice_pipeline.cli.run_display import print_outcome
from toolchoice_pipeline.releases.document import (
    CalibrationInfo,
    GateDocument,
    JudgeInfo,
    ModelCalibration,
    ReleaseDocument,
)
from toolchoice_pipeline.scoring.summary import ModelScores
from toolchoice_pipeline_tests.test_judge_cost import figures_of


def _document(baseline: str | None) -> ReleaseDocument:
    return ReleaseDocument(
        release_id="adhoc-2",
        kind="adhoc",
        suite="s",
        baseline_release_id=baseline,
        models={"local/m": ModelScores.model_validate(figures_of(4))},
        gate=GateDocument(passed=True, max_drop_points=2.0, baseline_release_id=baseline),
    )


def _gate_line(capsys, tmp_path, baseline: str | None) -> str:
    result = SimpleNamespace(agent_calls=None, check_messages=[], run_id="run-1")
    assert print_outcome(_document(baseline), tmp_path, result) is True
    [line] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("gate ")]
    return line


def test_a_passed_gate_without_baseline_says_how_a_release_becomes_one(capsys, tmp_path):
    line = _gate_line(capsys, tmp_path, None)
    assert line == (
        "gate passed against baseline (none yet: only a --kind release run whose gate passes becomes the baseline)"
    )
    assert "first release" not in line


def test_a_passed_gate_names_its_baseline(capsys, tmp_path):
    assert _gate_line(capsys, tmp_path, "r1") == "gate passed against baseline r1"


def test_off_a_terminal_the_scores_table_is_printed_whole(capsys, tmp_path):
    document = _document(None)
    long_model = "replay/suites/my_recorded_sessions_of_last_week/replay.jsonl"
    document.models[long_model] = document.models["local/m"]
    result = SimpleNamespace(agent_calls=None, check_messages=[], run_id="run-1")
    print_outcome(document, tmp_path, result)
    out = capsys.readouterr().out
    assert "…" not in out
    header = next(line for line in out.splitlines() if "model" in line and "tasks" in line)
    for title in ("calls/task", "unjudged", "judge tokens", "pass@k %"):
        assert title in header, header
    assert long_model in out
    assert len(header) > 160  # wider than the console's default off a terminal: the reason for the test


def test_off_a_terminal_no_line_of_text_is_broken(capsys, tmp_path):
    deep = tmp_path / ("a-data-directory-with-a-long-name-" * 4)
    result = SimpleNamespace(agent_calls=None, check_messages=[], run_id="dea7484c-c46b-4f27-a36a-701d068a9807")
    print_outcome(_document(None), deep, result)
    lines = capsys.readouterr().out.splitlines()
    [paths] = [line for line in lines if line.startswith("scores: ")]
    assert len(paths) > 160  # longer than the console's width off a terminal: the reason for the test
    assert paths == (
        f"scores: {deep / 'releases' / 'adhoc-2' / 'scores.json'} · gate report: "
        f"{deep / 'releases' / 'adhoc-2' / 'gate.md'} · Dagster run dea7484c-c46b-4f27-a36a-701d068a9807"
    )
    assert not any(line.startswith("dea7484c") for line in lines)


def test_the_readme_sample_output_has_the_columns_toolchoice_run_prints(capsys, tmp_path):
    # Found stale on the 3.11/3.13 new-user pass: p50/p95 ms were shown before pass^k/pass@k.
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    [sample] = [line for line in readme.splitlines() if line.startswith("┃ model ")]
    result = SimpleNamespace(agent_calls=None, check_messages=[], run_id="run-1")
    # The sample is the demo's run: judged, with the judge's agreement per model (the judge κ column).
    document = _document(None)
    document.judge = JudgeInfo(
        model="local/catalog-judge",
        polls=3,
        rubric_version="0" * 12,
        calibration=CalibrationInfo(passed=True, per_model={"local/m": ModelCalibration(kappa=0.5, n_labelled=73)}),
    )
    print_outcome(document, tmp_path, result)
    [printed] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("┃ model ")]
    assert [cell.strip() for cell in sample.split("┃")] == [cell.strip() for cell in printed.split("┃")]
