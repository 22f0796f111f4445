"""Each asset and asset check of the release graph called directly (``dg.build_asset_context`` /
``dg.build_asset_check_context``) on a small staged release: a 6-task slice of the demo suite, the offline
agents and judge, real files in a private data directory. No Dagster run, no webserver: the inner test loop.
The whole graph through Dagster is covered by the ``slow`` end-to-end tests."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.execution.context.invocation import DirectAssetCheckExecutionContext

from toolchoice_pipeline.defs.assets import (
    baseline,
    eval_tasks,
    release_scores,
    release_snapshot,
    task_scores,
    tool_catalog,
)
from toolchoice_pipeline.defs.checks import (
    agent_runs_complete,
    judge_calibration,
    release_gate,
    task_scores_complete,
    warehouse_schema,
)
from toolchoice_pipeline.defs.launchpad import LaunchpadRequest
from toolchoice_pipeline.defs.resources import ProgressReporter, ToolchoiceResource
from toolchoice_pipeline.defs.shards import (
    gather_agent_runs,
    gather_judge_votes,
    judge_shard,
    plan_agent_shards,
    plan_judge_shards,
    run_agent_shard,
)
from toolchoice_pipeline.judge.calibration import CANARY_MODEL
from toolchoice_pipeline.judge.preflight import PREFLIGHT_MODEL
from toolchoice_pipeline.releases.request import ReleaseRequest, write_request
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline_tests.pipeline_helpers import DEMO_MODELS, DEMO_SUITE, copy_data

N_TASKS = 6
RELEASE = "u1"


def _small_demo(data_dir: Path) -> None:
    """Keep the first N_TASKS tasks of the demo suite (one JSON object per line)."""
    tasks = data_dir / "suites" / DEMO_SUITE / "tasks.jsonl"
    lines = tasks.read_text(encoding="utf-8").splitlines()[:N_TASKS]
    tasks.write_text("\n".join(lines) + "\n", encoding="utf-8")


def staged_data_dir(target: Path) -> ToolchoiceResource:
    """A private data directory holding the small demo suite and the request of release ``u1``."""
    data_dir = copy_data(target)
    _small_demo(data_dir)
    write_request(
        data_dir, ReleaseRequest(release_id=RELEASE, kind="release", suite=DEMO_SUITE, models=list(DEMO_MODELS))
    )
    return ToolchoiceResource(data_dir=str(data_dir))


@pytest.fixture
def toolchoice(tmp_path) -> ToolchoiceResource:
    return staged_data_dir(tmp_path / "data")


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> ToolchoiceResource:
    """The data directory the module's one release (:func:`stages`) is written to."""
    return staged_data_dir(tmp_path_factory.mktemp("released") / "data")


@functools.cache
def instance() -> dg.DagsterInstance:
    """One ephemeral instance for every context built here. An asset or check called directly has no run, so it
    records nothing in it; without one, each context built its own (an in-memory SQLite schema, ~0.1 CPU-s)."""
    return dg.DagsterInstance.ephemeral()


def context(toolchoice: ToolchoiceResource) -> dg.AssetExecutionContext:
    """The resources are passed to the asset as keyword arguments, as Dagster's direct invocation wants."""
    return dg.build_asset_context(partition_key=RELEASE, instance=instance())


def check_context(toolchoice: ToolchoiceResource) -> dg.AssetCheckExecutionContext:
    """``dg.build_asset_check_context`` has no partition key (Dagster 1.13); the context it builds wraps an op
    context, and ``dg.build_op_context`` takes one."""
    return DirectAssetCheckExecutionContext(
        op_execution_context=dg.build_op_context(partition_key=RELEASE, instance=instance())
    )


