"""`toolchoice import bfcl`: BFCL JSON Lines -> a `bfcl`-profile suite (issue 2; docs/bfcl.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from toolchoice_pipeline.cli import cli, run_guarded
from toolchoice_pipeline.execution.tool_names import reverse, safe_tool_names
from toolchoice_pipeline.ingest.bfcl import bfcl_category, import_bfcl, task_from_bfcl, to_json_schema
from toolchoice_pipeline.scoring.matching.bfcl import argument_to_possible_answer, possible_answer_to_argument
from toolchoice_pipeline.suites.catalog_files import schema_problem
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline_tests.bfcl_helpers import (
    CATEGORIES,
    TASK_COUNTS,
    VERDICTS,
    answers_file,
    import_bfcl_suites,
    questions_file,
    read_verdicts,
    suite_name,
    write_replay_file,
)


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    data_dir = tmp_path_factory.mktemp("bfcl_data")
    import_bfcl_suites(data_dir)
    return data_dir


@pytest.fixture(scope="module")
def suites(imported):
    return {category: load_suite(imported, suite_name(category)) for category in CATEGORIES}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_lines(path: Path, entries: list) -> Path:
    path.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in entries), encoding="utf-8")
    return path


# --- the four BFCL files ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("category", CATEGORIES)
def test_each_category_imports_to_a_suite_that_validates_with_every_task(suites, category):
    suite = suites[category]  # load_suite runs the semantic checks of validate.py; a problem would raise
    assert len(suite.tasks) == TASK_COUNTS[category]
    assert suite.match_profile == "bfcl"
    assert suite.curated == []
    assert all(task.tools and task.tags == [category] for task in suite.tasks)
    assert [t.id for t in suite.tasks] == [e["id"] for e in _lines(questions_file(category))]


def test_irrelevance_tasks_expect_no_call(suites):
    assert all(
        t.expected is not None and t.expected.tool is None and not t.expected.arguments
        for t in suites["irrelevance"].tasks
    )


def test_parallel_tasks_list_every_expected_call_and_repeat_the_first(suites):
    answers = {e["id"]: e["ground_truth"] for e in _lines(answers_file("parallel"))}
    for task in suites["parallel"].tasks:
        calls = task.expected.calls or []
        assert [c.tool for c in calls] == [next(iter(g)) for g in answers[task.id]]
        assert (calls[0].tool, calls[0].arguments) == (task.expected.tool, task.expected.arguments)
    assert sum(len(t.expected.calls) for t in suites["parallel"].tasks) == sum(len(a) for a in answers.values())


def test_first_turn_messages_are_kept_as_given(suites):
    questions = {e["id"]: e["question"][0] for e in _lines(questions_file("simple_python"))}
    for task in suites["simple_python"].tasks[:50]:
        assert task.message_dicts() == questions[task.id]


def test_simple_python_0_expected_arguments_from_its_possible_answer(suites):
    task = suites["simple_python"].tasks[0]
    assert task.expected.tool == "calculate_triangle_area"
    assert task.expected.arguments == {"base": 10, "height": 5, "unit": {"any_of": ["units"], "optional": True}}
    assert task.expected.calls is None


def test_dotted_function_names_are_kept(suites):
    task = suites["simple_python"].tasks[1]
    assert task.expected.tool == "math.factorial" and task.tools[0].name == "math.factorial"


def test_every_bfcl_name_maps_to_a_provider_safe_name_and_back(suites):
    safe = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
    dotted = 0
    for suite in suites.values():
        for task in suite.tasks:
            names = [tool.name for tool in task.tools]
            mapping = safe_tool_names(names)
            assert all(safe.match(mapping[name]) for name in names)
            assert len(set(mapping.values())) == len(names)
            assert [reverse(mapping)[mapping[name]] for name in names] == names
            dotted += sum("." in name for name in names)
    assert dotted > 500  # the sample is full of dotted names: the check above is not vacuous


def test_every_possible_answer_survives_the_round_trip_through_the_task_format(suites):
    for category in ("simple_python", "multiple", "parallel"):
        tasks = {t.id: t for t in suites[category].tasks}
        for entry in _lines(answers_file(category)):
            task = tasks[entry["id"]]
            calls = task.expected.calls or [task.expected]
            for truth, call in zip(entry["ground_truth"], calls):
                ((name, parameters),) = truth.items()
                schema = next(t for t in task.tools if t.name == name).parameters["properties"]
                for parameter, alternatives in parameters.items():
                    back = argument_to_possible_answer(call.arguments[parameter], schema[parameter])
                    assert _as_set(back) == _as_set(alternatives), (entry["id"], parameter)


def _as_set(alternatives: list) -> set[str]:
    return {json.dumps(a, sort_keys=True) for a in alternatives}


def test_nested_dict_answers_become_nested_matchers(suites):
    task = next(t for t in suites["multiple"].tasks if t.id == "multiple_8")
    assert task.expected.arguments["budget"] == {"min": 300000, "max": 400000}
    assert task.expected.arguments["location"] == {"any_of": ["SD", "San Diego", "San Diego, CA", "CA"]}


# --- schema dialect ---------------------------------------------------------------------------------------------


def test_bfcl_types_map_to_json_schema_at_every_depth():
    bfcl = {
        "type": "dict",
        "required": ["a"],
        "properties": {
            "a": {"type": "float", "description": "x"},
            "b": {"type": "tuple", "items": {"type": "float"}},
            "c": {"type": "any"},
            "d": {
                "type": "dict",
                "properties": {
                    "e": {"type": "array", "items": {"type": "dict", "properties": {"f": {"type": "float"}}}}
                },
            },
        },
    }
    converted = to_json_schema(bfcl)
    assert converted == {
        "type": "object",
        "required": ["a"],
        "properties": {
            "a": {"type": "number", "description": "x"},
            "b": {"type": "array", "items": {"type": "number"}},
            "c": {},
            "d": {
                "type": "object",
                "properties": {
                    "e": {"type": "array", "items": {"type": "object", "properties": {"f": {"type": "number"}}}}
                },
            },
        },
    }
    assert schema_problem(converted) is None


def test_an_unknown_bfcl_type_names_file_line_and_field(tmp_path):
    question = {
        "id": "simple_java_0",
        "question": [[{"role": "user", "content": "hi"}]],
        "function": [
            {
                "name": "f",
                "description": "",
                "parameters": {"type": "dict", "properties": {"x": {"type": "String"}}, "required": []},
            }
        ],
    }
    questions = _write_lines(tmp_path / "q.json", [{**question, "id": "simple_0"}])
    answers = _write_lines(tmp_path / "a.json", [{"id": "simple_0", "ground_truth": [{"f": {"x": ["a"]}}]}])
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, answers, "s", tmp_path / "data")
    assert [str(p) for p in caught.value.problems] == [
        f"{questions}:1: function[0].parameters.properties.x.type: unknown BFCL type 'String' (known: any, array, "
        "boolean, dict, float, integer, number, object, string, tuple); only Python categories can be imported"
    ]


def test_bfcl_category_comes_from_the_id():
    assert bfcl_category("simple_python_12") == "simple_python"
    assert bfcl_category("live_simple_0-0-0") == "live_simple"
    assert bfcl_category("irrelevance_239") == "irrelevance"


def test_possible_answer_encoding_rules():
    assert possible_answer_to_argument([5]) == 5
    assert possible_answer_to_argument(["a", "b"]) == {"any_of": ["a", "b"]}
    assert possible_answer_to_argument(["", True]) == {"any_of": [True], "optional": True}
    assert possible_answer_to_argument([""]) == {"any_of": [""], "optional": True}
    assert possible_answer_to_argument([{"regex": "x"}]) == {"any_of": [{"regex": "x"}]}
    assert argument_to_possible_answer({"any_of": [True], "optional": True}) == [True, ""]


# --- bad input --------------------------------------------------------------------------------------------------


def _entry(task_id: str) -> dict:
    return {
        "id": task_id,
        "question": [[{"role": "user", "content": "Factorial of 5?"}]],
        "function": [
            {
                "name": "math.factorial",
                "description": "",
                "parameters": {"type": "dict", "properties": {"number": {"type": "integer"}}, "required": ["number"]},
            }
        ],
    }


def _answer(task_id: str) -> dict:
    return {"id": task_id, "ground_truth": [{"math.factorial": {"number": [5]}}]}


def _problems(caught) -> list[str]:
    return [str(p) for p in caught.value.problems]


def test_mismatched_ids_name_the_answer_file_and_line(tmp_path):
    questions = _write_lines(tmp_path / "q.json", [_entry("simple_0"), _entry("simple_1")])
    answers = _write_lines(tmp_path / "a.json", [_answer("simple_0"), _answer("simple_7")])
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, answers, "s", tmp_path / "data")
    assert _problems(caught) == [
        f"{answers}:2: id: answer id 'simple_7' does not match question id 'simple_1' "
        f"({questions}:2); the files pair line by line"
    ]


def test_fewer_answers_than_questions_is_an_error(tmp_path):
    questions = _write_lines(tmp_path / "q.json", [_entry("simple_0"), _entry("simple_1")])
    answers = _write_lines(tmp_path / "a.json", [_answer("simple_0")])
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, answers, "s", tmp_path / "data")
    assert _problems(caught) == [f"{answers}:2: 1 answers for 2 questions: no answer for 'simple_1' ({questions}:2)"]


def test_more_answers_than_questions_is_an_error(tmp_path):
    questions = _write_lines(tmp_path / "q.json", [_entry("simple_0")])
    answers = _write_lines(tmp_path / "a.json", [_answer("simple_0"), _answer("simple_1")])
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, answers, "s", tmp_path / "data")
    assert _problems(caught) == [
        f"{answers}:2: id: 2 answers for 1 questions: answer 'simple_1' has no question in {questions}"
    ]


def test_bad_json_names_file_and_line(tmp_path):
    questions = _write_lines(
        tmp_path / "q.json",
        [
            _entry("simple_0"),
            '{"id": "simple_1", "question": [[',
        ],
    )
    answers = _write_lines(tmp_path / "a.json", [_answer("simple_0"), _answer("simple_1")])
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, answers, "s", tmp_path / "data")
    assert _problems(caught) == [f"{questions}:2: bad JSON: Expecting value (column 34)"]


def test_multi_turn_questions_are_refused_clearly(tmp_path):
    entry = _entry("simple_0")
    entry["question"].append([{"role": "user", "content": "and of 6?"}])
    questions = _write_lines(tmp_path / "q.json", [entry])
    answers = _write_lines(tmp_path / "a.json", [_answer("simple_0")])
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, answers, "s", tmp_path / "data")
    assert _problems(caught) == [
        f"{questions}:1: question: has 2 turns: multi-turn BFCL categories are not "
        "supported (only single-turn categories can be imported)"
    ]


def test_multi_turn_categories_are_refused_by_name(tmp_path):
    questions = _write_lines(tmp_path / "q.json", [_entry("multi_turn_base_0")])
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, None, "s", tmp_path / "data")
    assert _problems(caught) == [
        f"{questions}:1: id: category 'multi_turn_base' is multi-turn: multi-turn BFCL categories are not supported"
    ]


def test_answers_are_required_outside_irrelevance_and_relevance(tmp_path):
    questions = _write_lines(tmp_path / "q.json", [_entry("simple_0")])
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, None, "s", tmp_path / "data")
    assert _problems(caught) == [
        f"{questions}:1: id: category 'simple' needs its possible-answer file (ANSWERS); "
        "only irrelevance and relevance categories come without answers"
    ]


def test_a_relevance_file_with_answers_is_refused(tmp_path):
    questions = _write_lines(tmp_path / "q.json", [_entry("live_relevance_0-0-0")])
    answers = _write_lines(tmp_path / "a.json", [_answer("live_relevance_0-0-0")])
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, answers, "s", tmp_path / "data")
    assert _problems(caught) == [f"{questions}:1: id: category 'live_relevance' expects any call: give no ANSWERS file"]


def test_an_answer_for_a_function_the_question_lacks_names_the_answer_line(tmp_path):
    questions = _write_lines(tmp_path / "q.json", [_entry("simple_0")])
    answers = _write_lines(tmp_path / "a.json", [{"id": "simple_0", "ground_truth": [{"math.sqrt": {"x": [4]}}]}])
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, answers, "s", tmp_path / "data")
    assert _problems(caught) == [
        f"{answers}:1: ground_truth[0]: function 'math.sqrt' is not among the question's functions (math.factorial)"
    ]


def test_a_required_answer_parameter_outside_the_schema_is_kept_and_flagged_on_the_answer_line(tmp_path):
    questions = _write_lines(tmp_path / "q.json", [_entry("simple_0")])
    answers = _write_lines(
        tmp_path / "a.json", [{"id": "simple_0", "ground_truth": [{"math.factorial": {"number": [5], "base": [2]}}]}]
    )
    result = import_bfcl(questions, answers, "s", tmp_path / "data")
    assert [(f.kind, f.file, f.line, f.detail) for f in result.flags] == [
        ("unpassable", str(answers), 1, "ground_truth[0].math.factorial.base")
    ]
    [task] = load_suite(tmp_path / "data", "s").tasks
    assert task.tags == ["simple", "flag:unpassable"] and task.expected.arguments == {"number": 5, "base": 2}


def test_an_answer_parameter_outside_the_schema_is_still_an_error_in_a_hand_written_suite(tmp_path):
    from toolchoice_pipeline.suites.validate import task_problems

    task = task_from_bfcl(
        _entry("simple_0"), {"id": "simple_0", "ground_truth": [{"math.factorial": {"number": [5], "base": [2]}}]}
    )
    unflagged = task.model_copy(update={"tags": ["simple"]})
    [problem] = task_problems(unflagged, unflagged.tools, "t.jsonl", 1)
    assert str(problem).startswith(
        "t.jsonl:1: expected.arguments.base: key argument 'base' is not a parameter of tool 'math.factorial'"
    )
    assert task_problems(task, task.tools, "t.jsonl", 1) == []


# --- the command line -------------------------------------------------------------------------------------------


def test_cli_imports_and_exits_0(tmp_path, capsys):
    code = run_guarded(
        cli,
        [
            "import",
            "bfcl",
            str(questions_file("parallel")),
            str(answers_file("parallel")),
            "--suite",
            "par",
            "--data-dir",
            str(tmp_path),
        ],
    )
    assert code == 0
    assert "suite par: 200 tasks (parallel 200), match profile bfcl" in capsys.readouterr().out
    assert len(load_suite(tmp_path, "par").tasks) == 200


def test_cli_bad_input_exits_2_with_one_line_per_problem(tmp_path, capsys):
    questions = _write_lines(tmp_path / "q.json", ["not json"])
    code = run_guarded(cli, ["import", "bfcl", str(questions), "--suite", "s", "--data-dir", str(tmp_path / "d")])
    assert code == 2
    assert capsys.readouterr().err == f"error: {questions}:1: bad JSON: Expecting value (column 1)\n"
    assert not (tmp_path / "d" / "suites" / "s").exists()


def test_cli_missing_file_exits_2(tmp_path, capsys):
    code = run_guarded(
        cli, ["import", "bfcl", str(tmp_path / "nope.json"), "--suite", "s", "--data-dir", str(tmp_path)]
    )
    assert code == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'nope.json'}: file not found\n"


def test_cli_invalid_suite_name_exits_2(tmp_path, capsys):
    code = run_guarded(
        cli, ["import", "bfcl", str(questions_file("irrelevance")), "--suite", "../x", "--data-dir", str(tmp_path)]
    )
    assert code == 2
    assert "'../x' is not a valid suite name" in capsys.readouterr().err


# --- the replay helper ------------------------------------------------------------------------------------------


def test_replay_helper_writes_one_line_per_task_preferring_the_given_variant(tmp_path):
    path = tmp_path / "replay.jsonl"
    chosen = write_replay_file(path, prefer=("shuffled",), categories=("parallel", "irrelevance"))
    lines = _lines(path)
    assert len(lines) == TASK_COUNTS["parallel"] + TASK_COUNTS["irrelevance"] == len(chosen)
    assert {chosen[t] for t in chosen if t.startswith("parallel_")} == {"shuffled"}
    assert {chosen[t] for t in chosen if t.startswith("irrelevance_")} == {"no_call"}
    verdicts = {(v["task_id"], v["variant"]): v for v in read_verdicts(VERDICTS)}
    for line in lines:
        assert set(line) == {"task_id", "tool_calls", "content"} and line["content"] is None
        assert line["tool_calls"] == verdicts[(line["task_id"], chosen[line["task_id"]])]["tool_calls"]


def test_task_from_bfcl_builds_one_task_from_objects():
    task = task_from_bfcl(_entry("simple_0"), _answer("simple_0"))
    assert (task.id, task.expected.tool, task.expected.arguments, task.tags) == (
        "simple_0",
        "math.factorial",
        {"number": 5},
        ["simple"],
    )
