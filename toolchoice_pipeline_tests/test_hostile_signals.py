"""SIGTERM and SIGINT at several moments of ``toolchoice run`` (issue 29): one documented ending each (SIGINT
exit 130, SIGTERM exit 143 with a ``terminated (SIGTERM)`` line), nothing published, and the same command
resumes. Real parts: the installed console script as a process, the ``sim/`` provider slowed down, the data
dir's real Dagster instance."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from toolchoice_pipeline_tests.pipeline_helpers import DEMO_SUITE, TOOLCHOICE, copy_data, toolchoice

pytestmark = pytest.mark.slow


def slow_data(tmp_path):
    data_dir = copy_data(tmp_path / "data")
    tasks = data_dir / "suites" / DEMO_SUITE / "tasks.jsonl"
    tasks.write_text("\n".join(tasks.read_text().splitlines()[:8]) + "\n")
    (data_dir / "toolchoice.yaml").write_text(
        "models:\n  - model: sim/slow\n    params: {sim_latency_ms: 1500}\n    max_concurrency: 1\n", encoding="utf-8"
    )
    return data_dir


def interrupted_run(data_dir, release_id: str, wait_for: str, signum: int):
    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true"}
    env.pop("TOOLCHOICE_DATA_DIR", None)
    process = subprocess.Popen(
        [str(TOOLCHOICE), "run", "--data-dir", str(data_dir), "--release", release_id, "--no-judge"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    while not (data_dir / wait_for).exists():
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=300)
    return process.returncode, stdout + stderr


MOMENTS = {
    # the lock is taken before the suite is checked and the Dagster run is created
    "before-the-dagster-run": "locks/{id}.lock",
    # the call journal is opened when the agents' step starts; their calls take 1.5 s each after it
    "during-the-agents": "cache/agent_calls.sqlite",
}


@pytest.mark.parametrize(
    ("moment", "signum", "code"),
    [
        ("before-the-dagster-run", signal.SIGTERM, 143),
        ("during-the-agents", signal.SIGTERM, 143),
        ("during-the-agents", signal.SIGINT, 130),
    ],
)
def test_a_signal_ends_the_run_one_documented_way_and_publishes_nothing(tmp_path, moment, signum, code):
    data_dir = slow_data(tmp_path)
    returncode, output = interrupted_run(data_dir, "s1", MOMENTS[moment].format(id="s1"), signum)
    assert returncode == code, output
    assert "Traceback" not in output
    assert "run the same command again to resume" in output
    assert ("terminated (SIGTERM): exit 143" in output) == (signum == signal.SIGTERM), output
    assert not (data_dir / "releases" / "s1" / "scores.json").exists()
    assert not (data_dir / "releases" / "baseline.json").exists()
    if moment == "during-the-agents" and signum == signal.SIGTERM:
        resumed = toolchoice("run", "--data-dir", str(data_dir), "--release", "s1", "--no-judge", timeout=600)
        assert resumed.returncode == 0, resumed.stderr
        assert (data_dir / "releases" / "s1" / "scores.json").exists()
