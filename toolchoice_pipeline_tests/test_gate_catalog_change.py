"""End to end without Dagster: degrading one demo tool description between two releases fails the gate for
the model that depends on it, lists its flipped tasks, and leaves the first release as the baseline.

Real parts only: the demo suite and run configuration copied from ``data/``, the runner calling the local
agents through LiteLLM, the real warehouse (Parquet + DuckDB) and ``releases/``. The judge is left out
(``votes=[]``): the gate reads right tool and right arguments only.
"""

import json
import shutil
from collections import Counter

import pytest
import yaml

from toolchoice_pipeline.cli import cli
from toolchoice_pipeline.cli.common import run_guarded
from toolchoice_pipeline.execution.runner import run_suite_sync
from toolchoice_pipeline.releases.lineage import Lineage, new_run_id
from toolchoice_pipeline.releases.publish import publish_release
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.releases.warehouse import Warehouse
from toolchoice_pipeline.suites.config import load_run_config
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline_tests.pipeline_helpers import trim_tasks

SUITE = "coding_agent"
DEGRADED_TOOL = "Bash"
ROUTER, NAME_MATCH = "local/bm25-router", "local/name-match"
#: Half of the demo's tasks, spread over the file (every expected tool kept; Bash expected on several).
TASKS = 36


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
    trim_tasks(target, TASKS)
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

    # Tool confusion: scores.json's tables of both releases and both models, the gate's changes and the views
    # agree exactly with task_scores (first_tool) and the suite's tasks (the expected first tool).
    expected_first = {
        release_id: {t.id: t.expected.tool for t in suite.tasks if t.expected is not None}
        for release_id, suite in (("r1", suite_before), ("r2", suite_after))
    }
    with Warehouse(data_dir).connect() as con:
        rows = con.execute(
            "SELECT release_id, model, task_id, first_tool FROM task_scores WHERE error IS NULL"
        ).fetchall()
        view = con.execute("SELECT release_id, model, expected_tool, chosen_tool, n FROM tool_confusion").fetchall()
    counts = Counter((r, m, expected_first[r][t], chosen) for r, m, t, chosen in rows if t in expected_first[r])
    truth = {key: n for key, n in counts.items() if key[2] != key[3]}
    assert {(r, m, e, c): n for r, m, e, c, n in view} == truth
    for release_id in ("r1", "r2"):
        stored = ReleaseStore(data_dir).read_scores(release_id)
        for model in (ROUTER, NAME_MATCH):
            table = {(x.expected, x.chosen): x.count for x in stored.models[model].confusion}
            assert table == {(e, c): n for (r, m, e, c), n in truth.items() if r == release_id and m == model}
    by_task = {(r, m, t): c for r, m, t, c in rows}
    changes = Counter()
    for (r, m, t), chosen in by_task.items():
        if r == "r2" and ("r1", m, t) in by_task:
            expected = expected_first["r2"][t]
            changes[(m, expected, chosen, "now")] += 1
            changes[(m, expected_first["r1"][t], by_task[("r1", m, t)], "baseline")] += 1
    want = {
        (m, e, c): (changes[(m, e, c, "baseline")], changes[(m, e, c, "now")])
        for (m, e, c, _) in changes
        if e != c and changes[(m, e, c, "baseline")] != changes[(m, e, c, "now")]
    }
    stored_changes = second.scores.gate.confusion_changes
    assert {(x.model, x.expected, x.chosen): (x.baseline, x.now) for x in stored_changes} == want
    largest = stored_changes[0]
    assert abs(largest.now - largest.baseline) == max(abs(b - n) for b, n in want.values())
    name = lambda tool: "no call" if tool is None else tool  # noqa: E731
    lead = f"**{name(largest.expected)} → {name(largest.chosen)}: {largest.baseline} → {largest.now} tasks**"
    gate_md = (data_dir / "releases" / "r2" / "gate.md").read_text()
    assert lead in gate_md and gate_md.index(lead) < gate_md.index("| model | status |")
    assert "Bash's description changed:" in gate_md and "“A utility.”" in gate_md
    markdown = data_dir / "gate.md"
    assert run_guarded(cli, ["gate", "r2", "--data-dir", str(data_dir), "--markdown", str(markdown)]) == 1
    assert lead in markdown.read_text()
