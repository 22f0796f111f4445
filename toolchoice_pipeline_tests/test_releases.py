"""Releases: ``scores.json`` written last, the baseline rules, re-using release ids, and publishing end to end."""

import json

import pytest

from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.object_store import RELEASES_URL_VARIABLE
from toolchoice_pipeline.releases.publish import publish_release
from toolchoice_pipeline.releases.report import load_trend
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.releases.warehouse import Warehouse
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline_tests.release_helpers import make_suite, model_episodes, publish, write_scored

SCORES_FIELDS = {
    "release_id",
    "kind",
    "suite",
    "catalog_version",
    "fixture_version",
    "judge",
    "baseline_release_id",
    "models",
    "gate",
}
MODEL_FIELDS = {
    "n_tasks",
    "errors",
    "right_tool_pct",
    "right_args_pct",
    "calls_per_task",
    "tsq_mean",
    "agent_cost_usd",
    "judge_cost_usd",
    "latency_ms_p50",
    "latency_ms_p95",
}


@pytest.fixture
def suite():
    return make_suite(10)


def test_scores_json_has_the_design_shape_and_the_first_release_becomes_the_baseline(tmp_path, suite):
    published = publish(tmp_path, suite, "r1")
    scores = json.loads((tmp_path / "releases" / "r1" / "scores.json").read_text())
    assert SCORES_FIELDS <= set(scores) and scores["catalog_version"] == suite.catalog_version
    assert MODEL_FIELDS <= set(scores["models"]["local/a"])
    assert scores["models"]["local/a"]["right_tool_pct"] == 100.0
    assert set(scores["gate"]) >= {"passed", "max_drop_points", "failures", "flips"}
    assert published.promoted and ReleaseStore(tmp_path).baseline(suite.name) == "r1"
    assert (tmp_path / "releases" / "r1" / "gate.md").read_text().startswith("## Gate PASSED")


def test_a_failed_gate_never_replaces_the_baseline_and_lists_flips(tmp_path, suite):
    publish(tmp_path, suite, "r1")
    failed = publish(tmp_path, suite, "r2", models={"local/a": {"wrong_tool": {"t03", "t07"}}, "local/b": {}})
    assert not failed.gate.passed and not failed.promoted
    assert failed.scores.baseline_release_id == "r1"
    assert failed.scores.gate.flips["local/a"]["right_tool"].model_dump() == {
        "right_to_wrong": ["t03", "t07"],
        "wrong_to_right": [],
    }
    assert ReleaseStore(tmp_path).baseline(suite.name) == "r1"


@pytest.mark.parametrize("kind", ["nightly", "catalog-change", "adhoc"])
def test_only_release_kind_runs_become_the_baseline(tmp_path, suite, kind):
    publish(tmp_path, suite, "r1")
    other = publish(tmp_path, suite, "x1", kind=kind)
    assert other.gate.passed and not other.promoted
    assert ReleaseStore(tmp_path).baseline(suite.name) == "r1"
    nxt = publish(tmp_path, suite, "r2")
    assert nxt.promoted and nxt.scores.baseline_release_id == "r1"
    assert ReleaseStore(tmp_path).baseline(suite.name) == "r2"


def test_reusing_a_finished_release_id_is_refused_unless_forced(tmp_path, suite):
    publish(tmp_path, suite, "r1")
    before = (tmp_path / "releases" / "r1" / "scores.json").read_bytes()
    with pytest.raises(InputError, match="baseline of suite unit; use --force"):
        publish(tmp_path, suite, "r1")
    assert (tmp_path / "releases" / "r1" / "scores.json").read_bytes() == before
    publish(tmp_path, suite, "n1", kind="nightly")
    with pytest.raises(InputError, match="a finished release"):
        publish(tmp_path, suite, "n1", kind="nightly")
    again = publish(tmp_path, suite, "n1", kind="nightly", force=True)
    assert again.scores.run_id == "run-n1"


def test_a_forced_rerun_of_the_baseline_that_now_fails_hands_the_baseline_back(tmp_path, suite):
    publish(tmp_path, suite, "r1")
    publish(tmp_path, suite, "r2")
    assert ReleaseStore(tmp_path).baseline(suite.name) == "r2"
    rerun = publish(
        tmp_path, suite, "r2", models={"local/a": {"wrong_args": {"t01", "t02"}}, "local/b": {}}, force=True
    )
    assert rerun.scores.baseline_release_id == "r1"  # gated against the one before, not itself
    assert not rerun.gate.passed
    assert ReleaseStore(tmp_path).baseline(suite.name) == "r1"


