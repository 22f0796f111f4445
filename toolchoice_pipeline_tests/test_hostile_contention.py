"""Two ``toolchoice run`` of one ``--release`` at once (issue 29): the second is refused at once, one line naming
the running process, exit 2, and no Dagster run of its own; a lock left by a killed run is taken over.

Real parts: the installed console script as two concurrent processes, the ``sim/`` provider slowed down so the
first run is still running, the data dir's real Dagster instance."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import dagster as dg
import pytest

from toolchoice_pipeline.cli.run import opened_instance
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline.util.run_lock import lock_path, release_lock
from toolchoice_pipeline_tests.pipeline_helpers import TOOLCHOICE, copy_data, toolchoice
from toolchoice_pipeline_tests.test_hostile_exit_codes import assert_one_error_line


def slow_data(tmp_path):
    data_dir = copy_data(tmp_path / "data")
    (data_dir / "toolchoice.yaml").write_text(
        "models:\n  - model: sim/slow\n    params: {sim_latency_ms: 300}\n    max_concurrency: 1\n", encoding="utf-8"
    )
    return data_dir


def runs_of(data_dir, release_id: str) -> list:
    os.environ["DAGSTER_HOME"] = str(data_dir / "dagster_home")
    with opened_instance(data_dir / "dagster_home") as instance:
        return instance.get_runs(dg.RunsFilter(tags={"dagster/partition": release_id}))


@pytest.mark.slow
def test_a_second_run_of_a_running_release_is_refused_and_a_killed_runs_lock_is_taken_over(tmp_path, monkeypatch):
    data_dir = slow_data(tmp_path)
    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true"}
    env.pop("TOOLCHOICE_DATA_DIR", None)
    first = subprocess.Popen(
        [str(TOOLCHOICE), "run", "--data-dir", str(data_dir), "--release", "c1", "--no-judge"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        # Running for sure: its lock names it and its Dagster run has pinned the snapshot.
        while not (data_dir / "releases" / "c1" / "snapshot.json").exists():
            assert first.poll() is None and time.monotonic() < deadline, "the first run did not start"
            time.sleep(0.2)
        holder = json.loads(lock_path(data_dir, "c1").read_text())
        assert holder["pid"] == first.pid

        second = toolchoice("run", "--data-dir", str(data_dir), "--release", "c1", "--no-judge")
        assert first.poll() is None, "the first run ended before the second was tried: make it slower"
        line = assert_one_error_line(second, 2, "'c1' is already running", f"pid {first.pid} on host", "since 20")
        assert second.stdout == ""
        assert len(runs_of(data_dir, "c1")) == 1  # the refused run created no Dagster run
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    assert "Traceback" not in line

    # The killed run's lock file is still there, naming a dead pid: the next run takes it over and resumes.
    third = toolchoice("run", "--data-dir", str(data_dir), "--release", "c1", "--no-judge", timeout=600)
    assert third.returncode == 0, third.stderr
    assert json.loads(lock_path(data_dir, "c1").read_text())["pid"] != first.pid
    runs = runs_of(data_dir, "c1")
    assert sorted(run.status.value for run in runs) == ["FAILURE", "SUCCESS"]  # the killed one, marked failed


def test_the_lock_is_refused_while_held_and_free_after(tmp_path):
    with release_lock(tmp_path, "r1"):
        with pytest.raises(InputError) as refused:
            with release_lock(tmp_path, "r1"):
                pass
        assert f"pid {os.getpid()}" in str(refused.value.problems[0])
        with release_lock(tmp_path, "r2"):  # another release is not held back
            pass
    with release_lock(tmp_path, "r1"):  # released when the holder's block ends
        pass
