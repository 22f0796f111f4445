"""Mistakes a suite author makes that used to pass ``validate`` silently (issue 14), through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolchoice_pipeline.cli import cli, run_guarded
from toolchoice_pipeline.suites.matchers import matcher_key_problem
from toolchoice_pipeline.util.errors import display_path
from toolchoice_pipeline_tests.execution_support import CATALOG, task_line, write_suite

OBJECT_TOOL = {
    "name": "Query",
    "description": "Run a query.",
    "parameters": {
        "type": "object",
        "properties": {
            "range": {"type": "object", "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}}},
            "filter": {"type": "object"},
            "limit": {"type": "integer"},
        },
    },
}


def _validate(data_dir: Path, capsys, suite: str = "demo") -> tuple[int, list[str]]:
    code = run_guarded(cli, ["validate", "--suite", suite, "--data-dir", str(data_dir)])
    return code, capsys.readouterr().err.splitlines()


def _suite_with(tmp_path: Path, arguments: dict, tool: str = "Grep") -> Path:
    write_suite(
        tmp_path,
        [
            task_line("ok", "find x", "Grep", expected={"tool": "Grep", "arguments": {"pattern": "x"}}),
            task_line("t1", "find it", tool, expected={"tool": tool, "arguments": arguments}),
        ],
        catalog=[*CATALOG, OBJECT_TOOL],
    )
    return tmp_path / "suites" / "demo" / "tasks.jsonl"


@pytest.mark.parametrize(
    ("argument", "typo", "meant"),
    [
        ({"regexp": "load_settings"}, "regexp", "regex"),
        ({"any_of": ["a", "b"], "optinal": True}, "optinal", "optional"),
        ({"anyOf": ["a", "b"]}, "anyOf", "any_of"),
    ],
)
def test_a_misspelt_matcher_key_is_an_error_with_did_you_mean(tmp_path, capsys, argument, typo, meant):
    tasks = _suite_with(tmp_path, {"pattern": argument})
    code, err = _validate(tmp_path, capsys)
    assert code == 2
    assert err == [
        f"error: {display_path(tasks)}:2: expected.arguments.pattern: unknown matcher key '{typo}' "
        f"(did you mean '{meant}'?); a matcher takes any_of, regex, value and optional. To expect this "
        'object as it is, write {"value": {...}}'
    ]


def test_an_unknown_key_beside_a_matcher_key_is_an_error(tmp_path, capsys):
    _suite_with(tmp_path, {"pattern": {"regex": "x", "flags": "i"}})
    code, err = _validate(tmp_path, capsys)
    assert code == 2 and len(err) == 1 and "unknown matcher key 'flags'; a matcher takes" in err[0]


def test_an_object_value_its_schema_describes_is_not_taken_for_a_matcher(tmp_path, capsys):
    _suite_with(tmp_path, {"range": {"min": 1, "max": 5}, "limit": 3}, tool="Query")
    assert _validate(tmp_path, capsys)[0] == 0
    # ... and the same check names a near-matcher object on an object parameter whose schema lists no such key
    _suite_with(tmp_path, {"filter": {"regexp": "x"}}, tool="Query")
    code, err = _validate(tmp_path, capsys)
    assert code == 2 and "expected.arguments.filter: unknown matcher key 'regexp' (did you mean 'regex'?)" in err[0]


@pytest.mark.parametrize(
    ("parameter", "tool", "argument", "words"),
    [
        (
            "pattern",
            "Grep",
            {"value": {"text": "x"}},
            'expects an object ({"text": "x"}) for a parameter of type string',
        ),
        ("pattern", "Grep", {"any_of": ["x", ["y"]]}, 'expects an array (["y"]) for a parameter of type string'),
        ("limit", "Query", [1, 2], "expects an array ([1, 2]) for a parameter of type integer"),
        ("pattern", "Grep", {"text": "x"}, 'expects an object ({"text": "x"}) for a parameter of type string'),
    ],
)
def test_an_object_or_array_expected_for_a_scalar_parameter_is_an_error(
    tmp_path, capsys, parameter, tool, argument, words
):
    tasks = _suite_with(tmp_path, {parameter: argument}, tool=tool)
    code, err = _validate(tmp_path, capsys)
    assert code == 2
    assert err == [
        f"error: {display_path(tasks)}:2: expected.arguments.{parameter}: {words}; a valid call can never match it"
    ]


def test_plain_objects_that_are_not_near_a_matcher_stay_values():
    assert matcher_key_problem({"min": 1, "max": 2}) is None
    assert matcher_key_problem({"regex": "x"}) is None  # a well-formed matcher
    assert matcher_key_problem("regexp") is None


def test_a_task_pretty_printed_over_several_lines_is_told_one_task_per_line(tmp_path, capsys):
    write_suite(tmp_path, [task_line("t0", "x", "Grep")])
    tasks = tmp_path / "suites" / "demo" / "tasks.jsonl"
    tasks.write_text(json.dumps(task_line("t0", "x", "Grep"), indent=2) + "\n", encoding="utf-8")
    code, err = _validate(tmp_path, capsys)
    assert code == 2
    assert err[0] == (
        f"error: {display_path(tasks)}:1: bad JSON: Expecting property name enclosed in double quotes "
        "(column 2); the object does not close on this line: write one task per line (JSON Lines), "
        "not one task over several lines"
    )


def test_a_bad_first_line_that_closes_gets_no_json_lines_hint(tmp_path, capsys):
    write_suite(tmp_path, [task_line("t0", "x", "Grep")])
    tasks = tmp_path / "suites" / "demo" / "tasks.jsonl"
    tasks.write_text('{"id": "t0",, "messages": []}\n', encoding="utf-8")
    code, err = _validate(tmp_path, capsys)
    assert code == 2 and "one task per line" not in err[0] and err[0].startswith(f"error: {display_path(tasks)}:1:")


def test_a_suite_folder_without_suite_yaml_says_so(tmp_path, capsys):
    folder = tmp_path / "suites" / "sb2"
    folder.mkdir(parents=True)
    (folder / "tasks.jsonl").write_text("", encoding="utf-8")
    code, err = _validate(tmp_path, capsys, suite="sb2")
    assert code == 2
    assert err == [
        f"error: {display_path(folder / 'suite.yaml')}: the suite folder 'sb2' has no suite.yaml (it "
        "holds: tasks.jsonl); write one naming the catalog and tasks files (docs/DESIGN.md §3)"
    ]


def test_validate_states_which_canary_the_judge_check_will_use(tmp_path, capsys):
    from toolchoice_pipeline.ingest.canary import PACKAGED_CANARY

    write_suite(tmp_path, [task_line("t0", "x", "Grep")])
    assert run_guarded(cli, ["validate", "--suite", "demo", "--data-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"judge canary {display_path(PACKAGED_CANARY / 'canary.jsonl')} (the packaged canary)"
    )
    (tmp_path / "sessions").mkdir()
    for name in ("canary.jsonl", "canary.labels.jsonl", "canary.catalog.yaml"):
        (tmp_path / "sessions" / name).write_bytes((PACKAGED_CANARY / name).read_bytes())
    assert run_guarded(cli, ["validate", "--suite", "demo", "--data-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"judge canary {display_path(tmp_path / 'sessions' / 'canary.jsonl')} (the data directory's own canary)"
    )
