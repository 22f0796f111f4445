"""The same ``toolchoice/*`` run tags on every launch path (issue 26): a launchpad run of ``release_job``, a
"Materialize" / backfill run of ``__ASSET_JOB``, a run of one asset, and the sensor's and schedule's requests all
end with the release's ``toolchoice/release``, ``kind``, ``suite`` and ``requested_by`` tags, as ``toolchoice run``
gives them. Real parts: a real Dagster instance, the in-process local model, Parquet and DuckDB."""

from __future__ import annotations

from datetime import UTC, datetime

import dagster as dg
import pytest

from toolchoice_pipeline.definitions import build_definitions
from toolchoice_pipeline.defs.partitions import RELEASE_PARTITIONS_NAME
from toolchoice_pipeline.defs.resources import ToolchoiceResource
from toolchoice_pipeline.defs.run_tags import RELEASE_TAG_KEYS
from toolchoice_pipeline.defs.sensors import catalog_change
from toolchoice_pipeline_tests.pipeline_helpers import DEMO_SUITE, copy_data, dagster_instance, set_description

pytestmark = pytest.mark.slow

MODEL = "local/name-match"


def release_tags(instance, run_id: str) -> dict[str, str]:
    tags = instance.get_run_by_id(run_id).tags
    return {key: tags[key] for key in RELEASE_TAG_KEYS if key in tags}


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    root = tmp_path_factory.mktemp("tags")
    data_dir = copy_data(root / "data")
    with dagster_instance(root / "dagster_home") as instance:
        defs = build_definitions(str(data_dir))
        instance.add_dynamic_partitions(RELEASE_PARTITIONS_NAME, ["ui1", "ui2"])
        launchpad = {"suite": DEMO_SUITE, "kind": "adhoc", "models": [MODEL], "judge": False}
        config = {"ops": {"release_snapshot": {"config": launchpad}}}
        release_job = defs.resolve_job_def("release_job")
        runs = {"launchpad": release_job.execute_in_process(partition_key="ui1", instance=instance, run_config=config)}
        asset_job = defs.resolve_implicit_global_asset_job_def()
        runs["asset_job"] = asset_job.execute_in_process(
            partition_key="ui2",
            instance=instance,
            run_config=config,
            asset_selection=[dg.AssetKey(name) for name in ("release_snapshot", "tool_catalog", "eval_tasks")],
        )
        runs["one_asset"] = release_job.execute_in_process(
            partition_key="ui1", instance=instance, asset_selection=[dg.AssetKey("task_scores")]
        )
        yield {"instance": instance, "runs": runs, "data_dir": data_dir}


@pytest.mark.parametrize("path", ["launchpad", "asset_job", "one_asset"])
def test_a_ui_run_ends_with_the_release_tags(launched, path):
    run = launched["runs"][path]
    assert run.success
    release = "ui2" if path == "asset_job" else "ui1"
    assert release_tags(launched["instance"], run.run_id) == {
        "toolchoice/release": release,
        "toolchoice/kind": "adhoc",
        "toolchoice/suite": DEMO_SUITE,
        "toolchoice/requested_by": "dagster-ui",
    }


def test_the_sensor_and_the_schedule_request_the_same_tags(launched):
    from toolchoice_pipeline.definitions import defs

    instance, data_dir = launched["instance"], launched["data_dir"]
    resources = {"toolchoice": ToolchoiceResource(data_dir=str(data_dir))}
    with dg.build_sensor_context(instance=instance, cursor=None, resources=resources) as context:
        cursor = catalog_change(context).cursor
    set_description(data_dir, "Bash", "A utility.")
    with dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources) as context:
        [sensor_run] = catalog_change(context).run_requests
    with dg.build_schedule_context(
        instance=instance, scheduled_execution_time=datetime(2026, 12, 1, 2, 0, tzinfo=UTC), resources=resources
    ) as context:
        [schedule_run] = defs.resolve_schedule_def("nightly_eval").evaluate_tick(context).run_requests
    for run, requested_by in ((sensor_run, "sensor:catalog_change"), (schedule_run, "schedule:nightly_eval")):
        assert {key for key in run.tags if key.startswith("toolchoice/")} == set(RELEASE_TAG_KEYS)
        assert run.tags["toolchoice/requested_by"] == requested_by
        assert run.tags["toolchoice/suite"] == DEMO_SUITE
