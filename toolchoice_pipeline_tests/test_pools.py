"""Dagster pools (defs/pools.py): the provider-calling shard ops and the warehouse writer are in pools whose limits
live in the instance, and a ``toolchoice run`` (which executes its run in its own process, outside the daemon's
run queue) waits for a slot like any other run. The waits are observed through the instance's concurrency info,
never by a clock."""

from __future__ import annotations

import os
import subprocess
import time

import dagster as dg
import pytest

from toolchoice_pipeline.cli.run import dagster_home
from toolchoice_pipeline.defs.pools import (
    DEFAULT_POOL_LIMITS,
    PROVIDERS_POOL,
    WAREHOUSE_POOL,
    ensure_pool_limits,
)
from toolchoice_pipeline_tests.pipeline_helpers import TOOLCHOICE, copy_data, dagster_instance, read_scores

HOLDER = "another-run"  # a run of the same instance holding a slot (its step keys are those of a release run)
WAIT_LIMIT_S = 600  # a bound for a hung run only: every wait below ends on what the instance says


def test_the_shard_ops_and_the_warehouse_writers_are_in_their_pools():
    from toolchoice_pipeline.definitions import defs

    job = defs.resolve_job_def("release_job")
    pools = {node.name: node.pool for node in job.all_node_defs if isinstance(node, dg.OpDefinition) and node.pool}
    assert pools == {
        "run_agent_shard": PROVIDERS_POOL,
        "judge_shard": PROVIDERS_POOL,
        "release_scores": WAREHOUSE_POOL,
        "baseline": WAREHOUSE_POOL,
    }
    assert DEFAULT_POOL_LIMITS[WAREHOUSE_POOL] == 1


def test_pool_limits_are_set_once_and_a_changed_limit_is_kept(tmp_path):
    with dagster_instance(tmp_path / "home") as instance:
        storage = instance.event_log_storage
        assert ensure_pool_limits(instance) == DEFAULT_POOL_LIMITS
        assert {pool.name: pool.limit for pool in storage.get_pool_limits()} == DEFAULT_POOL_LIMITS
        storage.set_concurrency_slots(PROVIDERS_POOL, 9)  # as `dagster instance concurrency set` or the UI does
        assert ensure_pool_limits(instance) == {}
        assert {pool.name: pool.limit for pool in storage.get_pool_limits()} == {
            PROVIDERS_POOL: 9,
            WAREHOUSE_POOL: 1,
        }


def test_the_instance_default_limit_does_not_replace_the_pools_own(tmp_path):
    """With ``concurrency: pools: default_limit`` in dagster.yaml, a pool initialised from the default is given
    the project's limit: the warehouse stays at one writer."""
    overrides = {"concurrency": {"pools": {"default_limit": 3}}}
    with dagster_instance(tmp_path / "home", overrides=overrides) as instance:
        storage = instance.event_log_storage
        storage.initialize_concurrency_limit_to_default(WAREHOUSE_POOL)
        assert ensure_pool_limits(instance) == DEFAULT_POOL_LIMITS
        assert {pool.name: pool.limit for pool in storage.get_pool_limits()}[WAREHOUSE_POOL] == 1


def _waiting(instance: dg.DagsterInstance, pool: str, step_prefix: str) -> list[str]:
    """The run ids with a step starting with ``step_prefix`` waiting for a slot of ``pool`` (not assigned one)."""
    info = instance.event_log_storage.get_concurrency_info(pool)
    return sorted(
        {
            step.run_id
            for step in info.pending_steps
            if step.assigned_timestamp is None and step.step_key.startswith(step_prefix) and step.run_id != HOLDER
        }
    )


def _done_steps(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.STEP_SUCCESS).records
    return [record.event_log_entry.step_key or "" for record in records]


def _wait_for(what: str, found, process: subprocess.Popen):
    deadline = time.monotonic() + WAIT_LIMIT_S
    while not (result := found()):
        if process.poll() is not None:
            raise AssertionError(f"the run ended ({process.returncode}) before {what}: {process.stderr.read()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {WAIT_LIMIT_S} s")
        time.sleep(0.5)
    return result


