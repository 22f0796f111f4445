"""Two ``toolchoice run`` of one ``--release`` at once (issue 29): the second is refused at once, one line naming
the running process, exit 2, and no Dagster run of its own; a lock left by a killed run is taken over.

Real parts: the installed console script as two concurrent processes, the data dir's real Dagster instance,
whose only provider slot the test holds so the first run is still running (run_processes.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import dagster as dg
import pytest

from toolchoice_pipeline.cli.run import dagster_home
from toolchoice_pipeline.defs.pools import PROVIDERS_POOL
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline.util.run_lock import lock_path, release_lock
from toolchoice_pipeline_tests.pipeline_helpers import copy_data, toolchoice, trim_tasks
from toolchoice_pipeline_tests.run_processes import (
    HOLDER,
    hold_pool_slots,
    run_in_process,
    start_run,
    wait_until,
    waiting_in_pool,
)
from toolchoice_pipeline_tests.test_hostile_exit_codes import assert_one_error_line

SHARD = "agent_runs.run_agent_shard"


def runs_of(instance, release_id: str) -> list:
    return instance.get_runs(dg.RunsFilter(tags={"dagster/partition": release_id}))


@pytest.mark.slow
def test_a_second_run_of_a_running_release_is_refused_and_a_killed_runs_lock_is_taken_over(tmp_path, capsys):
    data_dir = copy_data(tmp_path / "data")
    trim_tasks(data_dir, 2)
    with dg.DagsterInstance.from_config(str(dagster_home(data_dir))) as instance:
        storage = hold_pool_slots(instance, (PROVIDERS_POOL, f"{SHARD}[x]"))
        first = start_run(data_dir, "c1", "--no-judge", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # Running for sure: its Dagster run waits for the provider slot the test holds, and its lock names it.
            wait_until(
                "the first run waiting for a provider slot",
                lambda: waiting_in_pool(instance, PROVIDERS_POOL, SHARD),
                first,
            )
            holder = json.loads(lock_path(data_dir, "c1").read_text())
            assert holder["pid"] == first.pid

            second = toolchoice("run", "--data-dir", str(data_dir), "--release", "c1", "--no-judge")
            assert first.poll() is None, "the first run ended before the second was tried"
            line = assert_one_error_line(second, 2, "'c1' is already running", f"pid {first.pid} on host", "since 20")
            assert second.stdout == ""
            assert len(runs_of(instance, "c1")) == 1  # the refused run created no Dagster run
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
        assert "Traceback" not in line
        storage.free_concurrency_slot_for_step(HOLDER, f"{SHARD}[x]")

        # The killed run's lock file is still there, naming a dead pid: the next run takes it over and resumes.
        third = run_in_process(capsys, data_dir, "c1", "--no-judge")  # the same command, in this process
        assert third.returncode == 0, third.stderr
        assert json.loads(lock_path(data_dir, "c1").read_text())["pid"] != first.pid
        runs = runs_of(instance, "c1")
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
