"""The pinned release snapshot (issue 10): a release evaluates the inputs its first asset resolved, whatever
happens to the suite files afterwards.

The mid-run edit: ``release_snapshot`` → ``agent_runs`` of a partition are materialised, a tool description is
edited, then the rest runs; the scores, the stored catalog and the ``agent_calls`` rows must all carry the
catalog the agents saw. A single-asset re-materialisation of ``agent_runs`` after the edit (what the UI's
"Materialize selected" does) must run the pinned catalog again: every call is served by the journal under the
same request keys. Real parts: a real Dagster instance, the in-process local models through LiteLLM (on 12 of
the demo's tasks), Parquet and DuckDB.
"""

from __future__ import annotations

import dagster as dg
import pytest

from toolchoice_pipeline.definitions import build_definitions
from toolchoice_pipeline.defs.partitions import RELEASE_PARTITIONS_NAME
from toolchoice_pipeline.judge.calibration import CANARY_MODEL
from toolchoice_pipeline.judge.preflight import PREFLIGHT_MODEL
from toolchoice_pipeline.releases.request import ReleaseRequest, write_request
from toolchoice_pipeline.releases.snapshot import pin_snapshot, read_snapshot, snapshot_path
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline_tests.pipeline_helpers import (
    DEMO_SUITE,
    copy_data,
    dagster_instance,
    materialised_assets,
    query,
    read_scores,
    set_description,
    trim_tasks,
)

EDITED_TOOL = "Read"
EDIT = "Deletes the repository. Never call this."
FIRST = ("release_snapshot", "tool_catalog", "eval_tasks", "agent_runs")
REST = ("judge_votes", "task_scores", "release_scores", "baseline")
N_TASKS = 12  # of the demo's tasks, for the materialisations


def run_assets(data_dir, instance, release_id: str, names: tuple[str, ...]):
    """``release_job`` restricted to ``names`` for one partition, as a run launched with a selection."""
    job = build_definitions(str(data_dir)).resolve_job_def("release_job")
    return job.execute_in_process(
        partition_key=release_id,
        instance=instance,
        raise_on_error=False,
        asset_selection=[dg.AssetKey(name) for name in names],
    )


def staged_episodes(data_dir, release_id: str):
    from toolchoice_pipeline.defs.staging import read_staged

    return list(read_staged(data_dir, release_id, "agent_runs"))


@pytest.fixture(scope="module")
def edited_mid_run(tmp_path_factory):
    """Partition r1: the first four assets, then the edit, then the rest."""
    root = tmp_path_factory.mktemp("mid_run")
    data_dir = copy_data(root / "data")
    trim_tasks(data_dir, N_TASKS)
    seen = load_suite(data_dir, DEMO_SUITE).catalog_version
    with dagster_instance(root / "dagster_home") as instance:
        write_request(data_dir, ReleaseRequest(release_id="r1", kind="release", requested_by="test"))
        instance.add_dynamic_partitions(RELEASE_PARTITIONS_NAME, ["r1"])
        first = run_assets(data_dir, instance, "r1", FIRST)
        episodes_before = staged_episodes(data_dir, "r1")
        original = set_description(data_dir, EDITED_TOOL, EDIT)
        edited = load_suite(data_dir, DEMO_SUITE).catalog_version
        rest = run_assets(data_dir, instance, "r1", REST)
        yield {
            "data_dir": data_dir,
            "instance": instance,
            "seen": seen,
            "edited": edited,
            "first": first,
            "rest": rest,
            "original": original,
            "episodes_before": episodes_before,
        }


@pytest.mark.slow
def test_after_a_mid_run_edit_the_release_carries_the_catalog_its_agents_saw(edited_mid_run):
    data_dir, seen = edited_mid_run["data_dir"], edited_mid_run["seen"]
    assert edited_mid_run["first"].success and edited_mid_run["rest"].success
    assert seen != edited_mid_run["edited"]
    assert read_scores(data_dir, "r1")["catalog_version"] == seen
    [(description,)] = query(
        data_dir, "SELECT description FROM tool_catalog WHERE release_id = 'r1' AND tool_name = ?", [EDITED_TOOL]
    )
    assert description == edited_mid_run["original"] != EDIT
    assert query(data_dir, "SELECT DISTINCT catalog_version FROM agent_calls WHERE release_id = 'r1'") == [(seen,)]
    metadata = materialised_assets(edited_mid_run["first"])
    assert metadata["tool_catalog"].metadata["catalog_version"].value == seen
    assert metadata["agent_runs"].metadata["catalog_version"].value == seen


