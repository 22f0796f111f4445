"""Helpers of the tests that start ``toolchoice run`` as a process and act on it at a chosen moment (signal it,
kill it, start another beside it): the process, a wait for a marker while it lives, and two ways to keep a run
at one moment for as long as the test needs, with no clock: model calls held by an OpenAI-compatible server on
127.0.0.1 until the test releases them, and a Dagster pool slot another run holds.

Real parts only: the installed console script, a real HTTP server, the data dir's real Dagster instance.
"""

from __future__ import annotations

import itertools
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from toolchoice_pipeline.execution.preflight import PREFLIGHT_MESSAGES
from toolchoice_pipeline_tests.openai_server import OpenAICompatibleServer
from toolchoice_pipeline_tests.pipeline_helpers import TOOLCHOICE, command_env
from toolchoice_pipeline_tests.small_runs import toolchoice_here

T = TypeVar("T")
#: A bound for a hung run only: every wait ends on what the run wrote or the instance says.
WAIT_LIMIT_S = 600
#: A run of the same Dagster instance holding pool slots (its step keys are those of a release run).
HOLDER = "another-run"
#: A judge's answer read as a valid vote (one request per poll); "incorrect", so the canary passes calibration.
VERDICT = '{"reasoning": "Another tool fits the request better.", "verdict": "incorrect"}'


def run_env() -> dict[str, str]:
    """The test's environment for a ``toolchoice`` process (:func:`pipeline_helpers.command_env`), without the
    caller's OpenAI key."""
    env = command_env()
    env.pop("OPENAI_API_KEY", None)
    return env


def run_command(data_dir: Path, release_id: str, *args: str) -> list[str]:
    return [str(TOOLCHOICE), "run", "--data-dir", str(data_dir), "--release", release_id, *args]


def start_run(data_dir: Path, release_id: str, *args: str, **popen: Any) -> subprocess.Popen:
    """``toolchoice run --data-dir DATA_DIR --release RELEASE_ID ARGS`` started as a process (text output piped
    unless ``popen`` says otherwise)."""
    options: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, **popen}
    return subprocess.Popen(run_command(data_dir, release_id, *args), env=run_env(), **options)


def wait_until(what: str, found: Callable[[], T], process: subprocess.Popen) -> T:
    """``found()``'s first true result, asked every 50 ms while ``process`` runs; an ``AssertionError`` naming
    ``what`` (with the process's output) if it ended first, or after :data:`WAIT_LIMIT_S` (a hung run)."""
    deadline = time.monotonic() + WAIT_LIMIT_S
    while not (result := found()):
        if process.poll() is not None:
            output = process.communicate() if process.stdout is not None or process.stderr is not None else ""
            raise AssertionError(f"the run ended ({process.returncode}) before {what}: {output}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {WAIT_LIMIT_S} s")
        time.sleep(0.05)
    return result


# --- model calls held -----------------------------------------------------------------------------------------


def after_calls(answered: int) -> Callable[[dict[str, Any]], bool]:
    """A server's ``hold``: the first ``answered`` model calls are answered, every later one is held. Preflight
    calls (a model's one call before its first real one) are always answered and not counted."""
    counted = itertools.count()
    return lambda body: body.get("messages") != PREFLIGHT_MESSAGES and next(counted) >= answered


@contextmanager
def held_calls(
    answered: int = 0, hold: Callable[[dict[str, Any]], bool] | None = None, **server: Any
) -> Iterator[OpenAICompatibleServer]:
    """An OpenAI-compatible server that answers ``answered`` model calls (or the calls ``hold`` says False for)
    and holds the next ones until its ``release()``; closed (everything released) when the block ends."""
    made = OpenAICompatibleServer(hold=hold or after_calls(answered), **server)
    try:
        yield made
    finally:
        made.close()


def served(model: str, server: OpenAICompatibleServer) -> str:
    """A model entry of ``toolchoice.yaml`` (inline YAML) for ``openai/<model>`` on ``server``, one call at a
    time."""
    return f"{{model: openai/{model}, params: {{api_base: '{server.api_base}'}}, max_concurrency: 1}}"


# --- pool slots held ------------------------------------------------------------------------------------------


def hold_pool_slots(instance: Any, *slots: tuple[str, str]) -> Any:
    """Set the data dir's pool limits (the providers pool to one slot) and claim each ``(pool, step key)`` slot
    for :data:`HOLDER`, as another run of the instance would. Returns the event log storage (its
    ``free_concurrency_slot_for_step(HOLDER, step_key)`` gives a slot back)."""
    from toolchoice_pipeline.defs.pools import PROVIDERS_POOL, ensure_pool_limits

    storage = instance.event_log_storage
    ensure_pool_limits(instance)
    storage.set_concurrency_slots(PROVIDERS_POOL, 1)
    for pool, step_key in slots:
        assert storage.claim_concurrency_slot(pool, HOLDER, step_key).is_claimed
    return storage


def waiting_in_pool(instance: Any, pool: str, step_prefix: str) -> list[str]:
    """The run ids (other than :data:`HOLDER`) with a step starting with ``step_prefix`` waiting for a slot of
    ``pool`` (not assigned one)."""
    info = instance.event_log_storage.get_concurrency_info(pool)
    return sorted(
        {
            step.run_id
            for step in info.pending_steps
            if step.assigned_timestamp is None and step.step_key.startswith(step_prefix) and step.run_id != HOLDER
        }
    )


# --- the same command in this process -------------------------------------------------------------------------


def run_in_process(capsys: Any, data_dir: Path, release_id: str, *args: str) -> subprocess.CompletedProcess:
    """``toolchoice run`` with :func:`run_command`'s arguments in this process (:func:`small_runs.toolchoice_here`):
    a ``CompletedProcess`` of its exit code and output."""
    return toolchoice_here(capsys, *run_command(data_dir, release_id, *args)[1:])