@pytest.mark.slow
def test_a_cli_run_waits_for_the_provider_and_the_warehouse_slots_another_run_holds(tmp_path):
    """Another run of the same data directory holds the only provider slot and the warehouse slot: a
    ``toolchoice run`` started beside it shows its first shard waiting in the providers pool, no shard done;
    given the provider slot, it runs its shards and then waits to commit, with no ``scores.json`` written; given the
    warehouse slot, it commits and exits 0. Every claim is released at the end."""
    data_dir = copy_data(tmp_path / "data")
    home = dagster_home(data_dir)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        storage = instance.event_log_storage
        ensure_pool_limits(instance)
        storage.set_concurrency_slots(PROVIDERS_POOL, 1)
        assert storage.claim_concurrency_slot(PROVIDERS_POOL, HOLDER, "agent_runs.run_agent_shard[x]").is_claimed
        assert storage.claim_concurrency_slot(WAREHOUSE_POOL, HOLDER, "release_scores").is_claimed

        env = {**os.environ, "LITELLM_OFFLINE_MODE": "true", "COLUMNS": "200"}
        env.pop("TOOLCHOICE_DATA_DIR", None)
        process = subprocess.Popen(
            [str(TOOLCHOICE), "run", "--data-dir", str(data_dir), "--release", "r1", "--no-judge"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            [run_id] = _wait_for(
                "a shard waiting for a provider slot",
                lambda: _waiting(instance, PROVIDERS_POOL, "agent_runs.run_agent_shard"),
                process,
            )
            assert not [key for key in _done_steps(instance, run_id) if key.startswith("agent_runs.run_agent_shard")]
            assert _waiting(instance, WAREHOUSE_POOL, "release_scores") == []
            assert instance.get_run_by_id(run_id).tags["toolchoice/release"] == "r1"

            storage.free_concurrency_slot_for_step(HOLDER, "agent_runs.run_agent_shard[x]")
            assert _wait_for(
                "release_scores waiting for the warehouse slot",
                lambda: _waiting(instance, WAREHOUSE_POOL, "release_scores"),
                process,
            ) == [run_id]
            assert [key for key in _done_steps(instance, run_id) if key.startswith("agent_runs.run_agent_shard")]
            assert not (data_dir / "releases" / "r1" / "scores.json").exists()
            assert [slot.run_id for slot in storage.get_concurrency_info(WAREHOUSE_POOL).claimed_slots] == [HOLDER]

            storage.free_concurrency_slot_for_step(HOLDER, "release_scores")
            stdout, stderr = process.communicate(timeout=WAIT_LIMIT_S)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert process.returncode == 0, stderr
        assert read_scores(data_dir, "r1")["release_id"] == "r1"
        for pool in (PROVIDERS_POOL, WAREHOUSE_POOL):
            info = storage.get_concurrency_info(pool)
            assert info.claimed_slots == [] and info.pending_step_count == 0


@pytest.mark.slow
def test_a_killed_cli_runs_place_in_a_pool_is_given_up_when_it_is_marked_failed(tmp_path):
    """A ``toolchoice run`` SIGKILLed while its shard waits for a provider slot leaves that step queued in the pool
    (a dead run first in line would be given the next free slot); marking the dead run failed removes it."""
    from toolchoice_pipeline.defs.dead_runs import fail_dead_runs

    data_dir = copy_data(tmp_path / "data")
    home = dagster_home(data_dir)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        storage = instance.event_log_storage
        ensure_pool_limits(instance)
        storage.set_concurrency_slots(PROVIDERS_POOL, 1)
        assert storage.claim_concurrency_slot(PROVIDERS_POOL, HOLDER, "agent_runs.run_agent_shard[x]").is_claimed
        env = {**os.environ, "LITELLM_OFFLINE_MODE": "true"}
        env.pop("TOOLCHOICE_DATA_DIR", None)
        process = subprocess.Popen(
            [str(TOOLCHOICE), "run", "--data-dir", str(data_dir), "--release", "k1", "--no-judge"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            [run_id] = _wait_for(
                "a shard waiting for a provider slot",
                lambda: _waiting(instance, PROVIDERS_POOL, "agent_runs.run_agent_shard"),
                process,
            )
        finally:
            process.kill()
            process.wait()
        assert _waiting(instance, PROVIDERS_POOL, "agent_runs.run_agent_shard") == [run_id]  # still in line
        assert fail_dead_runs(instance) == [run_id]
        info = storage.get_concurrency_info(PROVIDERS_POOL)
        assert run_id not in {step.run_id for step in info.pending_steps}
        assert [slot.run_id for slot in info.claimed_slots] == [HOLDER]
