"""The regression gate: each rule of DESIGN §2, the flipped tasks, Markdown, JUnit XML, and ``toolchoice gate``."""

import json
import xml.etree.ElementTree as ET

import pyarrow as pa
import pytest

from toolchoice_pipeline.cli import cli
from toolchoice_pipeline.cli.common import run_guarded
from toolchoice_pipeline.releases.gate import check_gate, gate_junit_xml, gate_markdown, task_flips
from toolchoice_pipeline_tests.release_helpers import make_suite, publish


def figures(right_tool, right_args, n_tasks=100, errors=0):
    return {"n_tasks": n_tasks, "errors": errors, "right_tool_pct": right_tool, "right_args_pct": right_args}


def test_a_drop_of_more_than_two_points_fails_and_names_metric_and_figures():
    result = check_gate("r2", {"m": figures(81.25, 70.31)}, "r1", {"m": figures(84.38, 70.31)})
    assert not result.passed and result.models["m"].status == "failed"
    assert [f.model_dump(exclude={"reason"}) for f in result.failures] == [
        {"model": "m", "metric": "right_tool_pct", "baseline": 84.38, "now": 81.25, "drop": 3.13}
    ]


@pytest.mark.parametrize(("now", "passed"), [(82.38, True), (82.37, False), (90.0, True)])
def test_exactly_two_points_passes_and_anything_more_fails(now, passed):
    result = check_gate("r2", {"m": figures(now, 50.0)}, "r1", {"m": figures(84.38, 50.0)})
    assert result.passed is passed


def test_a_drop_in_right_arguments_alone_fails():
    result = check_gate("r2", {"m": figures(90.0, 60.0)}, "r1", {"m": figures(90.0, 62.5)})
    assert [f.metric for f in result.failures] == ["right_args_pct"] and not result.passed


def test_a_new_model_passes_with_a_note_and_a_missing_one_is_reported():
    result = check_gate("r2", {"new": figures(10.0, 5.0)}, "r1", {"gone": figures(90.0, 90.0)})
    assert result.passed
    assert result.models["new"].status == "new" and "new in this release" in result.models["new"].notes[0]
    assert result.models["gone"].status == "missing"
    gate = result.to_json()
    assert gate["new_models"] == ["new"] and gate["missing_models"] == ["gone"]


@pytest.mark.parametrize(("errors", "status"), [(5, "passed"), (6, "not_evaluated")])
def test_more_than_five_percent_infrastructure_errors_fails_as_not_evaluated(errors, status):
    result = check_gate("r2", {"m": figures(99.0, 99.0, errors=errors)}, "r1", {"m": figures(90.0, 90.0)})
    assert result.models["m"].status == status
    assert result.passed is (status == "passed")
    if status == "not_evaluated":
        assert result.failures[0].metric == "error_pct" and "not evaluated" in result.failures[0].reason


def test_not_evaluated_applies_without_a_baseline_too():
    result = check_gate("r1", {"m": figures(99.0, 99.0, errors=50)})
    assert not result.passed and result.to_json()["not_evaluated"] == ["m"]


def test_no_baseline_passes_every_model_as_new():
    result = check_gate("r1", {"a": figures(10.0, 1.0), "b": figures(99.0, 99.0)})
    assert result.passed and result.models_with("new") == ["a", "b"]
    assert result.to_json()["baseline_release_id"] is None


def scores_table(rows):
    return pa.table(
        {
            "model": [r[0] for r in rows],
            "task_id": [r[1] for r in rows],
            "right_tool": [r[2] for r in rows],
            "right_args": [r[3] for r in rows],
        }
    )