@pytest.mark.slow
def test_re_materialising_one_asset_after_the_edit_runs_the_pinned_snapshot(edited_mid_run):
    data_dir, instance = edited_mid_run["data_dir"], edited_mid_run["instance"]
    again = run_assets(data_dir, instance, "r1", ("agent_runs",))
    assert again.success
    assert materialised_assets(again)["agent_runs"].metadata["catalog_version"].value == edited_mid_run["seen"]
    before = {(e.model, e.task_id): [s.request_key for s in e.steps] for e in edited_mid_run["episodes_before"]}
    after = staged_episodes(data_dir, "r1")
    # The same requests (tools included) as the first run, so every call comes from the journal.
    assert {(e.model, e.task_id): [s.request_key for s in e.steps] for e in after} == before
    assert all(step.cache_hit for episode in after for step in episode.steps)
    snapshot = run_assets(data_dir, instance, "r1", ("release_snapshot",))
    pinned = materialised_assets(snapshot)["release_snapshot"].metadata
    assert pinned["catalog_version"].value == edited_mid_run["seen"]
    assert pinned["pinned"].value == "the partition's existing pin"


def test_a_pin_survives_a_suite_edit_and_a_request_for_other_models_resolves_anew(tmp_path):
    data_dir = copy_data(tmp_path / "data")
    write_request(data_dir, ReleaseRequest(release_id="r2", requested_by="test"))
    pinned, resolved_now = pin_snapshot(data_dir, "r2")
    assert resolved_now and snapshot_path(data_dir, "r2").is_file()
    set_description(data_dir, EDITED_TOOL, EDIT)
    again, resolved_now = pin_snapshot(data_dir, "r2")
    assert not resolved_now
    assert again.catalog_version == pinned.catalog_version != load_suite(data_dir, DEMO_SUITE).catalog_version
    assert {t.name: t.description for t in again.curated}[EDITED_TOOL] != EDIT
    write_request(data_dir, ReleaseRequest(release_id="r2", kind="release", requested_by="test"))
    assert pin_snapshot(data_dir, "r2")[0].request.kind == "release"  # the kind is how it is published
    assert read_snapshot(data_dir, "r2").catalog_version == pinned.catalog_version
    write_request(data_dir, ReleaseRequest(release_id="r2", models=["local/name-match"], requested_by="test"))
    other, resolved_now = pin_snapshot(data_dir, "r2")
    assert resolved_now and other.config.model_names() == ["local/name-match"]
    assert other.catalog_version == load_suite(data_dir, DEMO_SUITE).catalog_version


def test_the_snapshot_version_follows_what_is_evaluated_not_when_or_as_what(tmp_path):
    data_dir = copy_data(tmp_path / "data")
    write_request(data_dir, ReleaseRequest(release_id="r3", requested_by="test"))
    snapshot, _ = pin_snapshot(data_dir, "r3")
    same = snapshot.model_copy(
        update={
            "resolved_at": "2000-01-01T00:00:00+00:00",
            "request": snapshot.request.model_copy(update={"kind": "release"}),
        }
    )
    assert same.content_version() == snapshot.content_version()
    fewer = snapshot.model_copy(update={"tasks": snapshot.tasks[1:]})
    assert fewer.content_version() != snapshot.content_version()


