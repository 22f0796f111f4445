"""What a Dagster user reads off the assets (issue 26): one data version per content, whatever the order rows
come in; staleness that stays FRESH over identical re-materialisations; Dagster's standard metadata keys
(``dagster/row_count``, ``dagster/column_schema``, ``dagster/table_name``), owners, tags, code versions tied to
the rubric and scorer; per-model figures as numbers (the Plots tab); the gate check's largest drop and its limit.

Real parts: release r0 (kind release, the baseline) and release r1 (forced, so it can be re-materialised) of 12
of the demo's tasks, materialised through ``release_job`` in a real Dagster instance, the in-process local
models, Parquet and DuckDB; r1 is materialised three times in all.
"""

from __future__ import annotations

import dagster as dg
import pytest

from toolchoice_pipeline.definitions import build_definitions
from toolchoice_pipeline.defs.staging import RowsDigest, read_staged
from toolchoice_pipeline_tests.pipeline_helpers import (
    ASSET_CHAIN,
    WAREHOUSE_TABLES,
    check_evaluations,
    copy_data,
    dagster_instance,
    materialise,
    materialised_assets,
    query,
    read_scores,
    trim_tasks,
)

pytestmark = pytest.mark.slow

STAGED = ("release_snapshot", "tool_catalog", "eval_tasks", "agent_runs", "judge_votes", "task_scores")
ASSET_TABLE = {
    "tool_catalog": "tool_catalog",
    "agent_runs": "agent_calls",
    "judge_votes": "judge_votes",
    "task_scores": "task_scores",
    "release_scores": "release_scores",
}


def stale_statuses(instance, defs, partition: str) -> dict[str, str]:
    """``{asset: FRESH | STALE | MISSING}`` of one partition, as the UI computes it."""
    from dagster._core.definitions.data_version import CachingStaleStatusResolver
    from dagster._core.loader import LoadingContextForTest

    resolver = CachingStaleStatusResolver(instance, defs.resolve_asset_graph(), LoadingContextForTest(instance))
    return {name: resolver.get_status(dg.AssetKey(name), partition).value for name in ASSET_CHAIN}


def data_versions(result) -> dict[str, str]:
    return {name: m.tags["dagster/data_version"] for name, m in materialised_assets(result).items()}


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    root = tmp_path_factory.mktemp("metadata")
    data_dir = copy_data(root / "data")
    trim_tasks(data_dir, 12)
    with dagster_instance(root / "dagster_home") as instance:
        assert materialise(data_dir, instance, "r0", kind="release").success
        runs = [materialise(data_dir, instance, "r1", kind="adhoc", force=True)]
        defs = build_definitions(str(data_dir))
        statuses = [stale_statuses(instance, defs, "r1")]
        job = defs.resolve_job_def("release_job")
        for _ in range(2):
            runs.append(job.execute_in_process(partition_key="r1", instance=instance, raise_on_error=False))
            statuses.append(stale_statuses(instance, defs, "r1"))
        assert all(run.success for run in runs)
        yield {"data_dir": data_dir, "runs": runs, "statuses": statuses, "defs": defs}


def test_three_identical_materialisations_give_each_asset_one_data_version(released):
    versions = [data_versions(run) for run in released["runs"]]
    assert set(versions[0]) == set(ASSET_CHAIN)
    for name in ASSET_CHAIN:
        assert len({run[name] for run in versions}) == 1, (name, [run[name] for run in versions])


def test_identical_re_materialisations_leave_every_asset_fresh(released):
    for statuses in released["statuses"]:
        assert statuses == dict.fromkeys(ASSET_CHAIN, "FRESH")


def test_a_row_digest_is_the_same_in_any_order_and_differs_with_the_content(released):
    scores = list(read_staged(released["data_dir"], "r1", "task_scores"))
    assert len(scores) > 10

    def version(records) -> str:
        digest = RowsDigest()
        for record in records:
            digest.add(record)
        return digest.hexdigest()

    assert version(scores) == version(reversed(scores)) == version(sorted(scores, key=lambda s: (s.task_id, s.model)))
    changed = [scores[0].model_copy(update={"right_tool": not scores[0].right_tool}), *scores[1:]]
    assert version(changed) != version(scores)
    assert version(scores[1:]) != version(scores)


