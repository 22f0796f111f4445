"""End to end through Dagster: the demo suite (16 of its tasks) materialised by ``release_job`` in a temporary
instance with the local agents and the local judge; then input no one here wrote: the BFCL ``simple_python``
suite with a replay model, and ingested Claude Code sessions (two real ones, and the canary) through
``toolchoice run``.

Real parts only: a real Dagster instance (``instance_for_test``), the runner calling the in-process models
through LiteLLM, real Parquet files and DuckDB views, ``toolchoice run`` through the CLI's entry point (the
console script's own process behaviour is tested in test_cli_run.py).
"""

from __future__ import annotations

import json
from collections import Counter

import dagster as dg
import pytest

from toolchoice_pipeline.cli import cli
from toolchoice_pipeline.cli.common import run_guarded
from toolchoice_pipeline.defs.staging import read_staged
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline_tests.bfcl_helpers import answers_file, questions_file, read_verdicts, write_replay_file
from toolchoice_pipeline_tests.pipeline_helpers import (
    ASSET_CHAIN,
    DEMO_MODELS,
    DEMO_SUITE,
    LINEAGE_COLUMNS,
    TEST_DATA,
    WAREHOUSE_TABLES,
    check_evaluations,
    copy_data,
    dagster_instance,
    materialise,
    materialised_assets,
    query,
    read_scores,
    toolchoice_in_process,
    trim_tasks,
)

pytestmark = pytest.mark.slow

N_DEMO_TASKS = 16
CHECKS = {"release_gate", "judge_calibration", "agent_runs_complete", "task_scores_complete", "warehouse_schema"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """Release r1 (kind release) of the demo suite (16 of its tasks, every tool kind), materialised once for the
    tests of this section; every count below is derived from the suite as loaded."""
    root = tmp_path_factory.mktemp("demo")
    data_dir = copy_data(root / "data")
    trim_tasks(data_dir, N_DEMO_TASKS)
    with dagster_instance(root / "dagster_home") as instance:
        result = materialise(data_dir, instance, "r1", kind="release")
        yield data_dir, instance, result


def test_the_demo_release_materialises_every_asset_and_passes_every_check(demo):
    _, _, result = demo
    assert result.success
    assert set(materialised_assets(result)) == set(ASSET_CHAIN)
    evaluations = check_evaluations(result)
    assert set(evaluations) == CHECKS
    assert {name: e.passed for name, e in evaluations.items()} == dict.fromkeys(CHECKS, True)
    assert all(e.partition == "r1" for e in evaluations.values())
    assert result.dagster_run.tags["dagster/partition"] == "r1"


def test_scores_json_holds_both_models_the_judge_and_a_passed_gate(demo):
    data_dir, _, result = demo
    suite = load_suite(data_dir, DEMO_SUITE)
    scores = read_scores(data_dir, "r1")
    assert (scores["release_id"], scores["kind"], scores["suite"]) == ("r1", "release", DEMO_SUITE)
    assert scores["catalog_version"] == suite.catalog_version
    assert scores["fixture_version"] == suite.fixture_version
    assert scores["run_id"] == result.run_id
    assert scores["judge"]["model"] == "local/catalog-judge" and scores["judge"]["polls"] == 3
    assert scores["baseline_release_id"] is None
    assert scores["gate"]["passed"] is True
    assert set(scores["models"]) == set(DEMO_MODELS)
    for model in DEMO_MODELS:
        figures = scores["models"][model]
        assert figures["n_tasks"] == len(suite.tasks) and figures["errors"] == 0
        assert 0 <= figures["right_args_pct"] <= figures["right_tool_pct"] <= 100
        assert figures["tsq_mean"] is not None


def test_every_table_is_parquet_under_its_release_partition_and_readable_through_read_only_duckdb(demo):
    data_dir, _, result = demo
    suite = load_suite(data_dir, DEMO_SUITE)
    for table in WAREHOUSE_TABLES:
        files = list((data_dir / "warehouse" / table / "release_id=r1").glob("*.parquet"))
        assert len(files) == 1, f"{table}: {files}"
        rows = query(data_dir, f"SELECT {', '.join(LINEAGE_COLUMNS)}, count(*) FROM {table} GROUP BY ALL")
        assert rows == [("r1", DEMO_SUITE, suite.catalog_version, result.run_id, rows[0][-1])], table
        assert rows[0][-1] > 0
        nulls = query(
            data_dir, f"SELECT count(*) FROM {table} WHERE " + " OR ".join(f"{c} IS NULL" for c in LINEAGE_COLUMNS)
        )
        assert nulls == [(0,)], table
    n_tasks = len(suite.tasks)
    assert query(data_dir, "SELECT count(*) FROM task_scores") == [(2 * n_tasks,)]
    assert query(data_dir, "SELECT count(*) FROM judge_votes WHERE model NOT IN ('canary', 'preflight')") == [
        (2 * n_tasks * 3,)
    ]
    assert query(data_dir, "SELECT count(*) FROM judge_votes WHERE model = 'canary'") == [(4 * 3,)]
    assert query(data_dir, "SELECT count(DISTINCT tool_name) FROM tool_catalog") == [(len(suite.all_tools()),)]


def test_the_stored_shares_are_the_shares_of_the_stored_task_scores(demo):
    data_dir, _, _ = demo
    scores = read_scores(data_dir, "r1")
    recomputed = dict(
        query(
            data_dir,
            "SELECT model, round(100 * avg(right_tool::INT), 2) FROM task_scores "
            "WHERE error IS NULL AND right_tool IS NOT NULL GROUP BY model",
        )
    )
    assert recomputed == {model: scores["models"][model]["right_tool_pct"] for model in DEMO_MODELS}
    views = dict(query(data_dir, "SELECT model, right_args_pct FROM release_scores"))
    assert views == {model: scores["models"][model]["right_args_pct"] for model in DEMO_MODELS}


def test_tool_catalog_reports_the_catalog_version_as_its_data_version(demo):
    data_dir, instance, result = demo
    version = load_suite(data_dir, DEMO_SUITE).catalog_version
    materialisation = materialised_assets(result)["tool_catalog"]
    assert materialisation.tags["dagster/data_version"] == version
    stored = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("tool_catalog"), asset_partitions=["r1"]), limit=1
    ).records
    assert stored[0].asset_materialization.tags["dagster/data_version"] == version