def test_flips_list_tasks_that_changed_in_each_direction_and_skip_unscored_ones():
    baseline = scores_table(
        [
            ("m", "t1", True, True),
            ("m", "t2", False, False),
            ("m", "t3", True, True),
            ("m", "t4", None, None),
            ("m", "t5", True, False),
            ("x", "t1", True, True),
        ]
    )
    now = scores_table(
        [
            ("m", "t1", False, False),
            ("m", "t2", True, True),
            ("m", "t3", True, True),
            ("m", "t4", False, False),
            ("m", "t5", True, True),
            ("m", "t6", False, False),
        ]
    )
    flips = task_flips(now, baseline)
    assert set(flips) == {"m"}
    assert flips["m"]["right_tool"].model_dump() == {"right_to_wrong": ["t1"], "wrong_to_right": ["t2"]}
    assert flips["m"]["right_args"].model_dump() == {"right_to_wrong": ["t1"], "wrong_to_right": ["t2", "t5"]}


def test_markdown_and_junit_name_the_failure_and_the_flipped_tasks():
    flips = task_flips(
        scores_table([("m", "t1", False, False), ("ok", "t1", True, True)]),
        scores_table([("m", "t1", True, True), ("ok", "t1", True, True)]),
    )
    models = {"m": figures(81.25, 70.31), "ok": figures(90.0, 90.0)}
    baseline = {"m": figures(84.38, 70.31), "ok": figures(90.0, 90.0), "gone": figures(1.0, 1.0)}
    result = check_gate("r2", models, "r1", baseline, flips)
    markdown = gate_markdown(result, models, baseline, "coding_agent")
    assert "## Gate FAILED: release `r2` against baseline `r1`" in markdown
    assert "| `m` | failed | 84.38 → 81.25 | 70.31 → 70.31 | 0/100 |" in markdown
    assert "right_tool_pct dropped 3.13 points" in markdown
    assert "- `m` right tool, right → wrong (1): `t1`" in markdown

    root = ET.fromstring(gate_junit_xml(result, "coding_agent"))
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    assert cases["m"].find("failure").get("type") == "regression"
    assert "t1" in cases["m"].find("failure").text
    assert cases["ok"].find("failure") is None and cases["ok"].find("skipped") is None
    assert cases["gone"].find("skipped") is not None


# --- toolchoice gate -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stored_releases(tmp_path_factory):
    """r1 and r2 (local/a's right tool drops on two tasks), published once for the module: its tests only read
    them (``toolchoice gate`` never writes a stored release; a test checks that)."""
    stored = tmp_path_factory.mktemp("gate")
    suite = make_suite(40)
    publish(stored, suite, "r1")
    publish(stored, suite, "r2", kind="nightly", models={"local/a": {"wrong_tool": {"t03", "t07"}}, "local/b": {}})
    return stored


def test_gate_command_exit_codes_and_junit(stored_releases, tmp_path, capsys):
    data = str(stored_releases)
    junit = tmp_path / "gate.xml"
    assert run_guarded(cli, ["gate", "r1", "--data-dir", data]) == 0
    assert run_guarded(cli, ["gate", "r2", "--data-dir", data, "--junit", str(junit)]) == 1
    out = capsys.readouterr().out
    assert "right_tool_pct dropped 5.0 points (100.0 → 95.0" in out and "`t03`, `t07`" in out
    failure = ET.parse(junit).getroot().find("testsuite/testcase[@name='local/a']/failure")
    assert failure is not None and "t03, t07" in failure.text
    assert run_guarded(cli, ["gate", "r2", "--baseline", "r2", "--data-dir", data]) == 0  # against itself
    assert run_guarded(cli, ["gate", "nope", "--data-dir", data]) == 2
    assert run_guarded(cli, ["gate", "../r1", "--data-dir", data]) == 2
    assert run_guarded(cli, ["gate", "r2", "--baseline", "nope", "--data-dir", data]) == 2
    assert "no finished release 'nope'" in capsys.readouterr().err


def test_gate_command_does_not_change_the_stored_release(stored_releases):
    path = stored_releases / "releases" / "r2" / "scores.json"
    before = path.read_bytes()
    assert run_guarded(cli, ["gate", "r2", "--data-dir", str(stored_releases)]) == 1
    assert path.read_bytes() == before
    assert json.loads(before)["gate"]["passed"] is False
