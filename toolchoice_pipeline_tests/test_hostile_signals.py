"""SIGTERM and SIGINT at several moments of ``toolchoice run`` (issue 29): one documented ending each (SIGINT
exit 130, SIGTERM exit 143 with a ``terminated (SIGTERM)`` line), nothing published, and the same command
resumes. Real parts: the installed console script as a process, the ``sim/`` provider slowed down, the data
dir's real Dagster instance."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import time

import pytest

from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline_tests.pipeline_helpers import DEMO_SUITE, TOOLCHOICE, copy_data, query, toolchoice

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


# --- every stage, and a parent that ignores SIGINT -------------------------------------------------------------
# Each moment is reached deterministically: the test waits for a file the run writes when it gets there, and
# where the run would pass the moment too fast it holds a lock the run needs next (the publishing lock of the
# release, or the store's lock the promotion takes), so the signal lands before the run can go past it.

STAGES = {
    # stage: (what the run has written on reaching it, lock the test holds meanwhile, the steps it may name).
    # "step:<key>" is Dagster's STEP_START event of that step in the run's event log.
    # the first agent call of a task of the suite is in the call journal; three more take 1.5 s each
    "agents": ("cache/agent_calls.sqlite", None, ("agent_runs",)),
    # the judge's journal is opened; each poll takes 1.5 s
    "judging": ("cache/judge_polls.sqlite", None, ("judge_votes",)),
    # task_scores started; publishing after it waits for the lock
    "scoring": ("step:task_scores", "releases/{id}/.publish.lock", ("task_scores", "release_scores")),
    # release_scores started: it waits for the publishing lock
    "publishing": ("step:release_scores", "releases/{id}/.publish.lock", ("release_scores",)),
    # scores.json is written; the promotion waits for the store's lock
    "promotion": ("releases/{id}/scores.json", "releases/.lock", ("release_scores", "baseline")),
}


def staged_data(tmp_path, stage: str):
    """Four demo tasks, a fast agent and a one-poll judge on the sim provider; the judge is slow (1.5 s a poll)
    when judging is the stage to catch, the agents when the agents are."""
    data_dir = copy_data(tmp_path / "data")
    tasks = data_dir / "suites" / DEMO_SUITE / "tasks.jsonl"
    tasks.write_text("\n".join(tasks.read_text().splitlines()[:4]) + "\n")
    agent_ms, judge_ms = (1500 if stage == "agents" else 10), (1500 if stage == "judging" else 10)
    (data_dir / "toolchoice.yaml").write_text(
        f"models:\n  - model: sim/agent\n    params: {{sim_latency_ms: {agent_ms}}}\n    max_concurrency: 1\n"
        f"judge:\n  model: {{model: sim/judge, params: {{sim_latency_ms: {judge_ms}}}, max_concurrency: 1}}\n"
        "  polls: 1\n  calibration: warn\n",
        encoding="utf-8",
    )
    return data_dir


def reached(data_dir, marker: str) -> bool:
    """Whether the run wrote ``marker``; for the call journal, whether it holds a call of a suite's task; for
    ``step:<key>``, whether the run's event log holds the step's start."""
    if marker.startswith("step:"):
        return any(
            step_started(run_log, marker[5:]) for run_log in (data_dir / "dagster_home/history/runs").glob("*-*.db")
        )
    path = data_dir / marker
    if not path.exists():
        return False
    if marker != "cache/agent_calls.sqlite":
        return True
    first_task = json.loads((data_dir / "suites" / DEMO_SUITE / "tasks.jsonl").read_text().splitlines()[0])["id"]
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)) as journal:
        try:
            return journal.execute("SELECT count(*) FROM agent_calls WHERE task_id = ?", [first_task]).fetchone()[0] > 0
        except sqlite3.OperationalError:  # the table is not created yet
            return False


def step_started(run_log, step_key: str) -> bool:
    with contextlib.closing(sqlite3.connect(f"file:{run_log}?mode=ro", uri=True, timeout=5)) as log:
        try:
            query_text = "SELECT count(*) FROM event_logs WHERE dagster_event_type = 'STEP_START' AND step_key = ?"
            return log.execute(query_text, [step_key]).fetchone()[0] > 0
        except sqlite3.OperationalError:  # not created yet, or busy
            return False


def run_interrupted_at(data_dir, stage: str, signum: int, *, ignore_sigint: bool):
    from filelock import FileLock

    wait_for, hold, _ = STAGES[stage]
    command = [str(TOOLCHOICE), "run", "--data-dir", str(data_dir), "--release", "s1", "--kind", "release"]
    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true"}
    env.pop("TOOLCHOICE_DATA_DIR", None)
    lock = None
    if hold is not None:
        (data_dir / hold.format(id="s1")).parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(data_dir / hold.format(id="s1")))
        lock.acquire()
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as a shell starts a background job, or as nohup and some CI runners do
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None,
    )
    try:
        deadline = time.monotonic() + 300
        while not reached(data_dir, wait_for.format(id="s1")):
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.05)
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=300)
    finally:
        if lock is not None:
            lock.release()
        if process.poll() is None:
            process.kill()
    return process.returncode, stdout + stderr, command, env


@pytest.mark.parametrize(
    ("stage", "signum", "ignore_sigint"),
    [
        ("agents", signal.SIGINT, True),
        ("judging", signal.SIGTERM, True),
        ("judging", signal.SIGINT, False),
        ("scoring", signal.SIGINT, True),
        ("publishing", signal.SIGTERM, False),
        ("promotion", signal.SIGTERM, True),
        ("promotion", signal.SIGINT, False),
    ],
)
def test_a_signal_at_any_stage_publishes_nothing_and_the_same_command_resumes(tmp_path, stage, signum, ignore_sigint):
    data_dir = staged_data(tmp_path, stage)
    returncode, output, command, env = run_interrupted_at(data_dir, stage, signum, ignore_sigint=ignore_sigint)
    assert returncode == (143 if signum == signal.SIGTERM else 130), output
    assert "Traceback" not in output
    assert "run the same command again to resume" in output
    assert any(f"interrupted (Ctrl-C) during {step}" in output for step in STAGES[stage][2]), output
    # nothing visible as finished: no scores.json, not in the warehouse's views, no baseline
    assert not (data_dir / "releases" / "s1" / "scores.json").exists()
    assert not (data_dir / "releases" / "baseline.json").exists()
    assert published_rows(data_dir) == 0
    resumed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (data_dir / "releases" / "s1" / "scores.json").exists()
    assert published_rows(data_dir) == 1
    assert ReleaseStore(data_dir).baseline(DEMO_SUITE) == "s1"


def published_rows(data_dir) -> int:
    """The release's rows in the warehouse's ``release_scores`` view (none before the warehouse exists)."""
    if not (data_dir / "warehouse" / "toolchoice.duckdb").exists():
        return 0
    return query(data_dir, "SELECT count(*) FROM release_scores WHERE release_id = 's1'")[0][0]
