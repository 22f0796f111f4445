"""Staleness tells the truth in every order: after a description edit, every release whose ``release_snapshot``
pinned another catalog is STALE and every release that pinned the current files is FRESH, whatever the order of
edit, observation and runs (CLI, sensor, schedule, launchpad), and a reverted edit makes the old releases FRESH
again. Real Dagster instance and materialisations of ``release_snapshot`` (the asset that depends on
``suite_files``), statuses from Dagster's own ``CachingStaleStatusResolver`` (what the UI's ``staleStatus`` is)."""

from __future__ import annotations

from datetime import UTC, datetime

import dagster as dg
import pytest
from dagster._core.definitions.data_version import CachingStaleStatusResolver
from dagster._core.loader import LoadingContextForTest

from toolchoice_pipeline.definitions import build_definitions
from toolchoice_pipeline.defs.partitions import RELEASE_PARTITIONS_NAME
from toolchoice_pipeline.defs.resources import ToolchoiceResource
from toolchoice_pipeline.defs.schedules import nightly_eval
from toolchoice_pipeline.defs.sensors import catalog_change
from toolchoice_pipeline.defs.sources import (
    PINNED_INPUT_TAG,
    SUITE_FILES,
    current_files_version,
    last_observed_version,
    observe_files,
)
from toolchoice_pipeline.releases.request import ReleaseRequest, write_request
from toolchoice_pipeline.releases.snapshot import read_snapshot
from toolchoice_pipeline_tests.pipeline_helpers import DEMO_SUITE, copy_data, dagster_instance, set_description

pytestmark = pytest.mark.slow

SNAPSHOT = dg.AssetKey("release_snapshot")
TOOL = "Read"


@pytest.fixture
def data_dir(tmp_path):
    return copy_data(tmp_path / "data")


@pytest.fixture
def instance(tmp_path):
    with dagster_instance(tmp_path / "dagster_home") as instance:
        yield instance


def run_snapshot(defs, instance, release_id: str, run_config: dict | None = None) -> None:
    result = defs.resolve_job_def("release_job").execute_in_process(
        partition_key=release_id, instance=instance, asset_selection=[SNAPSHOT], run_config=run_config or {}
    )
    assert result.success


def cli_release(defs, instance, data_dir, release_id: str) -> None:
    """What ``toolchoice run`` does before its run: request, partition, observation (cli/run.py)."""
    write_request(data_dir, ReleaseRequest(release_id=release_id, suite=DEMO_SUITE, requested_by="cli"))
    instance.add_dynamic_partitions(RELEASE_PARTITIONS_NAME, [release_id])
    observe_files(instance, data_dir)
    run_snapshot(defs, instance, release_id)


def sensor_tick(instance, data_dir, cursor: str | None) -> dg.SensorResult:
    """One tick of ``catalog_change`` handled as the daemon does: its asset events reported, then its partitions
    added, then its runs."""
    with dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"toolchoice": ToolchoiceResource(data_dir=str(data_dir))}
    ) as context:
        result = catalog_change(context)
    for event in result.asset_events:
        instance.report_runless_asset_event(event)
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result


def statuses(defs, instance, releases) -> dict[str, str]:
    resolver = CachingStaleStatusResolver(instance, defs.resolve_asset_graph(), LoadingContextForTest(instance))
    return {release: resolver.get_status(SNAPSHOT, release).value for release in releases}


def recorded_input(instance, release_id: str) -> str:
    record = instance.get_latest_data_version_record(SNAPSHOT, partition_key=release_id)
    return record.asset_materialization.tags[PINNED_INPUT_TAG]


def pinned_token(data_dir, release_id: str) -> str:
    pin = read_snapshot(data_dir, release_id)
    return f"{pin.suite_name}={pin.catalog_version}-{pin.fixture_version}"


