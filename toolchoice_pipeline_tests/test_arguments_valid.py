"""Issue 29: ``arguments_valid`` in ``agent_calls`` means schema-valid, with one flag per kind of violation,
counted per model in the scores (pure and columnar paths alike)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolchoice_pipeline.records.calls import Reply, make_call
from toolchoice_pipeline.records.episodes import Episode, StepRecord
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.warehouse_tables import agent_calls_table, judge_votes_table
from toolchoice_pipeline.scoring.columnar import score_release
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.model import Suite, SuiteSpec
from toolchoice_pipeline.suites.tasks import Expected, Task
from toolchoice_pipeline_tests.scoring_reference import score_episodes, summarise

WEATHER = ToolDefinition(
    name="get_weather",
    description="The forecast for a city.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer", "minimum": 1, "maximum": 7},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "options": {"type": "object", "properties": {"hours": {"$ref": "#/$defs/hours"}}, "required": ["hours"]},
        },
        "required": ["city"],
        "$defs": {"hours": {"type": "integer", "minimum": 0, "maximum": 23}},
    },
)
# (call arguments, the flags the call must carry); None: undecodable arguments
CALLS = {
    "valid": ({"city": "Paris", "days": 3, "unit": "celsius"}, []),
    "missing_required": ({"days": 3}, ["missing_required"]),
    "wrong_type": ({"city": "Paris", "days": "3"}, ["wrong_type"]),
    "not_in_enum": ({"city": "Paris", "unit": "kelvin"}, ["not_in_enum"]),
    "above_maximum": ({"city": "Paris", "days": 30}, ["schema_violation"]),
    "nested_missing": ({"city": "Paris", "options": {}}, ["missing_required"]),
    "nested_ref_bound": ({"city": "Paris", "options": {"hours": 99}}, ["schema_violation"]),
    "two_kinds": ({"days": "x", "unit": "kelvin"}, ["missing_required", "wrong_type", "not_in_enum"]),
    "undecodable": ("{city: Paris", ["invalid_arguments"]),
}


def _suite(tmp_path: Path) -> Suite:
    tasks = [
        Task(
            id=name,
            messages=[{"role": "user", "content": "Weather in Paris?"}],
            expected=Expected(tool="get_weather", arguments={"city": "Paris"}),
        )
        for name in CALLS
    ]
    return Suite(
        spec=SuiteSpec(name="weather"),
        directory=tmp_path,
        curated=[WEATHER],
        live=[],
        tasks=tasks,
        task_lines={t.id: i + 1 for i, t in enumerate(tasks)},
    )


def _episodes(model: str) -> list[Episode]:
    return [
        Episode(
            model=model,
            task_id=name,
            steps=[StepRecord(step=0, reply=Reply(calls=[make_call("get_weather", arguments)]))],
        )
        for name, (arguments, _) in CALLS.items()
    ]


def _lineage(suite: Suite) -> Lineage:
    return Lineage(release_id="r1", suite=suite.name, catalog_version=suite.catalog_version, run_id="run-1")


@pytest.fixture
def suite(tmp_path):
    return _suite(tmp_path)


def test_agent_calls_mark_each_kind_of_invalid_arguments(suite):
    rows = agent_calls_table(_episodes("m"), _lineage(suite), suite).to_pylist()
    by_task = {row["task_id"]: row for row in rows}
    for name, (_, flags) in CALLS.items():
        row = by_task[name]
        assert row["flags"] == flags, name
        assert row["arguments_valid"] is (not flags), name
        assert json.loads(row["calls_json"])[0]["flags"] == flags


def test_scores_count_each_flag_per_model_in_both_scoring_paths(suite):
    episodes = _episodes("m") + [e for e in _episodes("n") if e.task_id == "wrong_type"]
    scores = score_episodes(suite, episodes)
    assert {s.task_id: s.flags for s in scores if s.model == "m"} == {name: flags for name, (_, flags) in CALLS.items()}
    expected = {"missing_required": 3, "wrong_type": 2, "not_in_enum": 2, "schema_violation": 2, "invalid_arguments": 1}
    pure = summarise(scores)
    assert {k: v for k, v in pure["m"].flags.items() if v} == expected
    assert {k: v for k, v in pure["n"].flags.items() if v} == {"wrong_type": 1}
    lineage = _lineage(suite)
    columnar = score_release(suite, agent_calls_table(episodes, lineage, suite), judge_votes_table([], lineage))
    assert columnar.models["m"].flags == pure["m"].flags
    assert columnar.models["n"].flags == pure["n"].flags


def test_a_schema_flagged_call_is_not_arguments_valid_but_still_matches_its_key_arguments(suite):
    scores = {s.task_id: s for s in score_episodes(suite, _episodes("m"))}
    # right_args grades the key arguments the task names; validity is reported beside it, not mixed into it
    assert scores["wrong_type"].right_args is True and "wrong_type" in scores["wrong_type"].flags
    assert scores["missing_required"].right_args is False
