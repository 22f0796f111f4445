"""SIGTERM and SIGINT at several moments of ``toolchoice run`` (issue 29): one documented ending each (SIGINT
exit 130, SIGTERM exit 143 with a ``terminated (SIGTERM)`` line), nothing published, and the same command
resumes. Real parts: the installed console script as a process, the data dir's real Dagster instance, the
agents or the judge on an OpenAI-compatible server on 127.0.0.1 that holds their calls while the test signals
the run (run_processes.py), the ``sim/`` provider for the others."""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3

import pytest

from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline_tests.pipeline_helpers import DEMO_SUITE, copy_data, query, trim_tasks
from toolchoice_pipeline_tests.run_processes import (
    VERDICT,
    held_calls,
    run_in_process,
    served,
    start_run,
    wait_until,
)

pytestmark = pytest.mark.slow

FAST_AGENT = "{model: sim/agent, params: {sim_latency_ms: 10}, max_concurrency: 1}"
FAST_JUDGE = "{model: sim/judge, params: {sim_latency_ms: 10}, max_concurrency: 1}"


def two_task_data(tmp_path, agent: str = FAST_AGENT, judge: str = FAST_JUDGE):
    """Two demo tasks (enough to be in the middle of a stage), ``agent`` and a one-poll ``judge`` (model entries
    of ``toolchoice.yaml``)."""
    data_dir = copy_data(tmp_path / "data")
    trim_tasks(data_dir, 2)
    (data_dir / "toolchoice.yaml").write_text(
        f"models:\n  - {agent}\njudge:\n  model: {judge}\n  polls: 1\n  calibration: warn\n", encoding="utf-8"
    )
    return data_dir


def interrupted_run(data_dir, release_id: str, marker, signum: int):
    """``toolchoice run --no-judge`` signalled with ``signum`` once ``marker()`` is true: (exit code, output)."""
    process = start_run(data_dir, release_id, "--no-judge")
    try:
        wait_until("the moment to signal", marker, process)
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, stdout + stderr


MOMENTS = {
    # the lock is taken before the suite is checked and the Dagster run is created
    "before-the-dagster-run": lambda data_dir, server: (data_dir / "locks" / "s1.lock").exists(),
    # an agent's call is in flight in the agents' step (held by the server until the run is signalled)
    "during-the-agents": lambda data_dir, server: server.held.is_set(),
}


@pytest.mark.parametrize(
    ("moment", "signum", "code"),
    [
        ("before-the-dagster-run", signal.SIGTERM, 143),
        ("during-the-agents", signal.SIGTERM, 143),
        ("during-the-agents", signal.SIGINT, 130),
    ],
)
def test_a_signal_ends_the_run_one_documented_way_and_publishes_nothing(tmp_path, capsys, moment, signum, code):
    with held_calls() as server:
        data_dir = two_task_data(tmp_path, agent=served("agent", server))
        returncode, output = interrupted_run(data_dir, "s1", lambda: MOMENTS[moment](data_dir, server), signum)
        assert returncode == code, output
        assert "Traceback" not in output
        assert "run the same command again to resume" in output
        assert ("terminated (SIGTERM): exit 143" in output) == (signum == signal.SIGTERM), output
        assert not (data_dir / "releases" / "s1" / "scores.json").exists()
        assert not (data_dir / "releases" / "baseline.json").exists()
        if moment == "during-the-agents" and signum == signal.SIGTERM:
            server.release()
            resumed = run_in_process(capsys, data_dir, "s1", "--no-judge")  # the same command
            assert resumed.returncode == 0, resumed.stderr
            assert (data_dir / "releases" / "s1" / "scores.json").exists()


# --- every stage, and a parent that ignores SIGINT -------------------------------------------------------------
# Each moment is reached deterministically: the test waits for what the run writes or asks when it gets there,
# and keeps the run there while it signals: the server holds the agents' or the judge's next call, or the test
# holds a lock the run needs next (the publishing lock of the release, or the store's lock the promotion takes).