def test_materialisations_carry_versions_models_costs_and_the_scores_table(demo):
    data_dir, _, result = demo
    suite = load_suite(data_dir, DEMO_SUITE)
    scores = read_scores(data_dir, "r1")
    meta = {name: m.metadata for name, m in materialised_assets(result).items()}
    assert meta["tool_catalog"]["catalog_version"].value == suite.catalog_version
    assert meta["tool_catalog"]["n_tools"].value == len(suite.all_tools())
    assert "No baseline yet" in meta["tool_catalog"]["catalog_diff_vs_baseline"].value
    assert meta["eval_tasks"]["fixture_version"].value == suite.fixture_version
    assert meta["eval_tasks"]["n_tasks"].value == len(suite.tasks)
    assert meta["agent_runs"]["models"].value == list(DEMO_MODELS)
    assert meta["agent_runs"]["n_episodes"].value == 2 * len(suite.tasks)
    assert meta["agent_runs"]["agent_cost_usd"].value == 0.0
    assert meta["judge_votes"]["n_votes"].value == 2 * len(suite.tasks) * 3
    assert meta["judge_votes"]["judge_cost_usd"].value == 0.0
    release = meta["release_scores"]
    assert release["catalog_version"].value == suite.catalog_version
    assert release["fixture_version"].value == suite.fixture_version
    assert release["gate_passed"].value is True
    assert {"agent_cost_usd", "judge_cost_usd"} <= set(release)
    table = release["scores"].value
    assert table.startswith("| model |")
    for model in DEMO_MODELS:
        n = len(suite.tasks)  # every demo task is labelled: labelled n, unlabelled 0
        assert f"| {model} | {n} | 0 | {n} | 0 | {scores['models'][model]['right_tool_pct']:.2f} |" in table
    assert release["scores_json"].value == str(data_dir / "releases" / "r1" / "scores.json")
    # the trend is Markdown in the metadata; the chart is drawn only when asked (`run --chart`, `report`)
    assert release["trend"].value.startswith("| release | kind | gate |")
    assert "trend_chart" not in release and not (data_dir / "releases" / "r1" / "trend.png").exists()