def test_every_staged_asset_gives_its_row_count_in_the_standard_key(released):
    data_dir = released["data_dir"]
    materialised = materialised_assets(released["runs"][-1])
    for name in STAGED:
        count = materialised[name].metadata["dagster/row_count"].value
        if name == "release_snapshot":
            assert count == 1  # one pinned snapshot record
        else:
            assert count == len(read_staged(data_dir, "r1", name)), name
    scores = read_scores(data_dir, "r1")
    assert materialised["release_scores"].metadata["dagster/row_count"].value == len(scores["models"])
    assert len(scores["models"]) == query(data_dir, "SELECT count(*) FROM release_scores WHERE release_id = 'r1'")[0][0]


def test_warehouse_assets_give_their_table_name_and_column_schema_as_the_warehouse_has_them(released):
    data_dir = released["data_dir"]
    specs = {spec.key.to_user_string(): spec for spec in released["defs"].resolve_all_asset_specs()}
    assert set(ASSET_TABLE.values()) == set(WAREHOUSE_TABLES)
    for asset, table in ASSET_TABLE.items():
        metadata = specs[asset].metadata
        assert metadata["dagster/table_name"] == f"toolchoice.main.{table}"
        schema = metadata["dagster/column_schema"]
        assert isinstance(schema, dg.TableSchema)
        described = query(data_dir, f"DESCRIBE {table}")
        assert [column.name for column in schema.columns] == [row[0] for row in described], table
        assert all(column.type for column in schema.columns)
    for asset in ("release_snapshot", "eval_tasks", "baseline"):
        assert "dagster/table_name" not in specs[asset].metadata


def test_release_scores_gives_each_models_figures_as_numbers_for_the_plots_tab(released):
    scores = read_scores(released["data_dir"], "r1")
    metadata = materialised_assets(released["runs"][-1])["release_scores"].metadata
    assert len(scores["models"]) >= 2
    for model, figures in scores["models"].items():
        for name in ("right_tool_pct", "right_args_pct", "tsq_mean", "agent_cost_usd"):
            assert figures[name] is not None
            value = metadata[f"{model}/{name}"]
            assert isinstance(value, dg.FloatMetadataValue), (model, name, value)
            assert value.value == pytest.approx(figures[name])


def test_the_gate_check_shows_the_largest_drop_and_the_limit(released):
    gate = read_scores(released["data_dir"], "r1")["gate"]
    assert gate["baseline_release_id"] == "r0" and gate["comparisons"]
    metadata = check_evaluations(released["runs"][-1])["release_gate"].metadata
    worst = max(gate["comparisons"], key=lambda c: c["drop"])
    assert metadata["largest_drop_points"].value == pytest.approx(worst["drop"])
    assert metadata["largest_drop_at"].value == f"{worst['model']} {worst['metric']}"
    assert metadata["drop_limit_points"].value == metadata["max_drop_points"].value == gate["max_drop_points"]


def test_assets_have_owners_tags_and_code_versions_tied_to_rubric_and_scorer(released):
    from toolchoice_pipeline.defs.versions import MATCHING_VERSION, SCORER_VERSION, source_version
    from toolchoice_pipeline.judge import RUBRIC_VERSION

    specs = {spec.key.to_user_string(): spec for spec in released["defs"].resolve_all_asset_specs()}
    for name in ASSET_CHAIN:
        assert specs[name].owners == ["team:toolchoice"], name
        assert specs[name].tags["domain"] == "llm-eval", name
    assert RUBRIC_VERSION in specs["judge_votes"].code_version
    assert MATCHING_VERSION == source_version("scoring/matching") != source_version("scoring/matching/bfcl.py")
    for name in ("task_scores", "release_scores"):
        assert SCORER_VERSION in specs[name].code_version and MATCHING_VERSION in specs[name].code_version
    assert specs["agent_runs"].code_version != specs["task_scores"].code_version
