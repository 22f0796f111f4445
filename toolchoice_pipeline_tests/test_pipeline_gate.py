"""The gate's failure path through Dagster: a degraded tool description makes the blocking ``release_gate``
check fail, the run fails, ``baseline`` is not materialised, the first release stays the baseline, and the
failed release's scores and gate report stay readable.

Real parts: a Dagster instance (``instance_for_test``), ``release_job`` in-process, the local agents through
LiteLLM, Parquet + DuckDB. The judge is off (``judge=False``): the gate reads right tool and right arguments.
"""

from __future__ import annotations

import dagster as dg
import pytest

from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline_tests.pipeline_helpers import (
    DEMO_SUITE,
    check_evaluations,
    copy_data,
    dagster_instance,
    materialise,
    materialised_assets,
    query,
    read_scores,
    set_description,
)

pytestmark = pytest.mark.slow

ROUTER = "local/bm25-router"


@pytest.fixture(scope="module")
def two_releases(tmp_path_factory):
    root = tmp_path_factory.mktemp("gate")
    data_dir = copy_data(root / "data")
    with dagster_instance(root / "dagster_home") as instance:
        first = materialise(data_dir, instance, "r1", kind="release", judge=False)
        before = set_description(data_dir, "Bash", "A utility.")
        second = materialise(data_dir, instance, "r2", kind="release", judge=False)
        yield data_dir, instance, first, second, before


def test_the_first_release_passes_and_is_promoted(two_releases):
    data_dir, _, first, _, _ = two_releases
    assert first.success
    assert check_evaluations(first)["release_gate"].passed
    assert "baseline" in materialised_assets(first)
    assert read_scores(data_dir, "r1")["gate"]["passed"] is True


def test_the_degraded_release_fails_the_run_at_the_blocking_gate(two_releases):
    _, _, _, second, _ = two_releases
    assert not second.success
    gate = check_evaluations(second)["release_gate"]
    assert gate.passed is False and gate.blocking is True
    assert gate.severity == dg.AssetCheckSeverity.ERROR
    assert ROUTER in gate.description and "right_tool_pct" in gate.description
    assert gate.metadata["baseline_release_id"].value == "r1"
    # every other check of the run passed: only the gate stops it
    assert {name: e.passed for name, e in check_evaluations(second).items() if name != "release_gate"} == {
        "judge_calibration": True,
        "agent_runs_complete": True,
        "task_scores_complete": True,
        "warehouse_schema": True,
    }


def test_baseline_is_not_materialised_and_r1_stays_the_baseline(two_releases):
    data_dir, instance, _, second, _ = two_releases
    assert "release_scores" in materialised_assets(second)
    assert "baseline" not in materialised_assets(second)
    records = instance.fetch_materializations(dg.AssetKey("baseline"), limit=10).records
    assert [r.partition_key for r in records] == ["r1"]
    assert ReleaseStore(data_dir).baseline(DEMO_SUITE) == "r1"
    assert not ReleaseStore(data_dir).was_promoted(DEMO_SUITE, "r2")


def test_the_failed_release_scores_and_gate_report_are_readable_with_the_flipped_tasks(two_releases):
    data_dir, _, _, second, before = two_releases
    scores = read_scores(data_dir, "r2")
    assert scores["run_id"] == second.run_id
    gate = scores["gate"]
    assert gate["passed"] is False and gate["baseline_release_id"] == "r1"
    assert {f["model"] for f in gate["failures"]} == {ROUTER}
    lost = gate["flips"][ROUTER]["right_tool"]["right_to_wrong"]
    assert lost
    report = (data_dir / "releases" / "r2" / "gate.md").read_text(encoding="utf-8")
    assert all(f"`{task_id}`" in report for task_id in lost[:25])

    # The flips are exactly the tasks the router had right in r1 and wrong in r2, read back from DuckDB,
    # and among them tasks that need the degraded tool.
    flipped = [
        row[0]
        for row in query(
            data_dir,
            "SELECT a.task_id FROM task_scores a JOIN task_scores b USING (model, task_id) "
            "WHERE a.release_id = 'r1' AND b.release_id = 'r2' AND a.model = ? AND a.right_tool "
            "AND NOT b.right_tool ORDER BY a.task_id",
            [ROUTER],
        )
    ]
    assert flipped == lost
    expected = {t.id: t.expected.tool for t in load_suite(data_dir, DEMO_SUITE).tasks if t.expected}
    assert any(expected[task_id] == "Bash" for task_id in lost)
    described = dict(query(data_dir, "SELECT release_id, description FROM tool_catalog WHERE tool_name = 'Bash'"))
    assert described == {"r1": before, "r2": "A utility."}


def test_the_catalog_diff_against_the_baseline_names_the_changed_tool(two_releases):
    _, _, _, second, _ = two_releases
    diff = materialised_assets(second)["tool_catalog"].metadata["catalog_diff_vs_baseline"].value
    assert "r1" in diff and "Bash" in diff


def test_the_failed_gates_run_ends_with_the_gates_reason_not_a_blocking_check_error(two_releases):
    """The run page's failure is the gate's verdict: a ``Failure`` whose description names the model and metric
    that dropped and whose metadata gives the largest drop and the limit; no step fails with Dagster's
    blocking-check error (its stack trace) and no other step fails."""
    data_dir, _, _, second, _ = two_releases
    failures = [event for event in second.all_events if event.is_step_failure]
    [failure] = failures
    data = failure.step_failure_data
    assert data.error.cls_name == "Failure"
    assert not any(event.step_failure_data.error.cls_name == "DagsterAssetCheckFailedError" for event in failures)
    reason = data.user_failure_data.description
    assert "release r2" in reason and ROUTER in reason and "right_tool_pct" in reason
    metadata = data.user_failure_data.metadata
    gate = read_scores(data_dir, "r2")["gate"]
    worst = max(gate["comparisons"], key=lambda c: c["drop"])
    assert metadata["largest_drop_points"].value == worst["drop"] > metadata["drop_limit_points"].value
    assert metadata["baseline_release_id"].value == "r1"
