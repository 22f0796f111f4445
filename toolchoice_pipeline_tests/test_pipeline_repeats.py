"""Repeats through Dagster: a stochastic ``sim/`` model run 3 times per task on 16 of the demo's tasks, twice
(the second release with new samples), judged per sample, stored per sample, gated with the paired interval.

Real parts: a Dagster instance, ``release_job`` in-process, the sim provider and the local judge through LiteLLM,
Parquet + DuckDB.
"""

from __future__ import annotations

import pytest

from toolchoice_pipeline_tests.pipeline_helpers import (
    check_evaluations,
    copy_data,
    dagster_instance,
    materialise,
    query,
    read_scores,
    trim_tasks,
)

pytestmark = pytest.mark.slow

SIM = "sim/stochastic"


def config(seed: int) -> str:
    return (
        f"models:\n  - model: {SIM}\n    params: {{sim_latency_ms: 0, sim_flip_rate: 0.1, sim_seed: {seed}}}\n"
        "gate:\n  noise: require\n"
    )


@pytest.fixture(scope="module")
def two_releases(tmp_path_factory):
    root = tmp_path_factory.mktemp("repeats")
    data_dir = copy_data(root / "data")
    trim_tasks(data_dir, 16)
    with dagster_instance(root / "dagster_home") as instance:
        results = []
        for release_id, seed in (("r1", 1), ("r2", 2)):
            (data_dir / "toolchoice.yaml").write_text(config(seed))
            results.append(materialise(data_dir, instance, release_id, kind="release", repeats=3))
        yield data_dir, results


def test_every_check_passes_with_three_samples_per_task(two_releases):
    _, results = two_releases
    for result in results:
        evaluations = check_evaluations(result)
        assert evaluations["agent_runs_complete"].passed, evaluations["agent_runs_complete"].description
        assert evaluations["task_scores_complete"].passed


def test_samples_votes_and_scores_are_stored_per_sample(two_releases):
    data_dir, _ = two_releases
    model = read_scores(data_dir, "r1")["models"][SIM]
    n_tasks = model["n_tasks"]
    assert (model["repeats"], model["n_samples"]) == (3, 3 * n_tasks)
    assert model["flaky_tasks"] and model["flip_rate"] > 0
    assert model["pass_k_pct"] <= model["right_tool_pct"] <= model["pass_at_k_pct"]
    for table in ("task_scores", "agent_calls", "judge_votes"):
        rows = query(
            data_dir,
            f"SELECT sample, count(DISTINCT task_id) FROM {table} WHERE release_id = 'r1' "
            "GROUP BY sample ORDER BY sample",
        )
        assert [sample for sample, _ in rows] == [0, 1, 2], table
    [(pass_k,)] = query(data_dir, "SELECT pass_k_pct FROM release_scores WHERE release_id = 'r1'")
    assert pass_k == model["pass_k_pct"]


def test_the_second_release_is_gated_with_paired_intervals_and_advice(two_releases):
    data_dir, _ = two_releases
    gate = read_scores(data_dir, "r2")["gate"]
    assert gate["baseline_release_id"] == "r1" and gate["noise"] == "require"
    assert {c["metric"] for c in gate["comparisons"]} == {"right_tool_pct", "right_args_pct"}
    for comparison in gate["comparisons"]:
        low, high = comparison["ci95"]
        assert low <= comparison["drop"] <= high
        assert comparison["beyond_noise"] == (not low <= 0 <= high)
    [advice] = gate["advice"]
    assert advice.startswith(f"{SIM}: at the flip rate") and "repeats 3" in advice
    assert "Drops against noise" in (data_dir / "releases" / "r2" / "gate.md").read_text()
