"""Two ``toolchoice run --kind release`` at once on one fresh data dir (issue 10): neither crashes (the first use
of the Dagster instance is serialised), neither exits 1 for anything but its gate, and the release promoted
second was gated against the one promoted first: a release is gated against the baseline in force when it is
promoted. Real parts: the installed console script as two processes, the local models, Parquet and DuckDB; the demo
trimmed to 8 tasks (both runs start at once: what they contend for is the first use of the instance and the
promotion to baseline, not the tasks)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from toolchoice_pipeline_tests.pipeline_helpers import TOOLCHOICE, copy_data, read_scores, trim_tasks

pytestmark = pytest.mark.slow


def start(data_dir, release_id: str) -> subprocess.Popen:
    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true", "COLUMNS": "200"}
    env.pop("TOOLCHOICE_DATA_DIR", None)
    return subprocess.Popen(
        [
            str(TOOLCHOICE),
            "run",
            "--data-dir",
            str(data_dir),
            "--release",
            release_id,
            "--kind",
            "release",
            "--no-judge",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_concurrent_release_runs_are_each_gated_against_the_baseline_in_force_when_promoted(tmp_path):
    data_dir = copy_data(tmp_path / "data")
    trim_tasks(data_dir, 8)
    runs = {release_id: start(data_dir, release_id) for release_id in ("rA", "rB")}
    outcomes = {release_id: (run.wait(timeout=900), run.stderr.read()) for release_id, run in runs.items()}
    for release_id, (code, stderr) in outcomes.items():
        assert "alembic_version" not in stderr, stderr
        assert code == 0, f"{release_id} exited {code}: {stderr}"
    history = [
        entry["release_id"]
        for entry in json.loads((data_dir / "releases" / "baseline.json").read_text(encoding="utf-8"))["suites"][
            "coding_agent"
        ]["history"]
    ]
    assert sorted(history) == ["rA", "rB"]
    first, second = history
    assert read_scores(data_dir, first)["baseline_release_id"] is None
    later = read_scores(data_dir, second)
    assert later["baseline_release_id"] == first and later["gate"]["passed"]