STAGES = {
    # stage: (what the run has done on reaching it, lock the test holds meanwhile, the steps it may name).
    # "held" is a call the server holds; "step:<key>" is Dagster's STEP_START event of that step in the run's
    # event log.
    # the first task's calls are answered and in the call journal; the next agent call is held
    "agents": (("held", "cache/agent_calls.sqlite"), None, ("agent_runs",)),
    # the judge's first poll is held
    "judging": (("held",), None, ("judge_votes",)),
    # task_scores started; publishing after it waits for the lock
    "scoring": (("step:task_scores",), "releases/{id}/.publish.lock", ("task_scores", "release_scores")),
    # release_scores started: it waits for the publishing lock
    "publishing": (("step:release_scores",), "releases/{id}/.publish.lock", ("release_scores",)),
    # scores.json is written; the promotion waits for the store's lock
    "promotion": (("releases/{id}/scores.json",), "releases/.lock", ("release_scores", "baseline")),
}


@contextlib.contextmanager
def staged_data(tmp_path, stage: str):
    """Two demo tasks, a fast agent and a one-poll judge on the sim provider; the agent (its first task's two
    calls answered) or the judge (answering ``VERDICT``) on a server that holds its next call when that is
    the stage to catch. Yields ``(data_dir, server)``."""
    answered = {"agents": 2, "judging": 0}.get(stage, 0)
    with held_calls(answered, reply_text=VERDICT if stage == "judging" else None) as server:
        agent = served("agent", server) if stage == "agents" else FAST_AGENT
        judge = served("judge", server) if stage == "judging" else FAST_JUDGE
        yield two_task_data(tmp_path, agent, judge), server


def reached(data_dir, server, marker: str) -> bool:
    """Whether the run got to ``marker``: ``held``, the server holds a call; ``step:<key>``, the run's event log
    holds the step's start; the call journal, it holds a call of the suite's first task; else the file exists."""
    if marker == "held":
        return server.held.is_set()
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


def run_interrupted_at(data_dir, server, stage: str, signum: int, *, ignore_sigint: bool):
    from filelock import FileLock

    markers, hold, _ = STAGES[stage]
    lock = None
    if hold is not None:
        (data_dir / hold.format(id="s1")).parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(data_dir / hold.format(id="s1")))
        lock.acquire()
    process = start_run(
        data_dir,
        "s1",
        "--kind",
        "release",
        # as a shell starts a background job, or as nohup and some CI runners do
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None,
    )
    try:
        wait_until(
            f"the {stage} stage", lambda: all(reached(data_dir, server, m.format(id="s1")) for m in markers), process
        )
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=300)
    finally:
        if lock is not None:
            lock.release()
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, stdout + stderr


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
def test_a_signal_at_any_stage_publishes_nothing_and_the_same_command_resumes(
    tmp_path, capsys, stage, signum, ignore_sigint
):
    with staged_data(tmp_path, stage) as (data_dir, server):
        returncode, output = run_interrupted_at(data_dir, server, stage, signum, ignore_sigint=ignore_sigint)
        assert returncode == (143 if signum == signal.SIGTERM else 130), output
        assert "Traceback" not in output
        assert "run the same command again to resume" in output
        assert any(f"interrupted (Ctrl-C) during {step}" in output for step in STAGES[stage][2]), output
        # nothing visible as finished: no scores.json, not in the warehouse's views, no baseline
        assert not (data_dir / "releases" / "s1" / "scores.json").exists()
        assert not (data_dir / "releases" / "baseline.json").exists()
        assert published_rows(data_dir) == 0
        server.release()
        # the same command, in this process (a resume needs no process of its own)
        resumed = run_in_process(capsys, data_dir, "s1", "--kind", "release")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert (data_dir / "releases" / "s1" / "scores.json").exists()
        assert published_rows(data_dir) == 1
        assert ReleaseStore(data_dir).baseline(DEMO_SUITE) == "s1"


def published_rows(data_dir) -> int:
    """The release's rows in the warehouse's ``release_scores`` view (none before the warehouse exists)."""
    if not (data_dir / "warehouse" / "toolchoice.duckdb").exists():
        return 0
    return query(data_dir, "SELECT count(*) FROM release_scores WHERE release_id = 's1'")[0][0]
