"""Resume after a run killed with SIGKILL (a real subprocess): no completed call asked again, same rows."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest

from toolchoice_pipeline.execution.runner import run_suite_sync
from toolchoice_pipeline.providers.sim import STATS
from toolchoice_pipeline.suites.config import RunConfig
from toolchoice_pipeline_tests.execution_support import numbered_tasks, write_suite

# Once as many episodes as its third argument says are done, the child says so and stops its event loop (a
# blocking wait in the progress callback, which runs on the loop): no call finishes after that, and the test
# kills it there.
CHILD = """
import json, sys, threading
from pathlib import Path
from toolchoice_pipeline.suites.config import RunConfig
from toolchoice_pipeline.execution.runner import run_suite_sync
from toolchoice_pipeline.suites.suite import load_suite

data_dir = Path(sys.argv[1])
config = RunConfig.model_validate(json.loads(sys.argv[2]))
suite = load_suite(data_dir, "demo", check=False)
pause_at, finished = int(sys.argv[3]), 0

def progress(model, done, total):
    global finished
    finished += 1
    print("done", model, done, flush=True)
    if finished == pause_at:
        print("paused", flush=True)
        threading.Event().wait()

print("started", flush=True)
run_suite_sync(suite, config, data_dir=data_dir, progress=progress)
print("finished", flush=True)
"""

N_TASKS = 20
CONFIG = {
    "models": [
        {"model": "sim/a", "params": {"sim_latency_ms": 5, "sim_seed": 1}},
        {"model": "sim/b", "params": {"sim_latency_ms": 5, "sim_seed": 2}},
    ],
    "concurrency": {"max_in_flight": 4, "per_model": 2},
}


def rows(episodes):
    return [
        (
            e.model,
            e.task_id,
            e.error,
            [
                (s.step, s.reply, s.prompt_tokens, s.completion_tokens, s.cost_usd, s.error, s.request_key)
                for s in e.steps
            ],
        )
        for e in episodes
    ]


@pytest.mark.slow
def test_a_killed_run_resumes_without_asking_a_completed_call_again(tmp_path):
    killed_dir, clean_dir = tmp_path / "killed", tmp_path / "clean"
    suite = write_suite(killed_dir, numbered_tasks(N_TASKS))
    config = RunConfig.model_validate(CONFIG)
    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true"}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(killed_dir), json.dumps(CONFIG), str(N_TASKS)],  # half of the episodes
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    for line in child.stdout:
        if line.startswith("paused"):
            os.kill(child.pid, signal.SIGKILL)
            break
    child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL

    journal = killed_dir / config.cache.path
    before = {row[0] for row in sqlite3.connect(journal).execute("SELECT request_key FROM agent_calls")}
    assert N_TASKS <= len(before) < 2 * N_TASKS

    STATS.reset()
    resumed = run_suite_sync(suite, config, data_dir=killed_dir)
    asked = [s.request_key for e in resumed for s in e.steps if not s.cache_hit]
    reused = [s.request_key for e in resumed for s in e.steps if s.cache_hit]
    assert not set(asked) & before  # no completed call was asked again
    assert set(reused) == before  # and every one of them was used
    assert STATS.completed == len(asked) == 2 * N_TASKS - len(before)

    clean = run_suite_sync(write_suite(clean_dir, numbered_tasks(N_TASKS)), config, data_dir=clean_dir)
    assert all(e.error is None for e in resumed)
    assert rows(resumed) == rows(clean)
