"""Gates per model that say whose (issue 30): a reference model with ``gate: false`` (or left out of
``--gate-models``) is reported but never fails the release; a failed gate names the model that failed it.
Releases are published from records (real Parquet, DuckDB, scores.json); the CLI runs in-process."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from toolchoice_pipeline.cli import cli
from toolchoice_pipeline.cli.common import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_OK, run_guarded
from toolchoice_pipeline.cli.run_display import print_outcome
from toolchoice_pipeline.releases.document import GateDocument
from toolchoice_pipeline.releases.gate import check_gate, gate_junit_xml, gate_markdown
from toolchoice_pipeline.releases.gate_scope import exempt, failed_models
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.suites.config import RunConfig, load_run_config
from toolchoice_pipeline_tests.release_helpers import make_suite, publish

REAL, REFERENCE = "local/a", "local/name-match"


def figures(right_tool: float, n: int = 73) -> dict:
    return {"n_tasks": n, "errors": 0, "right_tool_pct": right_tool, "right_args_pct": right_tool}


def test_a_not_gated_reference_is_reported_but_does_not_fail_the_release():
    baseline = {REAL: figures(80.0), REFERENCE: figures(60.0)}
    now = {REAL: figures(79.5), REFERENCE: figures(50.0)}  # the reference drops 10 points, the real model 0.5
    gated = check_gate("r2", now, "r1", baseline)
    assert not gated.passed and failed_models(gated) == [REFERENCE]
    result = exempt(gated, [REFERENCE])
    assert result.passed and result.failures == []
    reference = result.models[REFERENCE]
    assert reference.status == "not_gated"
    assert any(note.startswith("would fail: right_tool_pct dropped 10.0 points") for note in reference.notes)
    assert [c.drop for c in reference.comparisons] == [10.0, 10.0]  # its figures are still compared and shown
    document = GateDocument.model_validate(result.to_json())
    assert document.passed and document.not_gated == [REFERENCE] and document.failures == []
    assert f"| `{REFERENCE}` | not gated | 60.00 → 50.00 |" in gate_markdown(result, now, baseline)
    assert "<failure" not in gate_junit_xml(result)
    # The real model still gates: its own drop fails the release whatever the reference does.
    now[REAL] = figures(70.0)
    again = exempt(check_gate("r2", now, "r1", baseline), [REFERENCE])
    assert not again.passed and failed_models(again) == [REAL]
    assert failed_models(again.to_json()) == [REAL]


def test_gate_false_and_gate_models_in_the_configuration(tmp_path):
    (tmp_path / "toolchoice.yaml").write_text(
        f"models:\n  - model: {REAL}\n  - model: {REFERENCE}\n    gate: false\n", encoding="utf-8"
    )
    config = load_run_config(tmp_path)
    assert config.ungated_models() == [REFERENCE]
    assert config.with_gate_models([REFERENCE]).ungated_models() == [REAL]
    assert config.with_gate_models(None) is config
    with pytest.raises(ValueError, match="not a model of this run: local/other"):
        config.with_gate_models(["local/other"])
    assert RunConfig.model_validate({"models": [REAL]}).ungated_models() == []


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """Two releases, published once for the tests that read them (the ``gate`` command writes nothing back)."""
    tmp_path = tmp_path_factory.mktemp("releases")
    suite = make_suite(40)
    publish(tmp_path, suite, "r1")
    # local/b regresses (4 tasks of 40 go wrong: 10 points); local/a is unchanged.
    published = publish(
        tmp_path,
        suite,
        "r2",
        models={"local/a": {}, "local/b": {"wrong_tool": {"t01", "t03", "t05", "t07"}}},
        ungated=("local/b",),
    )
    return tmp_path, published


def test_published_release_keeps_its_not_gated_models_and_the_gate_command_can_choose(releases, capsys):
    data_dir, published = releases
    assert published.gate.passed and published.gate.models["local/b"].status == "not_gated"
    stored = ReleaseStore(data_dir).read_scores("r2")
    assert stored.gate.passed and stored.gate.not_gated == ["local/b"]
    assert json.loads(ReleaseStore(data_dir).scores_path("r2").read_text())["gate"]["not_gated"] == ["local/b"]
    # A re-check gates as the release was gated ...
    assert run_guarded(cli, ["gate", "r2", "--data-dir", str(data_dir)]) == EXIT_OK
    assert "| `local/b` | not gated |" in capsys.readouterr().out
    # ... unless --gate-models says otherwise: then local/b fails it, and the exit message names it.
    code = run_guarded(cli, ["gate", "r2", "--gate-models", "local/a,local/b", "--data-dir", str(data_dir)])
    captured = capsys.readouterr()
    assert code == EXIT_GATE_FAILED
    assert "gate failed for local/b (exit 1)" in captured.err
    assert run_guarded(cli, ["gate", "r2", "--gate-models", "local/zz", "--data-dir", str(data_dir)]) == EXIT_BAD_INPUT
    assert "--gate-models" in capsys.readouterr().err


def test_the_run_summary_names_the_models_that_failed(releases, capsys):
    data_dir, _ = releases
    store = ReleaseStore(data_dir)
    scores = store.read_scores("r2")
    failed = exempt(check_gate("r2", scores.models, "r1", store.read_scores("r1").models), [])
    scores = scores.model_copy(update={"gate": GateDocument.model_validate(failed.to_json())})
    assert not print_outcome(scores, data_dir, SimpleNamespace(agent_calls=None, check_messages=[], run_id="x"))
    out = capsys.readouterr().out
    assert "gate FAILED for local/b against baseline" in out
    reported = store.read_scores("r2")
    assert print_outcome(reported, data_dir, SimpleNamespace(agent_calls=None, check_messages=[], run_id="x"))
    out = capsys.readouterr().out
    assert "not gated: local/b" in out and "local/b: would fail: right_tool_pct dropped 10.0 points" in out


@pytest.mark.slow
def test_toolchoice_run_gate_models_reaches_the_published_gate(demo_copy, capsys, monkeypatch):
    """``toolchoice run`` in this process (``main``'s guard; the words and exit codes are the console script's), of
    the demo trimmed to 8 tasks, from the directory holding ``data``."""
    from toolchoice_pipeline_tests.pipeline_helpers import trim_tasks
    from toolchoice_pipeline_tests.small_runs import toolchoice_here

    trim_tasks(demo_copy / "data", 8)
    monkeypatch.chdir(demo_copy)
    bad = toolchoice_here(
        capsys, "run", "--release", "x", "--gate-models", "local/nope", "--no-judge", "--data-dir", "data"
    )
    assert bad.returncode == 2 and "--gate-models" in bad.stderr and "Traceback" not in bad.stderr
    done = toolchoice_here(
        capsys, "run", "--release", "g1", "--gate-models", "local/bm25-router", "--no-judge", "--data-dir", "data"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "not gated local/name-match" in done.stdout  # the run's first line
    assert "not gated: local/name-match" in done.stdout
    scores = json.loads((demo_copy / "data" / "releases" / "g1" / "scores.json").read_text())
    assert scores["gate"]["not_gated"] == ["local/name-match"]
    request = json.loads((demo_copy / "data" / "releases" / "g1" / "request.json").read_text())
    assert request["gate_models"] == ["local/bm25-router"]