def test_a_release_kind_release_that_passes_becomes_the_baseline(demo):
    data_dir, _, result = demo
    assert ReleaseStore(data_dir).baseline(DEMO_SUITE) == "r1"
    baseline = materialised_assets(result)["baseline"].metadata
    assert baseline["promoted"].value is True and baseline["baseline_release_id"].value == "r1"


def test_stage_outputs_stay_in_staging_and_out_of_the_duckdb_views(demo):
    data_dir, _, _ = demo
    staged = data_dir / "warehouse" / "_staging" / "release_id=r1"
    assert {p.name for p in staged.glob("*.parquet")} == {
        "release_snapshot.parquet",
        "release_snapshot.tasks.parquet",  # the snapshot's tasks, apart: a step reads the block it uses
        "tool_catalog.parquet",
    }
    assert json.loads((staged / "eval_tasks.manifest.json").read_text()) == {
        "files": ["release_snapshot.tasks.parquet"]
    }
    for sharded in ("agent_runs", "judge_votes", "task_scores"):  # one file per shard, listed by a manifest
        assert len(list(read_staged(data_dir, "r1", sharded))) > 0, sharded
        assert (staged / f"{sharded}.manifest.json").is_file() and (staged / sharded).is_dir()
    views = {
        row[0] for row in query(data_dir, "SELECT table_name FROM information_schema.tables WHERE table_type = 'VIEW'")
    }
    assert views == {*WAREHOUSE_TABLES, "releases", "task_rates", "tool_confusion", "tool_scores"}
    definitions = dict(query(data_dir, "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal"))
    for table in WAREHOUSE_TABLES:  # each view reads its table's committed files, never the staged outputs
        assert f"/warehouse/{table}/release_id=*/part-*.parquet" in definitions[table]
        assert "_staging" not in definitions[table]
    committed = query(data_dir, "SELECT path FROM _files WHERE release_id = 'r1' ORDER BY table_name")
    assert [row[0].split("/")[0] for row in committed] == sorted(WAREHOUSE_TABLES)


# --- input no one here wrote --------------------------------------------------------------------------------


def test_the_imported_bfcl_simple_python_suite_runs_through_the_job_with_a_replay_model(tmp_path):
    """All 400 tasks, judge off (``judge=False``, as ``--no-judge``) to keep the test short: the judge is
    covered on the demo suite above. Replies: BFCL's own synthetic outputs, ints-as-floats where the
    verdicts file has one, else numbers-as-strings, else the gold answer; each task's right arguments must equal
    BFCL's own verdict on the reply chosen for it."""
    data_dir = copy_data(tmp_path / "data")
    assert (
        run_guarded(
            cli,
            [
                "import",
                "bfcl",
                str(questions_file("simple_python")),
                str(answers_file("simple_python")),
                "--suite",
                "bfcl_simple_python",
                "--data-dir",
                str(data_dir),
            ],
        )
        == 0
    )
    chosen = write_replay_file(
        data_dir / "replays" / "bfcl_simple_python.jsonl",
        prefer=("int_as_float", "number_as_string"),
        categories=["simple_python"],
    )
    assert len(chosen) == 400 and len(set(chosen.values())) == 3
    model = "replay/replays/bfcl_simple_python.jsonl"
    with dagster_instance(tmp_path / "dagster_home") as instance:
        result = materialise(
            data_dir, instance, "bfcl-1", kind="release", suite="bfcl_simple_python", models=[model], judge=False
        )
    assert result.success
    evaluations = check_evaluations(result)
    assert all(e.passed for e in evaluations.values()), {n: e.description for n, e in evaluations.items()}

    valid = {
        line["task_id"]: line["bfcl_valid"]
        for line in read_verdicts()
        if line["category"] == "simple_python" and chosen.get(line["task_id"]) == line["variant"]
    }
    stored = dict(query(data_dir, "SELECT task_id, right_args FROM task_scores WHERE model = ?", [model]))
    assert stored == valid
    scores = read_scores(data_dir, "bfcl-1")
    figures = scores["models"][model]
    assert figures["n_tasks"] == 400 and figures["errors"] == 0
    assert figures["right_args_pct"] == round(100 * sum(valid.values()) / 400, 2)
    assert figures["tsq_mean"] is None and scores["judge"] is None
    assert scores["match_profile"] == "bfcl"
    assert query(data_dir, "SELECT count(*) FROM judge_votes") == [(0,)]


