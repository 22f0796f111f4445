"""The ``catalog_change`` sensor and the ``nightly_eval`` schedule, evaluated with ``build_sensor_context`` /
``build_schedule_context`` against a real Dagster instance (``instance_for_test``) and a copy of ``data/``."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import dagster as dg
import pytest

from toolchoice_pipeline.defs.resources import ToolchoiceResource
from toolchoice_pipeline.defs.sensors import catalog_change
from toolchoice_pipeline.releases.request import read_request
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline_tests.pipeline_helpers import (
    DEMO_SUITE,
    copy_data,
    dagster_instance,
    materialise,
    query,
    read_scores,
    set_description,
    trim_tasks,
)

TOOL = "Bash"
N_TASKS = 12  # of the demo's tasks, for the tests that materialise a release


@pytest.fixture
def data_dir(tmp_path):
    return copy_data(tmp_path / "data")


@pytest.fixture
def instance(tmp_path):
    with dagster_instance(tmp_path / "dagster_home") as instance:
        yield instance


def evaluate_sensor(instance, data_dir, cursor: str | None) -> dg.SensorResult:
    # As a context manager: the context opens its own instance from the ref, and only closing it resets the
    # process-wide Dagster state that instance registered (else a later test may meet a collected instance).
    with dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"toolchoice": ToolchoiceResource(data_dir=str(data_dir))}
    ) as context:
        return catalog_change(context)


def version(data_dir) -> str:
    return load_suite(data_dir, DEMO_SUITE).catalog_version


def added_partitions(result: dg.SensorResult) -> list[str]:
    keys = []
    for request in result.dynamic_partitions_requests or []:
        assert isinstance(request, dg.AddDynamicPartitionsRequest)
        assert request.partitions_def_name == "release"
        keys.extend(request.partition_keys)
    return keys


def test_the_first_evaluation_only_records_the_catalog_versions(instance, data_dir):
    result = evaluate_sensor(instance, data_dir, None)
    assert result.run_requests == [] and added_partitions(result) == []
    assert json.loads(result.cursor) == {DEMO_SUITE: version(data_dir)}
    assert not (data_dir / "releases").exists()


def test_a_changed_description_adds_a_catalog_partition_and_requests_one_run_keyed_by_the_version(instance, data_dir):
    first = evaluate_sensor(instance, data_dir, None)
    old_version = version(data_dir)
    set_description(data_dir, TOOL, "A utility.")
    new_version = version(data_dir)
    assert new_version != old_version

    result = evaluate_sensor(instance, data_dir, first.cursor)
    release_id = f"catalog-{new_version}"
    [run] = result.run_requests
    assert run.run_key == new_version
    assert run.partition_key == release_id
    assert run.tags["toolchoice/kind"] == "catalog-change" and run.tags["toolchoice/suite"] == DEMO_SUITE
    assert added_partitions(result) == [release_id]
    request = read_request(data_dir, release_id)
    assert (request.kind, request.suite, request.requested_by) == (
        "catalog-change",
        DEMO_SUITE,
        "sensor:catalog_change",
    )
    assert json.loads((data_dir / "releases" / release_id / "request.json").read_text())["kind"] == "catalog-change"
    assert json.loads(result.cursor) == {DEMO_SUITE: new_version}

    again = evaluate_sensor(instance, data_dir, result.cursor)
    assert again.run_requests == [] and added_partitions(again) == []
    assert again.cursor == result.cursor


def apply(instance, result: dg.SensorResult) -> None:
    """What the sensor daemon does with a result's partition requests."""
    for key in added_partitions(result):
        instance.add_dynamic_partitions("release", [key])


