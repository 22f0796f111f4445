"""End to end without Dagster: degrading one demo tool description between two releases fails the gate for
the model that depends on it, lists its flipped tasks, and leaves the first release as the baseline.

Real parts only: the demo suite and run configuration copied from ``data/``, the runner calling the local
agents through LiteLLM, the real warehouse (Parquet + DuckDB) and ``releases/``. The judge is left out
(``votes=[]``): the gate reads right tool and right arguments only.
"""

import json
import shutil

import pytest
import yaml

from toolchoice_pipeline.cli import cli
from toolchoice_pipeline.cli.common import run_guarded
from toolchoice_pipeline.execution.runner import run_suite_sync
from toolchoice_pipeline.releases.lineage import Lineage, new_run_id
from toolchoice_pipeline.releases.store import ReleaseStore, publish_release
from toolchoice_pipeline.releases.warehouse import Warehouse
from toolchoice_pipeline.suites.config import load_run_config
from toolchoice_pipeline.suites.suite import load_suite

SUITE = "coding_agent"
DEGRADED_TOOL = "Bash"
ROUTER, NAME_MATCH = "local/bm25-router", "local/name-match"


def release(data_dir, release_id, kind="release"):
    suite = load_suite(data_dir, SUITE)
    episodes = run_suite_sync(suite, load_run_config(data_dir), data_dir=data_dir)
    lineage = Lineage(release_id=release_id, suite=SUITE, catalog_version=suite.catalog_version, run_id=new_run_id())
    return suite, publish_release(data_dir, suite, lineage, kind, episodes, [])


def degrade(data_dir, tool, description):
    path = data_dir / "suites" / SUITE / "catalog.yaml"
    catalog = yaml.safe_load(path.read_text())
    [entry] = [t for t in catalog if t["name"] == tool]
    entry["description"] = description
    path.write_text(yaml.safe_dump(catalog, sort_keys=False))


@pytest.fixture
def data_dir(tmp_path, repo_data_dir):
    target = tmp_path / "data"
    shutil.copytree(
        repo_data_dir,
        target,
        ignore=shutil.ignore_patterns("releases", "warehouse", "cache", "dagster_home", "reports"),
    )
    return target


def test_a_degraded_description_fails_the_gate_for_the_affected_model_and_keeps_the_baseline(data_dir, capsys):
    suite_before, first = release(data_dir, "r1")
    assert first.gate.passed and first.promoted

    degrade(data_dir, DEGRADED_TOOL, "A utility.")
    suite_after, second = release(data_dir, "r2")
    assert suite_after.catalog_version != suite_before.catalog_version

    gate = second.scores.gate.model_dump()
    assert gate["passed"] is False and gate["baseline_release_id"] == "r1"
    assert {f["model"] for f in gate["failures"]} == {ROUTER}
    assert second.gate.models[NAME_MATCH].status == "passed"
    drop = next(f for f in gate["failures"] if f["metric"] == "right_tool_pct")
    assert drop["drop"] > 2.0 and drop["now"] < drop["baseline"]

    # The flipped tasks are listed; among them tasks that need the degraded tool. (Other tasks can flip too:
    # the router's BM25 weights depend on every description in the catalog.)
    expected_tool = {t.id: t.expected.tool for t in suite_after.tasks if t.expected is not None}
    lost = gate["flips"][ROUTER]["right_tool"]["right_to_wrong"]
    assert any(expected_tool[task_id] == DEGRADED_TOOL for task_id in lost)
    assert all(f"`{task_id}`" in (data_dir / "releases" / "r2" / "gate.md").read_text() for task_id in lost[:25])

    # The first release stays the baseline; `toolchoice gate` re-checks the stored release the same way.
    assert ReleaseStore(data_dir).baseline(SUITE) == "r1"
    junit = data_dir / "gate.xml"
    assert run_guarded(cli, ["gate", "r2", "--data-dir", str(data_dir), "--junit", str(junit)]) == 1
    assert lost[0] in capsys.readouterr().out and lost[0] in junit.read_text()
    assert json.loads((data_dir / "releases" / "r1" / "scores.json").read_text())["gate"]["passed"] is True

    # Both releases are in the warehouse, each row traced to the catalog version that produced it.
    with Warehouse(data_dir).connect() as con:
        versions = dict(con.execute("SELECT DISTINCT release_id, catalog_version FROM task_scores").fetchall())
        described = con.execute(
            "SELECT release_id, description FROM tool_catalog WHERE tool_name = ? ORDER BY release_id", [DEGRADED_TOOL]
        ).fetchall()
        flipped = [
            row[0]
            for row in con.execute(
                "SELECT a.task_id FROM task_scores a JOIN task_scores b USING (model, task_id) WHERE a.release_id = 'r1' "
                "AND b.release_id = 'r2' AND a.model = ? AND a.right_tool AND NOT b.right_tool ORDER BY a.task_id",
                [ROUTER],
            ).fetchall()
        ]
    assert versions == {"r1": suite_before.catalog_version, "r2": suite_after.catalog_version}
    assert flipped == lost
    assert described[1] == ("r2", "A utility.") and described[0][1] != "A utility."