def test_ingested_claude_code_sessions_run_through_toolchoice_run(tmp_path):
    data_dir = copy_data(tmp_path / "data")
    sessions = sorted((TEST_DATA / "transcripts" / "claude_code").glob("*.jsonl"))
    assert (
        run_guarded(cli, ["ingest", "claude-code", *map(str, sessions), "--suite", "s", "--data-dir", str(data_dir)])
        == 0
    )
    suite = load_suite(data_dir, "s")
    [model] = suite.spec.models
    assert model.startswith("replay/")

    assert toolchoice_in_process("run", "--suite", "s", "--release", "cc-1", data_dir=data_dir) == 0
    scores = read_scores(data_dir, "cc-1")
    figures = scores["models"][model]
    assert figures["n_tasks"] == len(suite.tasks) > 0 and figures["errors"] == 0
    assert figures["tsq_mean"] is not None  # the judge graded the recorded choices
    # Unlabelled sessions: no right-tool share, every score flagged as such, every row traced to the catalog.
    assert figures["right_tool_pct"] is None and figures["n_unlabelled"] == len(suite.tasks)
    assert query(data_dir, "SELECT DISTINCT suite, catalog_version FROM task_scores") == [("s", suite.catalog_version)]
    first_tools = Counter(row[0] for row in query(data_dir, "SELECT first_tool FROM task_scores"))
    recorded = Counter(
        json.loads(line)["tool_calls"][0]["name"] if json.loads(line)["tool_calls"] else None
        for line in (data_dir / "suites" / "s" / "replay.jsonl").read_text().splitlines()
    )
    assert first_tools == recorded


def test_the_ingested_canary_scores_tsq_a_quarter_with_the_offline_judge(tmp_path):
    data_dir = copy_data(tmp_path / "data")
    from toolchoice_pipeline.ingest.canary import PACKAGED_CANARY as sessions

    assert (
        run_guarded(
            cli,
            [
                "ingest",
                "claude-code",
                str(sessions / "canary.jsonl"),
                "--labels",
                str(sessions / "canary.labels.jsonl"),
                "--suite",
                "canary",
                "--data-dir",
                str(data_dir),
            ],
        )
        == 0
    )
    assert toolchoice_in_process("run", "--suite", "canary", "--release", "canary-1", data_dir=data_dir) == 0
    scores = read_scores(data_dir, "canary-1")
    [(model, figures)] = scores["models"].items()
    assert model == "replay/suites/canary/replay.jsonl"
    assert scores["judge"]["model"] == "local/catalog-judge"
    assert figures["tsq_mean"] == 0.25
    assert figures["right_tool_pct"] == 25.0  # one good choice, three bad ones (the labels agree)
    polls = query(
        data_dir,
        "SELECT task_id, count(*), sum((verdict = 'correct')::INT) FROM judge_votes "
        "WHERE release_id = 'canary-1' AND model NOT IN ('canary', 'preflight') GROUP BY task_id ORDER BY task_id",
    )
    assert [row[1] for row in polls] == [3, 3, 3, 3] and sum(row[2] for row in polls) == 3
