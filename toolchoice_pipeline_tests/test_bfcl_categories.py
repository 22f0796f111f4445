"""Every Python category of the current BFCL release imports whole (issue 14; docs/bfcl.md).

The samples in data/bfcl/more are a handful of entries per category written for this project in BFCL's format
(data/SOURCES.md), made to hold each odd shape BFCL ships: answers naming a parameter the schema lacks (optional:
dropped; required: kept and tagged unpassable), questions offering no tools, an ``enum`` on an array parameter,
relevance tasks without answers.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from toolchoice_pipeline.cli import cli, run_guarded
from toolchoice_pipeline.execution.runner import run_suite_sync
from toolchoice_pipeline.ingest.bfcl import Flag, import_bfcl
from toolchoice_pipeline.records.calls import Reply, make_call
from toolchoice_pipeline.scoring.matching import match_reply
from toolchoice_pipeline.suites.config import RunConfig
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline.suites.tasks import FLAG_NO_TOOLS, FLAG_UNPASSABLE
from toolchoice_pipeline.util.errors import display_path
from toolchoice_pipeline_tests.bfcl_helpers import BFCL_DATA, answers_file, questions_file
from toolchoice_pipeline_tests.scoring_reference import score_episodes

MORE = BFCL_DATA / "more"
SAMPLE_COUNTS = {
    "parallel_multiple": 5,
    "live_simple": 4,
    "live_multiple": 6,
    "live_parallel": 3,
    "live_parallel_multiple": 3,
    "live_irrelevance": 6,
    "live_relevance": 3,
}
WITHOUT_ANSWERS = ("live_irrelevance", "live_relevance")


def more_questions(category: str) -> Path:
    return MORE / f"BFCL_v4_{category}.json"


def more_answers(category: str) -> Path | None:
    return None if category in WITHOUT_ANSWERS else MORE / "possible_answer" / f"BFCL_v4_{category}.json"


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("bfcl_more")
    results = {
        category: import_bfcl(more_questions(category), more_answers(category), category, data_dir)
        for category in SAMPLE_COUNTS
    }
    return data_dir, results


def _task(data_dir: Path, category: str, task_id: str):
    return next(t for t in load_suite(data_dir, category).tasks if t.id == task_id)


@pytest.mark.parametrize("category", SAMPLE_COUNTS)
def test_every_python_category_imports_whole_and_validates(imported, category):
    data_dir, results = imported
    suite = load_suite(data_dir, category)  # runs validate's checks: a problem would raise
    assert len(suite.tasks) == SAMPLE_COUNTS[category] == results[category].tasks
    assert all(task.tags[0] == category for task in suite.tasks)


def test_the_flagged_entries_are_counted_with_file_and_line(imported):
    _, results = imported
    shown = {
        category: (
            display_path(more_questions(category)),
            display_path(more_answers(category)) if more_answers(category) else None,
        )
        for category in SAMPLE_COUNTS
    }
    assert results["parallel_multiple"].flags == [
        Flag(
            "dropped_parameter", shown["parallel_multiple"][1], 4, "ground_truth[1].kettle_heating_time.specific_heat"
        ),
        Flag("dropped_parameter", shown["parallel_multiple"][1], 5, "ground_truth[1].depot.stock_level.direction"),
    ]
    assert [(f.kind, f.file, f.line) for f in results["live_multiple"].flags] == [
        ("unpassable", shown["live_multiple"][1], 5),
        ("unpassable", shown["live_multiple"][1], 6),
    ]
    assert [(f.kind, f.file, f.line) for f in results["live_irrelevance"].flags] == [
        ("no_tools", shown["live_irrelevance"][0], line) for line in (3, 4, 5, 6)
    ]
    for category in ("live_simple", "live_parallel", "live_parallel_multiple", "live_relevance"):
        assert results[category].flags == []
    assert results["live_irrelevance"].summary() == (
        f"4 entries offering no tools, kept, tagged {FLAG_NO_TOOLS}: {shown['live_irrelevance'][0]} lines 3, 4, 5, 6"
    )


def test_the_cli_prints_one_summary_line_and_skip_bad_leaves_the_flagged_out(tmp_path, capsys):
    args = [
        "import",
        "bfcl",
        str(more_questions("live_multiple")),
        str(more_answers("live_multiple")),
        "--data-dir",
        str(tmp_path),
    ]
    assert run_guarded(cli, [*args, "--suite", "kept"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == (
        f"odd entries: 2 entries whose answer requires a parameter the schema lacks (BFCL can never "
        f"pass them), kept, tagged {FLAG_UNPASSABLE}: "
        f"{display_path(more_answers('live_multiple'))} lines 5, 6"
    )
    assert run_guarded(cli, [*args, "--suite", "skipped", "--skip-bad"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("suite skipped: 4 tasks (live_multiple 4)")
    assert ", skipped: " in out[1]
    assert len(load_suite(tmp_path, "kept").tasks) == 6
    assert [t.id for t in load_suite(tmp_path, "skipped").tasks] == [
        "live_multiple_0-0-0",
        "live_multiple_1-0-1",
        "live_multiple_2-1-0",
        "live_multiple_3-2-0",
    ]


def test_an_optional_answer_parameter_the_schema_lacks_is_dropped_as_bfcl_grades_it(imported):
    data_dir, _ = imported
    task = _task(data_dir, "parallel_multiple", "parallel_multiple_3")
    assert "specific_heat" not in task.expected.calls[1].arguments
    good = [
        make_call("water_heat_required", {"mass": 1.5, "temperature_rise": 80.0}),
        make_call("kettle_heating_time", {"energy": 300000.0, "power": 2000.0}),
    ]
    with_it = [
        good[0],
        make_call("kettle_heating_time", {"energy": 300000.0, "power": 2000.0, "specific_heat": 4186.0}),
    ]
    assert match_reply(task.expected, Reply(text=None, calls=good), task.tools, "bfcl").right_args
    assert not match_reply(task.expected, Reply(text=None, calls=with_it), task.tools, "bfcl").right_args


def test_an_unpassable_entry_is_kept_tagged_and_no_reply_passes_it(imported):
    data_dir, _ = imported
    task = _task(data_dir, "live_multiple", "live_multiple_5-4-0")
    assert FLAG_UNPASSABLE in task.tags
    assert task.expected.arguments == {"question": "How late in the evening does the last ferry still leave?"}
    question = task.expected.arguments["question"]
    for arguments in ({"question": question}, {"statement": question}, {"statement": question, "question": question}):
        reply = Reply(text=None, calls=[make_call("hand_over_to_staff", arguments)])
        result = match_reply(task.expected, reply, task.tools, "bfcl")
        assert result.right_tool and not result.right_args, arguments


def test_an_enum_on_an_array_moves_to_its_items(imported):
    data_dir, _ = imported
    task = _task(data_dir, "live_multiple", "live_multiple_3-2-0")
    raw = json.loads(more_questions("live_multiple").read_text(encoding="utf-8").splitlines()[3])
    listed = [
        (f["name"], name, p["enum"])
        for f in raw["function"]
        for name, p in f["parameters"]["properties"].items()
        if p.get("type") == "array" and "enum" in p
    ]
    assert len(listed) == 2  # the sample line carries enums on arrays: the checks below are not vacuous
    tools = {tool.name: tool for tool in task.tools}
    for function, name, enum in listed:
        schema = tools[function].parameters["properties"][name]
        assert "enum" not in schema and schema["items"]["enum"] == enum
        jsonschema.validate([enum[0]], schema)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(["not-listed"], schema)


def test_relevance_tasks_expect_any_call_and_no_tools_tasks_expect_none(imported):
    data_dir, _ = imported
    relevance = load_suite(data_dir, "live_relevance").tasks
    assert all(t.expected.any_call and t.expected.tool is None for t in relevance)
    task = relevance[0]
    other = [tool.name for tool in task.tools][-1]
    for profile in ("bfcl", "key_args"):
        called = Reply(text=None, calls=[make_call(other, {})])
        assert match_reply(task.expected, called, task.tools, profile).right_args
        assert not match_reply(task.expected, Reply(text="no", calls=[]), task.tools, profile).right_tool
    no_tools = [t for t in load_suite(data_dir, "live_irrelevance").tasks if FLAG_NO_TOOLS in t.tags]
    assert len(no_tools) == 4 and all(t.tools == [] and t.expected.tool is None for t in no_tools)


def test_relevance_and_no_tools_tasks_run_and_score_end_to_end(imported, tmp_path):
    data_dir, _ = imported
    replay = tmp_path / "replay.jsonl"
    lines = []
    for category in WITHOUT_ANSWERS:
        for task in load_suite(data_dir, category).tasks:
            calls = [{"name": task.tools[0].name, "arguments": {}}] if task.expected.any_call else []
            lines.append(json.dumps({"task_id": task.id, "tool_calls": calls, "content": None if calls else "No."}))
    replay.write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = RunConfig.model_validate({"models": [f"replay/{replay}"]})
    for category, count in (("live_relevance", 3), ("live_irrelevance", 6)):
        suite = load_suite(data_dir, category)
        episodes = run_suite_sync(suite, config, data_dir=data_dir)
        scores = score_episodes(suite, episodes)
        assert [(s.right_tool, s.right_args, s.error) for s in scores] == [(True, True, None)] * count


def test_the_four_original_categories_are_unchanged_by_the_new_rules(tmp_path):
    # No flag on the shared sample: every entry there is sound, so nothing is tagged or dropped.
    for category in ("simple_python", "multiple", "parallel", "irrelevance"):
        result = import_bfcl(questions_file(category), answers_file(category), category, tmp_path)
        assert result.flags == [] and result.summary() is None