def test_going_back_to_an_evaluated_description_runs_nothing_and_keeps_its_release(instance, data_dir):
    cursor = evaluate_sensor(instance, data_dir, None).cursor
    set_description(data_dir, TOOL, "A utility.")
    first = evaluate_sensor(instance, data_dir, cursor)
    apply(instance, first)
    release_id = first.run_requests[0].partition_key
    request_file = data_dir / "releases" / release_id / "request.json"
    written = request_file.read_text(encoding="utf-8")
    set_description(data_dir, TOOL, "Runs things.")
    second = evaluate_sensor(instance, data_dir, first.cursor)
    apply(instance, second)
    set_description(data_dir, TOOL, "A utility.")
    back = evaluate_sensor(instance, data_dir, second.cursor)

    assert first.run_requests[0].run_key != second.run_requests[0].run_key
    assert back.run_requests == [] and added_partitions(back) == []
    assert json.loads(back.cursor) == {DEMO_SUITE: first.run_requests[0].run_key}
    assert request_file.read_text(encoding="utf-8") == written


def test_two_suites_reaching_the_same_catalog_in_one_tick_run_once(instance, data_dir):
    import shutil

    twin = data_dir / "suites" / "twin"
    shutil.copytree(data_dir / "suites" / DEMO_SUITE, twin)
    spec = (twin / "suite.yaml").read_text(encoding="utf-8")
    (twin / "suite.yaml").write_text(spec.replace(f"name: {DEMO_SUITE}", "name: twin"), encoding="utf-8")
    cursor = evaluate_sensor(instance, data_dir, None).cursor
    set_description(data_dir, TOOL, "A utility.")
    set_description(data_dir, TOOL, "A utility.", suite="twin")

    result = evaluate_sensor(instance, data_dir, cursor)
    [run] = result.run_requests
    assert added_partitions(result) == [run.partition_key]
    assert json.loads(result.cursor)["twin"] == json.loads(result.cursor)[DEMO_SUITE] == run.run_key