@pytest.fixture(scope="module")
def stages(released):
    """Every asset of the release, called once for the module in graph order, each on the previous ones'
    outputs. Tests read it; the one that promotes the release runs last in file order."""
    toolchoice = released
    out = {"release_snapshot": snapshot_of(toolchoice)}
    snapshot = out["release_snapshot"].value
    out["tool_catalog"] = tool_catalog(context(toolchoice), toolchoice=toolchoice, release_snapshot=snapshot)
    out["eval_tasks"] = eval_tasks(context(toolchoice), release_snapshot=snapshot)
    out["agent_runs"] = agent_runs_of(toolchoice, snapshot, out["tool_catalog"].value, out["eval_tasks"].value)
    out["judge_votes"] = judge_votes_of(toolchoice, snapshot, out["agent_runs"].value)
    out["task_scores"] = task_scores(
        context(toolchoice),
        toolchoice=toolchoice,
        release_snapshot=snapshot,
        agent_runs=out["agent_runs"].value,
        judge_votes=out["judge_votes"].value,
    )
    out["release_scores"] = release_scores(
        context(toolchoice),
        toolchoice=toolchoice,
        release_snapshot=snapshot,
        agent_runs=out["agent_runs"].value,
        judge_votes=out["judge_votes"].value,
        task_scores=out["task_scores"].value,
    )
    return out


def op_context() -> dg.OpExecutionContext:
    return dg.build_op_context(partition_key=RELEASE, instance=instance())


def agent_runs_of(toolchoice: ToolchoiceResource, snapshot, catalog, tasks) -> dg.Output:
    """The ``agent_runs`` graph asset's ops called in turn: plan the shards, run each, gather them."""
    shards = [
        out.value
        for out in plan_agent_shards(op_context(), release_snapshot=snapshot, tool_catalog=catalog, eval_tasks=tasks)
    ]
    results = [
        run_agent_shard(
            op_context(), toolchoice=toolchoice, progress=ProgressReporter(), release_snapshot=snapshot, shard=shard
        )
        for shard in shards
    ]
    return gather_agent_runs(op_context(), release_snapshot=snapshot, shards=results)


def judge_votes_of(toolchoice: ToolchoiceResource, snapshot, episodes) -> dg.Output:
    """The ``judge_votes`` graph asset's ops called in turn."""
    shards = [
        out.value
        for out in plan_judge_shards(
            op_context(), toolchoice=toolchoice, release_snapshot=snapshot, agent_runs=episodes
        )
    ]
    results = [
        judge_shard(
            op_context(), toolchoice=toolchoice, progress=ProgressReporter(), release_snapshot=snapshot, shard=shard
        )
        for shard in shards
    ]
    return gather_judge_votes(op_context(), toolchoice=toolchoice, release_snapshot=snapshot, shards=results)


def snapshot_of(toolchoice: ToolchoiceResource) -> dg.Output:
    """The partition's pinned snapshot, from its request (no launchpad configuration needed)."""
    return release_snapshot(context(toolchoice), toolchoice=toolchoice, config=LaunchpadRequest())


