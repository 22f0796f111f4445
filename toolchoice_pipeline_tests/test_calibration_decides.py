"""Calibration decides, end to end through ``toolchoice run``: a failed judge calibration (here: no canary
session to judge) exits 4 and keeps the release from becoming the baseline, saying plainly why; with
``judge.calibration: warn`` it is a warning, the run exits 0 and the release is promoted.

Real parts: the console script in a subprocess (exit 4 as the shell sees it; the warning's run, exit 0, runs in
this process through ``main``'s guard), the local agents and judge through LiteLLM, Dagster, Parquet; the
demo trimmed to 8 tasks and one judge poll per episode (the calibration that fails is the canary's, which is not
there whatever the tasks and polls).
"""

from __future__ import annotations

import json

import pytest

from toolchoice_pipeline_tests.pipeline_helpers import copy_data, read_scores, toolchoice, trim_tasks
from toolchoice_pipeline_tests.small_runs import set_judge_polls, toolchoice_here

pytestmark = pytest.mark.slow


def without_canary(data_dir):
    """A data directory whose own canary session (it overrides the packaged one) cannot be read; 8 tasks, 1 poll."""
    trim_tasks(data_dir, 8)
    set_judge_polls(data_dir, 1)
    (data_dir / "sessions").mkdir(exist_ok=True)
    (data_dir / "sessions" / "canary.jsonl").write_text("not a session\n", encoding="utf-8")
    return data_dir


def arguments(data_dir, release_id) -> list[str]:
    return [
        "run",
        "--data-dir",
        str(data_dir),
        "--release",
        release_id,
        "--kind",
        "release",
        "--models",
        "local/bm25-router",
    ]


def baseline_of(data_dir):
    path = data_dir / "releases" / "baseline.json"
    return json.loads(path.read_text())["suites"].get("coding_agent", {}).get("release_id") if path.exists() else None


def test_a_failed_calibration_exits_4_and_blocks_promotion_saying_why(tmp_path):
    data_dir = without_canary(copy_data(tmp_path / "data"))
    done = toolchoice(*arguments(data_dir, "r1"))
    assert done.returncode == 4, done.stdout + done.stderr
    calibration = read_scores(data_dir, "r1")["judge"]["calibration"]
    assert calibration["passed"] is False and calibration["blocks_promotion"] is True
    assert "could not be checked: there is no canary session to judge" in calibration["message"]
    assert "toothless" not in calibration["message"]
    assert "gate passed" in done.stdout and "the release is not promoted" in done.stdout
    assert baseline_of(data_dir) is None


def test_with_calibration_warn_a_failed_calibration_is_a_warning(tmp_path, capsys):
    data_dir = without_canary(copy_data(tmp_path / "data"))
    config = data_dir / "toolchoice.yaml"
    config.write_text(config.read_text().replace("calibration: fail", "calibration: warn", 1))
    done = toolchoice_here(capsys, *arguments(data_dir, "r1"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning" in done.stdout and "judge.calibration: warn" in done.stdout
    assert read_scores(data_dir, "r1")["judge"]["calibration"]["blocks_promotion"] is False
    assert baseline_of(data_dir) == "r1"
