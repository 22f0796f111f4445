"""Dagster pools (defs/pools.py): the provider-calling shard ops and the warehouse writer are in pools whose limits
live in the instance, and a ``toolchoice run`` (which executes its run in its own process, outside the daemon's
run queue) waits for a slot like any other run. The waits are observed through the instance's concurrency info,
never by a clock."""

from __future__ import annotations

import subprocess

import dagster as dg
import pytest

from toolchoice_pipeline.cli.run import dagster_home
from toolchoice_pipeline.defs.pools import (
    DEFAULT_POOL_LIMITS,
    PROVIDERS_POOL,
    WAREHOUSE_POOL,
    ensure_pool_limits,
)
from toolchoice_pipeline_tests.pipeline_helpers import copy_data, dagster_instance, read_scores, trim_tasks
from toolchoice_pipeline_tests.run_processes import HOLDER, hold_pool_slots, start_run, wait_until, waiting_in_pool

SHARD = "agent_runs.run_agent_shard"


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


def _done_steps(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.STEP_SUCCESS).records
    return [record.event_log_entry.step_key or "" for record in records]


@pytest.mark.slow
def test_a_cli_run_waits_for_the_provider_and_the_warehouse_slots_another_run_holds(tmp_path):
    """Another run of the same data directory holds the only provider slot and the warehouse slot: a
    ``toolchoice run`` started beside it shows its first shard waiting in the providers pool, no shard done;
    given the provider slot, it runs its shards and then waits to commit, with no ``scores.json`` written; given the
    warehouse slot, it commits and exits 0. Every claim is released at the end."""
    data_dir = copy_data(tmp_path / "data")
    trim_tasks(data_dir, 2)
    home = dagster_home(data_dir)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        storage = hold_pool_slots(instance, (PROVIDERS_POOL, f"{SHARD}[x]"), (WAREHOUSE_POOL, "release_scores"))
        process = start_run(data_dir, "r1", "--no-judge")
        try:
            [run_id] = wait_until(
                "a shard waiting for a provider slot", lambda: waiting_in_pool(instance, PROVIDERS_POOL, SHARD), process
            )
            assert not [key for key in _done_steps(instance, run_id) if key.startswith(SHARD)]
            assert waiting_in_pool(instance, WAREHOUSE_POOL, "release_scores") == []
            assert instance.get_run_by_id(run_id).tags["toolchoice/release"] == "r1"

            storage.free_concurrency_slot_for_step(HOLDER, f"{SHARD}[x]")
            assert wait_until(
                "release_scores waiting for the warehouse slot",
                lambda: waiting_in_pool(instance, WAREHOUSE_POOL, "release_scores"),
                process,
            ) == [run_id]
            assert [key for key in _done_steps(instance, run_id) if key.startswith(SHARD)]
            assert not (data_dir / "releases" / "r1" / "scores.json").exists()
            assert [slot.run_id for slot in storage.get_concurrency_info(WAREHOUSE_POOL).claimed_slots] == [HOLDER]

            storage.free_concurrency_slot_for_step(HOLDER, "release_scores")
            stdout, stderr = process.communicate(timeout=600)
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
    trim_tasks(data_dir, 2)
    home = dagster_home(data_dir)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        storage = hold_pool_slots(instance, (PROVIDERS_POOL, f"{SHARD}[x]"))
        process = start_run(data_dir, "k1", "--no-judge", stdout=subprocess.DEVNULL)
        try:
            [run_id] = wait_until(
                "a shard waiting for a provider slot", lambda: waiting_in_pool(instance, PROVIDERS_POOL, SHARD), process
            )
        finally:
            process.kill()
            process.wait()
        assert waiting_in_pool(instance, PROVIDERS_POOL, SHARD) == [run_id]  # still in line
        assert fail_dead_runs(instance) == [run_id]
        info = storage.get_concurrency_info(PROVIDERS_POOL)
        assert run_id not in {step.run_id for step in info.pending_steps}
        assert [slot.run_id for slot in info.claimed_slots] == [HOLDER]
