"""Faults in a release run through Dagster: a failing model is kept apart, an unusable judge stops the run with
one clear message, and in both cases nothing half-done is published."""

from __future__ import annotations

import pytest
import yaml

from toolchoice_pipeline_tests.pipeline_helpers import (
    check_evaluations,
    copy_data,
    dagster_instance,
    materialise,
    materialised_assets,
)


def _set_judge(data_dir, model: str) -> None:
    path = data_dir / "toolchoice.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["judge"]["model"] = model
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


@pytest.mark.slow
def test_an_unusable_judge_fails_the_run_at_judge_votes_with_one_clear_message(tmp_path):
    data_dir = copy_data(tmp_path / "data")
    _set_judge(data_dir, "local/no-such-judge")
    with dagster_instance(tmp_path / "home") as instance:
        result = materialise(data_dir, instance, "r1", kind="release")
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_key == "judge_votes.plan_judge_shards"  # the judge's preflight, before any shard
    description = failure.step_failure_data.user_failure_data.description
    assert "judge model local/no-such-judge: unknown local model" in description
    assert "agent_runs" in materialised_assets(result)
    assert not (data_dir / "releases" / "r1" / "scores.json").exists()
    assert not (data_dir / "releases" / "baseline.json").exists()


@pytest.mark.slow
def test_one_broken_model_is_kept_apart_and_fails_the_gate_as_not_evaluated(tmp_path):
    data_dir = copy_data(tmp_path / "data")
    replay = data_dir / "empty_replay.jsonl"
    replay.write_text("", encoding="utf-8")  # a replay with no line for any task: every episode errors
    with dagster_instance(tmp_path / "home") as instance:
        result = materialise(
            data_dir, instance, "r1", kind="release", models=["local/bm25-router", f"replay/{replay.name}"], judge=False
        )
    gate = check_evaluations(result)["release_gate"]
    assert not gate.passed and not result.success
    import json

    scores = json.loads((data_dir / "releases" / "r1" / "scores.json").read_text(encoding="utf-8"))
    assert scores["models"]["local/bm25-router"]["errors"] == 0
    assert scores["models"]["local/bm25-router"]["right_tool_pct"] == 45.21
    assert scores["models"][f"replay/{replay.name}"]["errors"] == 73
    assert scores["gate"]["not_evaluated"] == [f"replay/{replay.name}"]
    assert "baseline" not in materialised_assets(result)
