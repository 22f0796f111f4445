"""``toolchoice run`` on a copy of ``data/``: the first release passes (exit 0); an unchanged re-run with every
default (``./data``, the demo suite, a generated adhoc release id) makes no agent model call while the judge polls
afresh; a degraded description fails the gate (exit 1); the runs are in ``<data-dir>/dagster_home``. (Refused
arguments: test_cli_run_arguments.py, in process.) The runs are of the demo trimmed to TASKS tasks spread over it
(six of them Bash's: enough for its degraded description to flip bm25-router's choices past the gate's 2-point
rule).

Real parts: the console script in a subprocess (the re-run from the working directory, the failed gate's exit 1;
the first release's words and exit 0 in this process through ``main``'s guard), the local agents and judge through LiteLLM, the Dagster
instance of the data directory, Parquet + DuckDB.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import dagster as dg
import pytest

from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline_tests.pipeline_helpers import (
    DEMO_MODELS,
    DEMO_SUITE,
    REPO_DATA,
    copy_data,
    query,
    read_scores,
    set_description,
    toolchoice,
    trim_tasks,
)
from toolchoice_pipeline_tests.small_runs import toolchoice_here

pytestmark = pytest.mark.slow

GENERATED_ID = re.compile(r"^adhoc-\d{8}-\d{6}$")
TASKS = 20


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """r1 (kind release), then the unchanged re-run with every default, then r3 after degrading Bash (judged too,
    as every run is by default)."""
    root = tmp_path_factory.mktemp("cli_run")
    data_dir = copy_data(root / "data")
    trim_tasks(data_dir, TASKS)
    # The first release's words and exit code in this process (``main``'s guard); the re-run from the working
    # directory and the failing gate's exit code through the console script.
    first = toolchoice_here(None, "run", "--data-dir", str(data_dir), "--release", "r1", "--kind", "release")
    rerun = toolchoice("run", cwd=root)
    [rerun_id] = [p.name for p in (data_dir / "releases").iterdir() if p.is_dir() and p.name != "r1"]
    set_description(data_dir, "Bash", "A utility.")
    degraded = toolchoice("run", "--data-dir", str(data_dir), "--release", "r3", "--kind", "release")
    return {"data_dir": data_dir, "first": first, "rerun": rerun, "rerun_id": rerun_id, "degraded": degraded}


def test_the_first_release_exits_0_and_prints_the_scores_and_the_gate(runs):
    done = runs["first"]
    assert done.returncode == 0, done.stdout + done.stderr
    scores = read_scores(runs["data_dir"], "r1")
    for model in DEMO_MODELS:
        assert model in done.stdout
        assert f"{scores['models'][model]['right_tool_pct']:.2f}" in done.stdout
    assert "gate passed" in done.stdout
    n_tasks = len(load_suite(runs["data_dir"], DEMO_SUITE).tasks)
    assert n_tasks == TASKS
    assert f"{n_tasks}/{n_tasks}" in done.stderr  # the progress bar: tasks done / total per model


def test_an_unchanged_rerun_with_the_defaults_makes_no_agent_model_call_but_the_judge_polls_again(runs):
    done, data_dir, rerun_id = runs["rerun"], runs["data_dir"], runs["rerun_id"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert GENERATED_ID.match(rerun_id)
    scores = read_scores(data_dir, rerun_id)
    assert (scores["kind"], scores["suite"], scores["baseline_release_id"]) == ("adhoc", DEMO_SUITE, "r1")
    n_tasks = len(load_suite(data_dir, DEMO_SUITE).tasks)
    calls = query(data_dir, "SELECT count(*), sum(cache_hit::INT) FROM agent_calls WHERE release_id = ?", [rerun_id])
    assert calls[0][0] > 0 and calls[0][0] == calls[0][1]  # every agent call of the re-run came from the cache
    first = query(data_dir, "SELECT sum(cache_hit::INT) FROM agent_calls WHERE release_id = 'r1'")
    assert first == [(0,)]
    votes = dict(
        query(
            data_dir,
            "SELECT release_id, count(*) FROM judge_votes WHERE model NOT IN ('canary', 'preflight') GROUP BY release_id",
        )
    )
    assert votes[rerun_id] == votes["r1"] == len(DEMO_MODELS) * n_tasks * 3
    # The canary (4 turns) is judged with every release, its votes stored with the others.
    canary = dict(
        query(data_dir, "SELECT release_id, count(*) FROM judge_votes WHERE model = 'canary' GROUP BY release_id")
    )
    assert canary[rerun_id] == canary["r1"] == 4 * 3
    assert {m: f["right_tool_pct"] for m, f in scores["models"].items()} == {
        m: f["right_tool_pct"] for m, f in read_scores(data_dir, "r1")["models"].items()
    }


def test_a_degraded_description_fails_the_gate_and_exits_1_listing_the_flipped_tasks(runs):
    done, data_dir = runs["degraded"], runs["data_dir"]
    assert done.returncode == 1, done.stdout + done.stderr
    gate = read_scores(data_dir, "r3")["gate"]
    assert gate["passed"] is False and gate["baseline_release_id"] == "r1"
    assert "gate FAILED" in done.stdout and "local/bm25-router" in done.stdout
    flipped = gate["flips"]["local/bm25-router"]["right_tool"]["right_to_wrong"]
    assert f"flipped right → wrong on {len(flipped)} tasks" in done.stdout
    assert all(task_id in done.stdout for task_id in flipped[:12])


def test_the_cli_runs_are_recorded_in_the_data_directorys_dagster_instance(runs, monkeypatch):
    data_dir = runs["data_dir"]
    monkeypatch.setenv("DAGSTER_HOME", str(data_dir / "dagster_home"))  # as `dagster dev` would open it
    with dg.DagsterInstance.get() as instance:
        statuses = {run.tags["toolchoice/release"]: run.status for run in instance.get_runs()}
        partitions = set(instance.get_dynamic_partitions("release"))
    assert statuses == {
        "r1": dg.DagsterRunStatus.SUCCESS,
        runs["rerun_id"]: dg.DagsterRunStatus.SUCCESS,
        "r3": dg.DagsterRunStatus.FAILURE,
    }
    assert partitions == {"r1", runs["rerun_id"], "r3"}


def test_after_the_edit_the_ui_marks_the_releases_of_the_old_catalog_stale_and_the_cli_release_of_the_new_fresh(
    runs, monkeypatch
):
    """CLI release r1 and the re-run, then an edit, then CLI release r3, nothing observed by anyone else: the
    CLI's own observation before r3 makes r1 and the re-run STALE and r3 FRESH (Dagster's stale status)."""
    from dagster._core.definitions.data_version import CachingStaleStatusResolver
    from dagster._core.loader import LoadingContextForTest

    from toolchoice_pipeline.definitions import build_definitions
    from toolchoice_pipeline.defs.sources import current_files_version, last_observed_version

    data_dir = runs["data_dir"]
    monkeypatch.setenv("DAGSTER_HOME", str(data_dir / "dagster_home"))
    graph = build_definitions(str(data_dir)).resolve_asset_graph()
    with dg.DagsterInstance.get() as instance:
        assert last_observed_version(instance) == current_files_version(data_dir)
        resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
        statuses = {
            release: resolver.get_status(dg.AssetKey("release_snapshot"), release).value
            for release in ("r1", runs["rerun_id"], "r3")
        }
    assert statuses == {"r1": "STALE", runs["rerun_id"]: "STALE", "r3": "FRESH"}


# --- bad input: exit 2, one line naming the problem, nothing earlier lost -------------------------------------


def test_forcing_a_baseline_to_rerun_as_another_kind_warns_that_it_stops_being_the_baseline(runs, tmp_path, capsys):
    """On a copy of the runs' data directory (r1 is its suite's only baseline; the catalog put back as r1 ran it),
    r1 re-run with --force as the default kind adhoc: words and exit code only, in this process (``main``'s
    guard)."""
    data_dir = Path(shutil.copytree(runs["data_dir"], tmp_path / "data"))
    catalog = Path("suites") / DEMO_SUITE / "catalog.yaml"
    shutil.copyfile(REPO_DATA / catalog, data_dir / catalog)
    assert json.loads((data_dir / "releases" / "baseline.json").read_text())["suites"][DEMO_SUITE]["release_id"] == "r1"
    rerun = toolchoice_here(capsys, "run", "--data-dir", str(data_dir), "--release", "r1", "--force", "--no-judge")
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "warning: r1 is a baseline of suite coding_agent; re-run as kind adhoc it stops being one" in rerun.stderr
    baselines = json.loads((data_dir / "releases" / "baseline.json").read_text(encoding="utf-8"))
    assert baselines["suites"]["coding_agent"]["release_id"] is None