def ui_launch(data_dir, instance, release_id: str, run_config: dict | None = None):
    """What "Materialize all" on the release group does for one partition: Dagster's default asset job (the
    Definitions' executor), no request written by anyone, run config from the launchpad."""
    from toolchoice_pipeline.defs.jobs import RELEASE_GROUP, release_executor

    defs = build_definitions(str(data_dir))
    keys = [
        key for key, spec in ((s.key, s) for s in defs.resolve_all_asset_specs()) if spec.group_name == RELEASE_GROUP
    ]
    job = defs.resolve_implicit_global_asset_job_def()
    assert job.executor_def is release_executor
    return job.execute_in_process(
        partition_key=release_id,
        instance=instance,
        raise_on_error=False,
        asset_selection=keys,
        run_config=run_config or {},
    )


def failure_descriptions(result) -> list[str]:
    return [
        event.step_failure_data.user_failure_data.description
        for event in result.all_events
        if event.is_step_failure and event.step_failure_data.user_failure_data
    ]


@pytest.mark.slow
def test_a_partition_added_in_the_ui_runs_what_the_launchpad_says_or_is_refused(tmp_path):
    data_dir = copy_data(tmp_path / "data")
    trim_tasks(data_dir, N_TASKS)
    with dagster_instance(tmp_path / "dagster_home") as instance:
        instance.add_dynamic_partitions(RELEASE_PARTITIONS_NAME, ["ui-1"])
        refused = ui_launch(data_dir, instance, "ui-1")
        assert not refused.success
        [message] = failure_descriptions(refused)
        assert "release ui-1 has no request: give ops.release_snapshot.config.suite and .kind" in message
        assert not (data_dir / "releases" / "ui-1").exists()

        config = {
            "ops": {
                "release_snapshot": {
                    "config": {"suite": DEMO_SUITE, "kind": "nightly", "models": ["local/name-match"], "judge": False}
                }
            }
        }
        launched = ui_launch(data_dir, instance, "ui-1", config)
        assert launched.success, failure_descriptions(launched)
        scores = read_scores(data_dir, "ui-1")
        assert (scores["kind"], scores["suite"], list(scores["models"]), scores["judge"]) == (
            "nightly",
            DEMO_SUITE,
            ["local/name-match"],
            None,
        )
        assert read_snapshot(data_dir, "ui-1").request.requested_by == "dagster-ui"

        config["ops"]["release_snapshot"]["config"]["kind"] = "release"
        contradicted = ui_launch(data_dir, instance, "ui-1", config)
        assert not contradicted.success
        assert "release ui-1 already has a request (kind differ)" in failure_descriptions(contradicted)[0]


@pytest.mark.slow
def test_re_running_judge_votes_of_a_release_re_asks_no_finished_poll_and_a_new_release_polls_afresh(tmp_path):
    """A finished release's judge_votes run again (a resume after a kill at the end of judging, or the judge
    step of a forced re-run): every poll comes from the journal, the votes are the same; another release polls
    afresh."""
    from toolchoice_pipeline.defs.staging import read_staged
    from toolchoice_pipeline_tests.pipeline_helpers import materialise

    data_dir = copy_data(tmp_path / "data")
    trim_tasks(data_dir, N_TASKS)
    with dagster_instance(tmp_path / "dagster_home") as instance:
        first = materialise(data_dir, instance, "j1", models=["local/name-match"])
        assert first.success
        asked_first = materialised_assets(first)["judge_votes"].metadata
        votes_first = list(read_staged(data_dir, "j1", "judge_votes"))
        # the canary and the preflight call are not journaled
        polled = len([vote for vote in votes_first if vote.model not in (CANARY_MODEL, PREFLIGHT_MODEL)])
        assert asked_first["judge_polls_asked"].value == polled > 0
        assert asked_first["judge_polls_resumed"].value == 0

        again = run_assets(data_dir, instance, "j1", ("judge_votes",))
        assert again.success
        resumed = materialised_assets(again)["judge_votes"].metadata
        assert (resumed["judge_polls_asked"].value, resumed["judge_polls_resumed"].value) == (0, polled)
        assert list(read_staged(data_dir, "j1", "judge_votes")) == votes_first

        other = materialise(data_dir, instance, "j2", models=["local/name-match"])
        fresh = materialised_assets(other)["judge_votes"].metadata
        assert (fresh["judge_polls_asked"].value, fresh["judge_polls_resumed"].value) == (polled, 0)
