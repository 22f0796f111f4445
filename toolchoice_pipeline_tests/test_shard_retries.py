"""The shard ops' RetryPolicy (issue 26): a shard step that fails for a passing reason is tried again and the
retry asks no provider again (every call of the failed try is journaled); a failure that is a verdict (a model
unavailable after the calls' own retries) is never retried. Real parts: a real Dagster instance,
``release_job`` in-process (on 12 of the demo's tasks), the local models through LiteLLM, Parquet. The passing fault is real too: the release's staging directory for ``agent_runs`` is blocked by
a file until the first retry is announced."""

from __future__ import annotations

import threading
import time

import dagster as dg
import pytest

from toolchoice_pipeline.definitions import defs
from toolchoice_pipeline.defs.shards import SHARD_RETRY_POLICY
from toolchoice_pipeline.defs.staging import read_staged, staging_dir
from toolchoice_pipeline_tests.pipeline_helpers import copy_data, dagster_instance, materialise, trim_tasks

MODEL = "local/name-match"


def test_the_shard_ops_retry_and_the_others_do_not():
    ops = {op.name: op for op in defs.resolve_job_def("release_job").all_node_defs if isinstance(op, dg.OpDefinition)}
    assert ops["run_agent_shard"].retry_policy == ops["judge_shard"].retry_policy == SHARD_RETRY_POLICY
    assert SHARD_RETRY_POLICY.max_retries == 2
    assert ops["gather_agent_runs"].retry_policy is None and ops["plan_agent_shards"].retry_policy is None


def _unblock_after_first_retry(instance, blocker, stop: threading.Event) -> None:
    while not stop.is_set():
        for record in instance.get_runs():
            events = instance.all_logs(record.run_id, of_type=dg.DagsterEventType.STEP_UP_FOR_RETRY)
            if events:
                blocker.unlink()
                return
        time.sleep(0.2)


@pytest.mark.slow
def test_a_shard_that_fails_once_is_retried_and_asks_no_provider_again(tmp_path):
    data_dir = copy_data(tmp_path / "data")
    trim_tasks(data_dir, 12)
    blocker = staging_dir(data_dir, "r1") / "agent_runs"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("not a directory")  # the shard's episodes cannot be staged while this is here
    with dagster_instance(tmp_path / "home") as instance:
        stop = threading.Event()
        watcher = threading.Thread(target=_unblock_after_first_retry, args=(instance, blocker, stop), daemon=True)
        watcher.start()
        try:
            result = materialise(data_dir, instance, "r1", kind="adhoc", models=[MODEL], judge=False)
        finally:
            stop.set()
            watcher.join(timeout=10)
        assert result.success
        retried = [e.step_key for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY]
        assert retried and all(key.startswith("agent_runs.run_agent_shard") for key in retried)
        episodes = list(read_staged(data_dir, "r1", "agent_runs"))
        assert episodes and all(step.cache_hit for episode in episodes for step in episode.steps)


@pytest.mark.slow
def test_a_verdict_fails_the_shard_at_once_without_a_retry(tmp_path):
    """An unknown model is unavailable after the calls' own retries: the shard fails once, with the reason."""
    data_dir = copy_data(tmp_path / "data")
    trim_tasks(data_dir, 12)
    with dagster_instance(tmp_path / "home") as instance:
        result = materialise(data_dir, instance, "r1", kind="adhoc", models=["local/no-such-model"], judge=False)
        # the checks the failed run never reached are recorded against its release only (never partition-less)
        graph = defs.resolve_asset_graph()
        records = [
            record
            for key in graph.asset_check_keys
            for record in instance.event_log_storage.get_asset_check_execution_history(key, limit=10)
        ]
        assert len(records) == len(graph.asset_check_keys)
        assert {record.partition for record in records} == {"r1"}
    assert not result.success
    assert not [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY]
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_key.startswith("agent_runs.run_agent_shard")
    assert "model unavailable" in failure.step_failure_data.user_failure_data.description
