"""A SIGKILLed ``toolchoice run`` (issue 10): its Dagster run, left ``STARTED`` by the dead process, is marked
failed by the next ``catalog_change`` tick, and the run that tick requests then goes through; killed while
judging, it resumes without asking a finished poll again. Real parts: the installed console script as a
process, a real Dagster instance on the data dir's ``dagster_home``, the judge on an OpenAI-compatible server on
127.0.0.1 that holds its calls while the test kills the run (run_processes.py)."""

from __future__ import annotations

import signal
import subprocess

import dagster as dg
import pytest

from toolchoice_pipeline.cli.run import opened_instance
from toolchoice_pipeline.defs.resources import ToolchoiceResource
from toolchoice_pipeline.defs.sensors import catalog_change
from toolchoice_pipeline_tests.pipeline_helpers import copy_data, materialise, set_description, trim_tasks
from toolchoice_pipeline_tests.run_processes import (
    VERDICT,
    held_calls,
    run_in_process,
    served,
    start_run,
    wait_until,
)

pytestmark = pytest.mark.slow


def runs_of(instance, release_id: str) -> list:
    return instance.get_runs(dg.RunsFilter(tags={"toolchoice/release": release_id}))


def test_a_sigkilled_run_is_marked_failed_at_the_next_tick_and_the_sensor_run_goes_through(tmp_path, monkeypatch):
    data_dir = copy_data(tmp_path / "data")
    trim_tasks(data_dir, 2)
    home = data_dir / "dagster_home"
    process = start_run(data_dir, "k1", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    try:
        # The snapshot is pinned by the run's first step: the run is STARTED from then on.
        wait_until("the run's start", (data_dir / "releases" / "k1" / "snapshot.json").exists, process)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    resources = {"toolchoice": ToolchoiceResource(data_dir=str(data_dir))}
    with opened_instance(home) as instance:
        [killed] = runs_of(instance, "k1")
        assert killed.status == dg.DagsterRunStatus.STARTED

        with dg.build_sensor_context(instance=instance, cursor=None, resources=resources) as context:
            first = catalog_change(context)
        assert instance.get_run_by_id(killed.run_id).status == dg.DagsterRunStatus.FAILURE
        failure = [
            e for e in instance.all_logs(killed.run_id) if e.dagster_event_type == dg.DagsterEventType.RUN_FAILURE
        ]
        assert failure and "is gone" in failure[-1].message

        set_description(data_dir, "Bash", "A utility.")
        with dg.build_sensor_context(instance=instance, cursor=first.cursor, resources=resources) as context:
            tick = catalog_change(context)
        [run] = tick.run_requests
        result = materialise(data_dir, instance, run.partition_key, kind="catalog-change", judge=False)
        assert result.success
        in_progress = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
        assert in_progress == []


def journaled_polls(data_dir, release_id: str) -> int:
    import sqlite3

    path = data_dir / "cache" / "judge_polls.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(str(path), timeout=30) as db:
        try:
            return db.execute("SELECT count(*) FROM judge_polls WHERE resume_key = ?", [release_id]).fetchone()[0]
        except sqlite3.OperationalError:  # the table is being created
            return 0


def test_a_run_killed_during_judging_resumes_without_re_asking_a_finished_poll(tmp_path, monkeypatch, capsys):
    data_dir = copy_data(tmp_path / "data")
    trim_tasks(data_dir, 5)  # 15 polls of the tasks' episodes journaled (the canary's are not), one at a time
    # Once 10 polls are journaled, the judge holds every call (one more may be answered while the 10th is being
    # written): the run is killed in the middle of judging, with at least 10 polls finished.
    hold = lambda body: journaled_polls(data_dir, "kj") >= 10  # noqa: E731
    with held_calls(hold=hold, reply_text=VERDICT) as judge:
        config = data_dir / "toolchoice.yaml"
        config.write_text(
            config.read_text(encoding="utf-8").replace(
                "model: local/catalog-judge", f"model: {served('judge', judge)}"
            ),
            encoding="utf-8",
        )
        process = start_run(data_dir, "kj", "--models", "local/name-match", stdout=subprocess.DEVNULL)
        try:
            wait_until("10 finished polls and a held one", judge.held.is_set, process)
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        finished = journaled_polls(data_dir, "kj")
        judge.release()
        # the same command, in this process
        resumed_run = run_in_process(capsys, data_dir, "kj", "--models", "local/name-match")
    assert resumed_run.returncode == 0, resumed_run.stderr
    monkeypatch.setenv("DAGSTER_HOME", str(data_dir / "dagster_home"))
    with opened_instance(data_dir / "dagster_home") as instance:
        event = instance.get_latest_materialization_event(dg.AssetKey("judge_votes"))
        metadata = event.asset_materialization.metadata
    asked, resumed = metadata["judge_polls_asked"].value, metadata["judge_polls_resumed"].value
    assert resumed == finished >= 10
    assert asked + resumed == metadata["n_votes"].value
