"""``toolchoice run``'s exit codes and words (issue 14): an unreachable provider stops the run before scoring
(exit 3, the cause named); missing keys give one line per model naming agent or judge; "none yet" for a missing
baseline; a re-run says how many calls came from the call journal; a check that passed with a warning says so.

Real parts: the console script in a subprocess (the unreachable provider's exit 3, as the shell sees it), the CLI
in this process for the words of the other runs, LiteLLM calling an OpenAI-compatible address on 127.0.0.1 where
nothing listens, the local agents, Dagster, Parquet. The runs are of the demo trimmed to TASKS tasks.
"""

from __future__ import annotations

import re
import socket

import dagster as dg
import pytest
import yaml

from toolchoice_pipeline.cli import cli, run_guarded
from toolchoice_pipeline.cli.run import _check_line
from toolchoice_pipeline_tests.pipeline_helpers import copy_data, toolchoice, trim_tasks
from toolchoice_pipeline_tests.small_runs import toolchoice_here

pytestmark = pytest.mark.slow

TASKS = 8


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _set_models(data_dir, models: list, judge: str | None = None) -> None:
    path = data_dir / "toolchoice.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["models"] = models
    config["retries"] = {"max_attempts": 1, "initial_wait_s": 0, "max_wait_s": 0}
    if judge is not None:
        config["judge"]["model"] = judge
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def test_an_unreachable_provider_stops_the_run_before_scoring_with_exit_3_and_the_cause(tmp_path, monkeypatch):
    data_dir = copy_data(tmp_path / "data")
    trim_tasks(data_dir, TASKS)
    port = _closed_port()
    _set_models(
        data_dir,
        [
            {"model": "local/bm25-router"},
            {"model": "openai/gpt-4o-mini", "params": {"api_base": f"http://127.0.0.1:{port}/v1"}},
        ],
    )
    monkeypatch.setenv("OPENAI_API_KEY", "test-" + "placeholder")  # a key must be set; nothing can accept it
    done = toolchoice("run", "--data-dir", str(data_dir), "--release", "u1", "--no-judge")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "gate" not in done.stdout
    errors = [line for line in done.stderr.splitlines() if line.startswith(("error:", "  agent_runs:"))]
    assert errors[0].startswith("error: the run failed before the release was scored")
    assert errors[1].startswith(
        "  agent_runs: model unavailable for release u1, nothing scored: openai/gpt-4o-mini: "
        "provider unreachable: could not connect"
    )
    assert not (data_dir / "releases" / "u1" / "scores.json").exists()
    assert "Traceback" not in done.stderr


def test_missing_keys_give_one_line_per_model_naming_agent_or_judge(tmp_path, monkeypatch, capsys):
    data_dir = copy_data(tmp_path / "data")
    _set_models(
        data_dir,
        [{"model": "openai/gpt-4o-mini"}, {"model": "anthropic/claude-3-5-haiku-latest"}],
        judge="openai/gpt-4o-mini",
    )
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code = run_guarded(cli, ["run", "--data-dir", str(data_dir), "--release", "k1"])
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: agent and judge openai/gpt-4o-mini: no API key: set OPENAI_API_KEY in the environment (keys are "
        "read from the environment only, never from files)",
        "error: agent anthropic/claude-3-5-haiku-latest: no API key: set ANTHROPIC_API_KEY in the environment "
        "(keys are read from the environment only, never from files)",
    ]


def test_a_failed_gate_without_baseline_says_none_yet_and_a_rerun_counts_the_journal(tmp_path, capsys):
    data_dir = copy_data(tmp_path / "data")
    n_tasks = len(trim_tasks(data_dir, TASKS))
    replay = data_dir / "half.jsonl"
    replay.write_text("", encoding="utf-8")  # no line for any task: every episode is an infrastructure error
    _set_models(data_dir, [{"model": "local/bm25-router"}, {"model": f"replay/{replay.name}"}])
    first = toolchoice_here(capsys, "run", "--data-dir", str(data_dir), "--release", "n1", "--no-judge")
    assert first.returncode == 1, first.stdout + first.stderr
    assert "gate FAILED for replay/half.jsonl against baseline (none yet):" in first.stdout
    assert "None" not in first.stdout
    [calls] = re.findall(r"^agent model calls: (\d+), none from the call journal$", first.stdout, re.MULTILINE)
    assert int(calls) >= n_tasks  # at least one call per task of the local agent (the replay has no line to call)
    again = toolchoice_here(capsys, "run", "--data-dir", str(data_dir), "--release", "n2", "--no-judge")
    # The local agent's calls come from the journal; the replay's failed calls (one per task) are not journaled,
    # so asked again.
    assert (
        f"agent model calls: {calls}, {int(calls) - n_tasks} from the call journal (their cost and latency are "
        "those recorded when they were made)"
    ) in again.stdout


def test_a_check_that_passed_with_a_warning_is_printed_as_a_warning_not_a_failure():
    warned = dg.AssetCheckEvaluation(
        asset_key=dg.AssetKey("judge_votes"),
        check_name="judge_calibration",
        passed=False,
        severity=dg.AssetCheckSeverity.WARN,
        description="judge calibration passed, with a warning: the canary scored 0.50",
    )
    failed = dg.AssetCheckEvaluation(
        asset_key=dg.AssetKey("task_scores"),
        check_name="task_scores_complete",
        passed=False,
        severity=dg.AssetCheckSeverity.ERROR,
        description="3 missing",
    )
    assert _check_line(warned) == (
        "check warning judge_calibration: judge calibration passed, with a warning: the canary scored 0.50"
    )
    assert _check_line(failed) == "check failed task_scores_complete: 3 missing"