def test_promotion_is_its_own_step_and_checks_kind_and_gate(tmp_path, suite):
    publish(tmp_path, suite, "r1")
    publish(tmp_path, suite, "r2", models={"local/a": {"wrong_tool": {"t01", "t02"}}, "local/b": {}})
    store = ReleaseStore(tmp_path)
    assert store.promote("r2") is False and store.baseline(suite.name) == "r1"
    with pytest.raises(InputError, match="no finished release 'r9'"):
        store.promote("r9")


def test_a_release_without_scores_json_is_unfinished_and_can_be_rerun_without_force(tmp_path, suite):
    lineage = Lineage(release_id="r1", suite=suite.name, catalog_version=suite.catalog_version, run_id="a")
    # Simulate a run that died after committing its tables but before writing scores.json.
    episodes = model_episodes(suite, "local/a")
    publish_release(tmp_path, suite, lineage, "release", episodes)
    (tmp_path / "releases" / "r1" / "scores.json").unlink()
    store = ReleaseStore(tmp_path)
    assert store.release_ids() == []
    with pytest.raises(InputError, match="no finished release 'r1'"):
        store.read_scores("r1")
    rerun = publish(tmp_path, suite, "r1")
    assert rerun.scores.run_id == "run-r1"
    assert Warehouse(tmp_path).commit("r1").run_id == "run-r1"


def test_baselines_are_kept_per_suite(tmp_path):
    first, second = make_suite(10, name="alpha"), make_suite(10, name="beta")
    publish(tmp_path, first, "a1")
    published = publish(tmp_path, second, "b1", models={"local/a": {"wrong_tool": {"t01", "t02", "t03"}}})
    assert published.scores.baseline_release_id is None and published.promoted
    store = ReleaseStore(tmp_path)
    assert (store.baseline("alpha"), store.baseline("beta")) == ("a1", "b1")


def test_the_trend_with_last_shows_the_most_recent_releases_of_the_suite_oldest_first(tmp_path):
    for written, release_id in enumerate(("r1", "r2", "r3", "o1", "r4", "o2")):
        write_scored(tmp_path, release_id, "other" if release_id.startswith("o") else "unit", written=written)

    def shown(**kwargs):
        return list(dict.fromkeys(p.release_id for p in load_trend(tmp_path, **kwargs)))

    assert shown(suite="unit", last=2) == ["r3", "r4"]  # the other suite's newer releases do not count
    assert shown(suite="unit") == ["r1", "r2", "r3", "r4"]
    assert shown(last=3) == ["o1", "r4", "o2"]


def test_asking_for_an_unknown_release_names_the_last_ten_finished_ones_and_how_many_more(tmp_path):
    for index in range(12):
        write_scored(tmp_path, f"r{index:02d}")
    (tmp_path / "releases" / "r12").mkdir()  # unfinished: no scores.json
    with pytest.raises(InputError) as caught:
        ReleaseStore(tmp_path).read_scores("r99")
    [problem] = caught.value.problems
    assert problem.message.endswith("(finished releases: r02, r03, r04, r05, r06, r07, r08, r09, r10, r11 and 2 more)")


def test_a_local_path_in_toolchoice_releases_url_holds_the_release_files_instead_of_the_data_dir(
    tmp_path, suite, monkeypatch
):
    elsewhere = tmp_path / "shared-releases"
    monkeypatch.setenv(RELEASES_URL_VARIABLE, str(elsewhere))
    publish(tmp_path / "data", suite, "r1")
    assert (elsewhere / "r1" / "scores.json").is_file() and (elsewhere / "r1" / "gate.md").is_file()
    assert json.loads((elsewhere / "baseline.json").read_text())["suites"][suite.name]["release_id"] == "r1"
    assert not (tmp_path / "data" / "releases").exists()
    assert ReleaseStore(tmp_path / "another").baseline(suite.name) == "r1"
    assert [p.release_id for p in load_trend(tmp_path / "another")][:1] == ["r1"]
