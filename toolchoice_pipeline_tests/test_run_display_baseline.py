"""The gate line of ``toolchoice run`` when a suite has no baseline (issue 14, the README tried as a new user):
an adhoc run of a suite that has had releases before must not be called its "first release"."""

from __future__ import annotations

from types import SimpleNamespace

from toolchoice_pipeline.cli.run_display import print_outcome
from toolchoice_pipeline.releases.document import GateDocument, ReleaseDocument
from toolchoice_pipeline.scoring.summary import ModelScores
from toolchoice_pipeline_tests.test_judge_cost import figures_of


def _document(baseline: str | None) -> ReleaseDocument:
    return ReleaseDocument(release_id="adhoc-2", kind="adhoc", suite="s", baseline_release_id=baseline,
                           models={"local/m": ModelScores.model_validate(figures_of(4))},
                           gate=GateDocument(passed=True, max_drop_points=2.0, baseline_release_id=baseline))


def _gate_line(capsys, tmp_path, baseline: str | None) -> str:
    result = SimpleNamespace(agent_calls=None, check_messages=[], run_id="run-1")
    assert print_outcome(_document(baseline), tmp_path, result) is True
    [line] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("gate ")]
    return line


def test_a_passed_gate_without_baseline_says_how_a_release_becomes_one(capsys, tmp_path):
    line = _gate_line(capsys, tmp_path, None)
    assert line == ("gate passed against baseline (none yet: only a --kind release run whose gate passes becomes "
                    "the baseline)")
    assert "first release" not in line


def test_a_passed_gate_names_its_baseline(capsys, tmp_path):
    assert _gate_line(capsys, tmp_path, "r1") == "gate passed against baseline r1"
