"""The Dagster Definitions as users load them (``toolchoice_pipeline.definitions.defs``, ``workspace.yaml``):
the release graph, its partitions, kinds, code versions and descriptions, the blocking gate, the schedule and
the sensor, and ``dagster definitions validate``."""

from __future__ import annotations

import os
import subprocess

import dagster as dg
import pytest

from toolchoice_pipeline.definitions import defs
from toolchoice_pipeline.defs.jobs import release_executor
from toolchoice_pipeline_tests.pipeline_helpers import ASSET_CHAIN, BIN, REPO, copy_data

#: Every dependency edge of the release graph (child: parents). The chain of ASSET_CHAIN plus the shortcuts
#: of assets that read an earlier stage's records directly (every stage reads the pinned release_snapshot).
EDGES = {
    "suite_files": set(),
    "release_snapshot": {"suite_files"},
    "tool_catalog": {"release_snapshot"},
    "eval_tasks": {"release_snapshot", "tool_catalog"},
    "agent_runs": {"release_snapshot", "tool_catalog", "eval_tasks"},
    "judge_votes": {"release_snapshot", "agent_runs"},
    "task_scores": {"release_snapshot", "agent_runs", "judge_votes"},
    "release_scores": {"release_snapshot", "agent_runs", "judge_votes", "task_scores"},
    "baseline": {"release_scores"},
}


@pytest.fixture(scope="module")
def graph():
    return defs.resolve_asset_graph()


def test_the_asset_graph_is_the_release_chain_and_nothing_else(graph):
    keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
    assert keys == {"suite_files", *ASSET_CHAIN}
    assert graph.get(dg.AssetKey("suite_files")).is_observable
    parents = {
        key.to_user_string(): {p.to_user_string() for p in graph.get(key).parent_keys}
        for key in graph.get_all_asset_keys()
    }
    assert parents == EDGES
    for upstream, downstream in zip(ASSET_CHAIN, ASSET_CHAIN[1:]):
        assert upstream in parents[downstream], f"{upstream} → {downstream} missing"


def test_every_asset_is_in_one_group_partitioned_by_release_with_kinds_code_version_and_description(graph):
    specs = {spec.key.to_user_string(): spec for spec in defs.resolve_all_asset_specs()}
    assert {name: spec.group_name for name, spec in specs.items() if spec.group_name != "release"} == {
        "suite_files": "suites"
    }
    for name in ASSET_CHAIN:
        node = graph.get(dg.AssetKey(name))
        spec = specs[name]
        assert isinstance(node.partitions_def, dg.DynamicPartitionsDefinition), name
        assert node.partitions_def.name == "release", name
        assert spec.kinds, f"{name} has no kinds"
        assert node.code_version, f"{name} has no code_version"
        assert spec.description and len(spec.description) > 40, f"{name} has no readable description"
    assert "duckdb" in specs["release_scores"].kinds and "litellm" in specs["agent_runs"].kinds


def test_the_release_gate_is_a_blocking_check_on_release_scores_and_the_other_checks_are_there(graph):
    checks = {key.name: graph.get_check_spec(key) for key in graph.asset_check_keys}
    assert set(checks) == {
        "release_gate",
        "judge_calibration",
        "agent_runs_complete",
        "task_scores_complete",
        "warehouse_schema",
    }
    gate = checks["release_gate"]
    assert gate.blocking is True
    assert gate.asset_key == dg.AssetKey("release_scores")
    assert gate.description and "2 points" in gate.description
    assert [name for name, spec in checks.items() if spec.blocking] == ["release_gate"]
    assert checks["judge_calibration"].asset_key == dg.AssetKey("release_scores")  # reads scores.json


def test_the_release_job_covers_the_whole_graph_and_runs_in_one_process_unless_configured():
    job = defs.resolve_job_def("release_job")
    assert {key.to_user_string() for key in job.asset_layer.executable_asset_keys} == set(ASSET_CHAIN)
    # Dagster's multi-or-in-process executor, in-process unless the run config asks for worker processes
    assert job.executor_def is release_executor
    assert job.executor_def.config_schema.config_type is dg.multi_or_in_process_executor.config_field.config_type
    assert job.executor_def.config_schema.as_field().default_value == {"in_process": {}}
    assert isinstance(job.partitions_def, dg.DynamicPartitionsDefinition)
    # the shards of agent_runs and judge_votes are steps of their own (a dynamic fan-out and a fan-in)
    nodes = {node.name for node in job.graph.node_defs}
    assert {"agent_runs", "judge_votes"} <= nodes
    ops = {op.name for op in job.all_node_defs}
    assert {"plan_agent_shards", "run_agent_shard", "gather_agent_runs", "plan_judge_shards", "judge_shard"} <= ops


def test_schedule_nightly_eval_and_sensor_catalog_change_are_running_by_default():
    schedule = defs.resolve_schedule_def("nightly_eval")
    assert schedule.cron_schedule == "0 2 * * *"
    assert schedule.execution_timezone == "UTC"
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    assert schedule.job_name == "release_job"
    sensor = defs.resolve_sensor_def("catalog_change")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert sensor.job_name == "release_job"


@pytest.mark.slow
def test_dagster_definitions_validate_accepts_the_workspace(tmp_path):
    env = {
        **os.environ,
        "DAGSTER_HOME": str(tmp_path / "dagster_home"),
        "TOOLCHOICE_DATA_DIR": str(copy_data(tmp_path / "data")),
    }
    (tmp_path / "dagster_home").mkdir()
    done = subprocess.run(
        [str(BIN / "dagster"), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation successful for code location toolchoice_pipeline" in done.stdout + done.stderr
