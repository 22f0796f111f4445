"""Runs whose process died: marked failed at the next start, so automation never waits on a dead run.

``toolchoice run`` executes its Dagster run in its own process and tags it with that process's host and pid
(:func:`process_tags`). A SIGKILL (or a crash of the machine) leaves such a run ``STARTED`` for ever, and with
``max_concurrent_runs: 1`` the daemon would queue the sensor's and schedule's runs behind it. Every
``toolchoice run``, every ``catalog_change`` tick and every ``nightly_eval`` evaluation first calls
:func:`fail_dead_runs`: a started run tagged with this host whose process is gone is reported failed. Runs the
daemon launched are watched by Dagster's own run monitoring (``run_monitoring`` in ``dagster.yaml``). The pool
slots (:mod:`.pools`) a dead run's steps held are freed with it.
"""

from __future__ import annotations

import os
import socket

import dagster as dg

HOST_TAG = "toolchoice/host"
PID_TAG = "toolchoice/pid"
IN_PROGRESS = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]


def process_tags() -> dict[str, str]:
    """The tags naming the process that executes a run in-process (``toolchoice run``)."""
    return {HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def fail_dead_runs(instance: dg.DagsterInstance, log=None) -> list[str]:
    """Report failed every in-progress run of this host whose tagged process is gone; returns their run ids."""
    host = socket.gethostname()
    failed = []
    for run in instance.get_runs(dg.RunsFilter(statuses=IN_PROGRESS, tags={HOST_TAG: host})):
        pid = run.tags.get(PID_TAG, "")
        if not pid.isdigit() or _alive(int(pid)) or int(pid) == os.getpid():
            continue
        instance.report_run_failed(
            run,
            message=f"the process of this run (pid {pid} on {host}) is gone: marked "
            "failed by toolchoice at the next start",
        )
        if instance.event_log_storage.supports_global_concurrency_limits:  # the pool slots its steps held
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        failed.append(run.run_id)
        if log is not None:
            log.warning(f"run {run.run_id} marked failed: its process (pid {pid}) is gone")
    return failed