def test_the_snapshot_pins_the_suite_and_run_configuration_once(toolchoice):
    first = snapshot_of(toolchoice).value
    tasks_file = toolchoice.path / "suites" / DEMO_SUITE / "tasks.jsonl"
    tasks_file.write_text(tasks_file.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    again = snapshot_of(toolchoice)
    assert len(again.value.tasks) == N_TASKS == len(first.tasks)  # the edit does not move an existing release
    assert again.metadata["pinned"].value == "the partition's existing pin"


def test_tool_catalog_carries_the_suites_catalog_version_as_its_data_version(toolchoice):
    output = tool_catalog(context(toolchoice), toolchoice=toolchoice, release_snapshot=snapshot_of(toolchoice).value)
    suite = load_suite(toolchoice.path, DEMO_SUITE)
    assert output.data_version == dg.DataVersion(suite.catalog_version)
    assert [tool.name for tool in output.value] == [tool.name for tool in suite.all_tools()]
    assert output.metadata["baseline_release_id"].value == "none"


def test_eval_tasks_are_the_suites_tasks_with_the_fixture_version(toolchoice):
    output = eval_tasks(context(toolchoice), release_snapshot=snapshot_of(toolchoice).value)
    suite = load_suite(toolchoice.path, DEMO_SUITE)
    assert [task.id for task in output.value] == [task.id for task in suite.tasks]
    assert len(output.value) == N_TASKS
    assert output.metadata["fixture_version"].value == suite.fixture_version


def test_agent_runs_and_judge_votes_cover_every_model_and_task(stages):
    episodes, votes = stages["agent_runs"].value, stages["judge_votes"].value
    assert {(e.model, e.task_id) for e in episodes} == {
        (m, t.id) for m in DEMO_MODELS for t in stages["eval_tasks"].value
    }
    polls = stages["judge_votes"].metadata["polls"].value
    episode_votes = [
        vote for vote in votes if vote.model not in (CANARY_MODEL, PREFLIGHT_MODEL)
    ]  # judged with the release
    assert len(episode_votes) == len(episodes) * polls
    assert {vote.task_id for vote in votes if vote.model == CANARY_MODEL}  # the canary's turns were judged
    assert all(vote.reasoning for vote in votes if vote.model != PREFLIGHT_MODEL)


def test_task_scores_score_each_episode_once(stages):
    scores = stages["task_scores"].value
    assert len(scores) == len(stages["agent_runs"].value)
    assert stages["task_scores"].metadata["n_scores"].value == len(scores)


def test_release_scores_publish_scores_json_and_the_checks_take_its_document(stages, released):
    toolchoice = released
    document = stages["release_scores"].value  # the output: the typed document, as stored
    assert document == ReleaseStore(toolchoice.path).read_scores(RELEASE)
    assert sorted(document.models) == sorted(DEMO_MODELS)
    assert stages["release_scores"].metadata["gate_passed"].value is True  # the first release has no baseline
    stored = json.loads((toolchoice.path / "releases" / RELEASE / "scores.json").read_text(encoding="utf-8"))
    assert stored["models"] == document.figures()

    # a passed gate: its result alone
    [gate] = release_gate(check_context(toolchoice), toolchoice=toolchoice, release_scores=document)
    assert gate.passed and gate.metadata["baseline_release_id"].value == "none yet"
    assert gate.metadata["not_gated"].value == "none"  # every demo model gates
    schema = warehouse_schema(check_context(toolchoice), toolchoice=toolchoice)
    assert schema.passed and schema.metadata["rows_task_scores"].value == len(stages["task_scores"].value)


def test_row_count_checks_pass_on_whole_stages_and_fail_on_a_lost_episode(stages, released):
    toolchoice = released
    episodes, scores = stages["agent_runs"].value, stages["task_scores"].value
    snapshot = stages["release_snapshot"].value
    assert agent_runs_complete(check_context(toolchoice), agent_runs=episodes, release_snapshot=snapshot).passed
    assert task_scores_complete(check_context(toolchoice), task_scores=scores, release_snapshot=snapshot).passed
    lost = agent_runs_complete(check_context(toolchoice), agent_runs=episodes[1:], release_snapshot=snapshot)
    assert not lost.passed and lost.metadata["expected"].value == len(episodes)


def test_judge_calibration_scores_the_canary_a_quarter_with_the_offline_judge(stages, released):
    toolchoice = released
    result = judge_calibration(check_context(toolchoice), release_scores=stages["release_scores"].value)
    assert result.passed
    assert result.metadata["canary_tsq"].value == pytest.approx(0.25)
    per_model = result.metadata["per_model"].value  # issue 30: the judge's agreement per judged model
    scores = ReleaseStore(toolchoice.path).read_scores(RELEASE)
    assert set(per_model) <= set(scores.models) and per_model
    assert all(set(a) == {"kappa", "accuracy", "n_labelled", "passed"} for a in per_model.values())
    assert result.metadata["failed_models"].value == "none"


def test_judge_calibration_fails_on_an_unreadable_canary_session(stages, toolchoice):
    (toolchoice.path / "sessions").mkdir(exist_ok=True)
    (toolchoice.path / "sessions" / "canary.jsonl").write_text("not a session\n", encoding="utf-8")
    snapshot = snapshot_of(toolchoice).value
    votes = judge_votes_of(toolchoice, snapshot, stages["agent_runs"].value)  # judged without a canary
    assert not any(vote.model == CANARY_MODEL for vote in votes.value)
    published = release_scores(
        context(toolchoice),
        toolchoice=toolchoice,
        release_snapshot=snapshot,
        agent_runs=stages["agent_runs"].value,
        judge_votes=votes.value,
        task_scores=stages["task_scores"].value,
    )
    result = judge_calibration(check_context(toolchoice), release_scores=published.value)
    assert not result.passed and "canary" in result.description


def test_baseline_promotes_a_release_whose_gate_passed(stages, released):
    toolchoice = released
    result = baseline(context(toolchoice), toolchoice=toolchoice, release_scores=stages["release_scores"].value)
    assert result.metadata["promoted"] is True
    assert ReleaseStore(toolchoice.path).baseline(DEMO_SUITE) == RELEASE