def test_a_live_dump_change_is_a_catalog_change_too(instance, data_dir):
    suite_dir = data_dir / "suites" / DEMO_SUITE
    cursor = evaluate_sensor(instance, data_dir, None).cursor
    dump = [
        {
            "name": "mcp__docs__search",
            "description": "Search the team's documentation.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        }
    ]
    (suite_dir / "live.json").write_text(json.dumps(dump), encoding="utf-8")
    spec = (suite_dir / "suite.yaml").read_text(encoding="utf-8")
    (suite_dir / "suite.yaml").write_text(spec + "live_catalogs: [live.json]\n", encoding="utf-8")
    assert any(tool.name == "mcp__docs__search" for tool in load_suite(data_dir, DEMO_SUITE).all_tools())

    [run] = evaluate_sensor(instance, data_dir, cursor).run_requests
    assert run.run_key == version(data_dir)


def test_a_broken_suite_is_skipped_and_the_others_still_watched(instance, data_dir):
    broken = data_dir / "suites" / "broken"
    broken.mkdir()
    (broken / "suite.yaml").write_text("name: broken\ncatalog: missing.yaml\ntasks: missing.jsonl\n")
    result = evaluate_sensor(instance, data_dir, None)
    assert json.loads(result.cursor) == {DEMO_SUITE: version(data_dir)}
    set_description(data_dir, TOOL, "A utility.")
    [run] = evaluate_sensor(instance, data_dir, result.cursor).run_requests
    assert run.tags["toolchoice/suite"] == DEMO_SUITE


def nightly_request(instance, when: datetime, data_dir) -> dg.RunRequest:
    """The schedule's run request for the night of ``when``, evaluated as the daemon and "Test schedule" do
    (``evaluate_tick``: the request's partition resolved, the schedule's tags added)."""
    from toolchoice_pipeline.definitions import defs

    schedule = defs.resolve_schedule_def("nightly_eval")
    resources = {"toolchoice": ToolchoiceResource(data_dir=str(data_dir))}
    with dg.build_schedule_context(instance=instance, scheduled_execution_time=when, resources=resources) as context:
        [run] = schedule.evaluate_tick(context).run_requests
    return run


def run_nightly(data_dir, instance, run: dg.RunRequest):
    """Execute the schedule's run request in-process as the daemon would launch it (its tags and run config)."""
    from toolchoice_pipeline.definitions import build_definitions

    job = build_definitions(str(data_dir)).resolve_job_def("release_job")
    return job.execute_in_process(instance=instance, tags=run.tags, run_config=run.run_config, raise_on_error=False)


def test_evaluating_the_nightly_schedule_changes_nothing(instance, data_dir):
    """A preview ("Test schedule") or a tick evaluates to a run request that says it all, and leaves the instance
    and the data directory as they were: no partition added, no observation recorded, no file written, even
    with the suite files changed since the last observation."""
    from toolchoice_pipeline.defs.sources import SUITE_FILES, observe_files

    observe_files(instance, data_dir)
    set_description(data_dir, TOOL, "A utility.")  # an observation would now record a new version
    observations = instance.fetch_observations(SUITE_FILES, limit=100).records
    run = nightly_request(instance, datetime(2026, 11, 30, 2, 0, tzinfo=UTC), data_dir)
    assert run.partition_key == run.run_key == "nightly-2026-11-30"
    assert run.tags["dagster/partition"] == "nightly-2026-11-30"
    assert run.tags["toolchoice/kind"] == "nightly"
    assert run.tags["toolchoice/requested_by"] == "schedule:nightly_eval"
    assert run.run_config["ops"]["release_snapshot"]["config"] == {
        "suite": DEMO_SUITE,
        "kind": "nightly",
        "cache_policy": "write_only",
        "requested_by": "schedule:nightly_eval",
    }
    assert instance.get_dynamic_partitions("release") == []
    assert instance.fetch_observations(SUITE_FILES, limit=100).records == observations
    assert len(observations) == 1
    assert not (data_dir / "releases").exists()


@pytest.mark.slow
def test_the_nightly_run_writes_its_request_and_asks_every_model_afresh(instance, data_dir):
    """The launched run writes the request (kind nightly, cache write_only); it ignores the call journal, so
    provider drift shows up."""
    trim_tasks(data_dir, N_TASKS)
    warm = materialise(data_dir, instance, "warm-up", kind="adhoc", judge=False)
    assert warm.success
    run = nightly_request(instance, datetime(2026, 12, 1, 2, 0, tzinfo=UTC), data_dir)
    assert not (data_dir / "releases" / "nightly-2026-12-01").exists()
    assert "nightly-2026-12-01" not in instance.get_dynamic_partitions("release")
    result = run_nightly(data_dir, instance, run)
    assert result.success
    assert "nightly-2026-12-01" in instance.get_dynamic_partitions("release")  # the run added its partition
    request = read_request(data_dir, "nightly-2026-12-01")
    assert (request.kind, request.cache_policy, request.suite, request.requested_by) == (
        "nightly",
        "write_only",
        DEMO_SUITE,
        "schedule:nightly_eval",
    )
    control = materialise(data_dir, instance, "control", kind="adhoc", judge=False)  # read_write: served warm
    assert control.success
    hits = dict(query(data_dir, "SELECT release_id, avg(cache_hit::INT) FROM agent_calls GROUP BY release_id"))
    assert hits == {"warm-up": 0.0, "nightly-2026-12-01": 0.0, "control": 1.0}
    scores = read_scores(data_dir, "nightly-2026-12-01")
    assert scores["kind"] == "nightly" and scores["gate"]["passed"] is True
    assert scores["judge"] is not None  # the nightly run is judged


def test_an_inline_catalog_change_is_a_catalog_change_too(instance, data_dir):
    """BFCL-style suites carry a catalog per task; editing one is a new catalog version like any other."""
    suite_dir = data_dir / "suites" / "inline"
    suite_dir.mkdir()
    (suite_dir / "suite.yaml").write_text("name: inline\ncatalog: catalog.yaml\ntasks: tasks.jsonl\n")
    (suite_dir / "catalog.yaml").write_text("[]\n")

    def write_task(description: str) -> None:
        tool = {
            "name": "area",
            "description": description,
            "parameters": {"type": "object", "properties": {"r": {"type": "number"}}},
        }
        task = {
            "id": "t1",
            "messages": [{"role": "user", "content": "Area of a circle of radius 2?"}],
            "expected": {"tool": "area", "arguments": {"r": 2}},
            "tools": [tool],
        }
        (suite_dir / "tasks.jsonl").write_text(json.dumps(task) + "\n")

    write_task("Area of a circle.")
    cursor = evaluate_sensor(instance, data_dir, None).cursor
    write_task("A utility.")
    [run] = evaluate_sensor(instance, data_dir, cursor).run_requests
    assert run.tags["toolchoice/suite"] == "inline"
    assert run.run_key == load_suite(data_dir, "inline").catalog_version


@pytest.mark.slow
def test_a_catalog_reverted_to_one_a_finished_release_evaluated_is_recorded_not_run(instance, data_dir):
    """Release r1 (any id, not catalog-<version>) finishes on catalog v0; an edit to v1 runs; the revert to v0
    runs nothing and the tick names r1; asked to (``rerun_evaluated_catalogs``), v0 runs again."""
    trim_tasks(data_dir, N_TASKS)
    assert materialise(data_dir, instance, "r1", kind="release", judge=False).success
    v0 = version(data_dir)
    cursor = evaluate_sensor(instance, data_dir, None).cursor
    before = set_description(data_dir, TOOL, "A utility.")
    edited = evaluate_sensor(instance, data_dir, cursor)
    apply(instance, edited)
    assert [run.run_key for run in edited.run_requests] == [version(data_dir)] != [v0]
    set_description(data_dir, TOOL, before)
    assert version(data_dir) == v0

    reverted = evaluate_sensor(instance, data_dir, edited.cursor)
    assert reverted.run_requests == [] and added_partitions(reverted) == []
    assert f"catalog {v0} was evaluated by finished release r1" in reverted.skip_reason.skip_message
    assert json.loads(reverted.cursor) == {DEMO_SUITE: v0}
    assert not (data_dir / "releases" / f"catalog-{v0}").exists()

    with dg.build_sensor_context(
        instance=instance,
        cursor=edited.cursor,
        resources={"toolchoice": ToolchoiceResource(data_dir=str(data_dir), rerun_evaluated_catalogs=True)},
    ) as context:
        asked = catalog_change(context)
    assert [run.partition_key for run in asked.run_requests] == [f"catalog-{v0}"]


def test_a_sensor_tick_loads_each_suite_once(instance, data_dir, monkeypatch):
    """One tick compares the catalog versions and observes the files version from one load of each suite
    (it loaded every suite twice), whether or not the files changed and with a suite that does not load."""
    import sys

    from toolchoice_pipeline.suites import suite as suite_module
    from toolchoice_pipeline.suites.suite import list_suites

    broken = data_dir / "suites" / "broken"
    broken.mkdir()
    (broken / "suite.yaml").write_text("name: broken\ncatalog: missing.yaml\ntasks: missing.jsonl\n")
    loads: list[str] = []
    real_load = suite_module.load_suite

    def counted(data, name, **kwargs):
        loads.append(name)
        return real_load(data, name, **kwargs)

    for module in list(sys.modules.values()):  # every module that imported the loader counts through it
        if getattr(module, "load_suite", None) is real_load:
            monkeypatch.setattr(module, "load_suite", counted)
    suites = sorted(list_suites(data_dir))
    assert len(suites) >= 2
    first = evaluate_sensor(instance, data_dir, None)  # records the versions and observes the files
    assert sorted(loads) == suites and len(first.asset_events) == 1
    loads.clear()
    set_description(data_dir, TOOL, "A utility.")
    edited = evaluate_sensor(instance, data_dir, first.cursor)  # a new catalog: a run requested, an observation
    assert sorted(loads) == suites
    assert len(edited.run_requests) == 1 and len(edited.asset_events) == 1