def test_cli_release_then_edit_then_sensor_release_then_revert(instance, data_dir):
    """CLI release r1 → edit → sensor tick (observes, starts catalog-<new>) → a plain re-observation → r1
    re-materialised → the edit reverted and observed by the sensor's timer tick."""
    defs = build_definitions(str(data_dir))
    cursor = sensor_tick(instance, data_dir, None).cursor  # first tick: records the catalog, observes the files
    cli_release(defs, instance, data_dir, "r1")
    assert recorded_input(instance, "r1") == pinned_token(data_dir, "r1") == current_files_version(data_dir)
    assert statuses(defs, instance, ["r1"]) == {"r1": "FRESH"}

    original = set_description(data_dir, TOOL, "Deletes the repository. Never call this.")
    tick = sensor_tick(instance, data_dir, cursor)
    assert [event.asset_key for event in tick.asset_events] == [SUITE_FILES]
    assert last_observed_version(instance) == current_files_version(data_dir)
    assert statuses(defs, instance, ["r1"]) == {"r1": "STALE"}  # before any run of the edit

    [request] = tick.run_requests
    edited = request.partition_key
    run_snapshot(defs, instance, edited)
    assert statuses(defs, instance, ["r1", edited]) == {"r1": "STALE", edited: "FRESH"}

    # "Observe sources" in the UI with no edit: nothing changes (no "Unsynced" from an observation alone).
    assert defs.resolve_job_def("observe_suite_files").execute_in_process(instance=instance).success
    assert statuses(defs, instance, ["r1", edited]) == {"r1": "STALE", edited: "FRESH"}

    # Re-materialising r1 returns its pin: it still evaluated the old catalog, so it stays stale.
    run_snapshot(defs, instance, "r1")
    assert statuses(defs, instance, ["r1", edited]) == {"r1": "STALE", edited: "FRESH"}

    set_description(data_dir, TOOL, original)
    tick = sensor_tick(instance, data_dir, tick.cursor)
    assert statuses(defs, instance, ["r1", edited]) == {"r1": "FRESH", edited: "STALE"}


def test_edit_then_release_with_no_observation_between_from_the_launchpad_and_the_schedule(instance, data_dir):
    """CLI release r1 → edit, observed by nobody → a UI launchpad run of a partition without a request (its own
    step observes) → the nightly schedule's run → the edit reverted with no observation, then a CLI release."""
    defs = build_definitions(str(data_dir))
    cli_release(defs, instance, data_dir, "r1")
    original = set_description(data_dir, TOOL, "Reads nothing at all; use Bash.")

    instance.add_dynamic_partitions(RELEASE_PARTITIONS_NAME, ["ui1"])
    launchpad = {"ops": {"release_snapshot": {"config": {"suite": DEMO_SUITE, "kind": "adhoc"}}}}
    run_snapshot(defs, instance, "ui1", launchpad)
    assert last_observed_version(instance) == current_files_version(data_dir)
    assert statuses(defs, instance, ["r1", "ui1"]) == {"r1": "STALE", "ui1": "FRESH"}

    with dg.build_schedule_context(
        instance=instance,
        scheduled_execution_time=datetime(2026, 12, 1, 2, 0, tzinfo=UTC),
        resources={"toolchoice": ToolchoiceResource(data_dir=str(data_dir))},
    ) as context:
        request = nightly_eval(context)
    nightly = request.partition_key
    assert nightly not in instance.get_dynamic_partitions(RELEASE_PARTITIONS_NAME)  # the run adds it, as launched:
    launched = defs.resolve_job_def("release_job").execute_in_process(  # its tags and run config
        instance=instance, asset_selection=[SNAPSHOT], tags=request.tags, run_config=request.run_config
    )
    assert launched.success
    assert statuses(defs, instance, ["r1", "ui1", nightly]) == {"r1": "STALE", "ui1": "FRESH", nightly: "FRESH"}

    set_description(data_dir, TOOL, original)
    cli_release(defs, instance, data_dir, "r2")
    assert recorded_input(instance, "r2") == recorded_input(instance, "r1")
    assert statuses(defs, instance, ["r1", "ui1", nightly, "r2"]) == {
        "r1": "FRESH",
        "ui1": "STALE",
        nightly: "STALE",
        "r2": "FRESH",
    }


def test_a_release_run_before_any_observation_still_goes_stale_after_an_edit(instance, data_dir):
    """The first run of an instance, launched with no observation (a UI run before the sensor ever ticked):
    its input is its pin, so the first observation of an edit marks it stale, and one of no edit does not."""
    defs = build_definitions(str(data_dir))
    write_request(data_dir, ReleaseRequest(release_id="first", suite=DEMO_SUITE, requested_by="test"))
    instance.add_dynamic_partitions(RELEASE_PARTITIONS_NAME, ["first"])
    run_snapshot(defs, instance, "first")
    assert statuses(defs, instance, ["first"]) == {"first": "FRESH"}
    observe_files(instance, data_dir)
    assert statuses(defs, instance, ["first"]) == {"first": "FRESH"}
    set_description(data_dir, TOOL, "Opens a file, maybe.")
    observe_files(instance, data_dir)
    assert statuses(defs, instance, ["first"]) == {"first": "STALE"}
