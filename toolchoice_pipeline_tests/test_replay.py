"""Replay files and the ``replay/<path>`` provider: every shared scoring reply survives a replay through real
``litellm.acompletion`` calls, relative paths resolve against the data dir, and bad files give exact errors."""

import asyncio
import json
import os

import litellm
import pytest

from toolchoice_pipeline.execution.llm import is_transient
from toolchoice_pipeline.providers import register_providers
from toolchoice_pipeline.providers.replay_model import LATER_STEP_TEXT
from toolchoice_pipeline.records.calls import (
    FLAG_HALLUCINATED,
    FLAG_INVALID_ARGUMENTS,
    FLAG_INVALID_CALL,
    flag_hallucinated,
    from_openai_message,
    normalise_response,
)
from toolchoice_pipeline.scoring.matching import match_reply
from toolchoice_pipeline.suites.replay_file import load_replay
from toolchoice_pipeline.suites.tasks import Expected
from toolchoice_pipeline.util.errors import InputError, display_path
from toolchoice_pipeline_tests.conftest import CASES

CATALOG_NAMES = [tool["name"] for tool in json.loads((CASES / "catalog.json").read_text())]
SCORING_CASES = [json.loads(line) for line in (CASES / "scoring_cases.jsonl").read_text().splitlines() if line]


@pytest.fixture(scope="module", autouse=True)
def providers():
    register_providers()


def replay(model, task_id=None, step=0, **metadata):
    """One real LiteLLM call to a replay model; the normalised reply (hallucinated names flagged)."""
    if task_id is not None:
        metadata.update(task_id=task_id, step=step)
    response = asyncio.run(
        litellm.acompletion(
            model=model,
            messages=[{"role": "user", "content": "(replayed)"}],
            metadata=metadata,
            num_retries=0,
            max_retries=0,
        )
    )
    return flag_hallucinated(from_openai_message(response.choices[0].message.model_dump()), CATALOG_NAMES)


def write_lines(path, lines):
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def without_ids(reply):
    return [call.model_dump(exclude={"id"}) for call in reply.calls]


@pytest.fixture(scope="module")
def scoring_replay(tmp_path_factory):
    path = tmp_path_factory.mktemp("replay") / "scoring.jsonl"
    return write_lines(path, [{"task_id": case["id"], "response": case["response"]} for case in SCORING_CASES])


@pytest.mark.parametrize("case", SCORING_CASES, ids=[c["id"] for c in SCORING_CASES])
def test_every_scoring_reply_survives_a_replay_as_its_want_says(case, scoring_replay):
    reply = replay(f"replay/{scoring_replay}", case["id"])
    want = case["want"]
    assert len(reply.calls) == want["calls"]
    assert without_ids(reply) == without_ids(flag_hallucinated(normalise_response(case["response"]), CATALOG_NAMES))
    result = match_reply(Expected.model_validate(case["expected"]), reply, [], "key_args")
    assert (result.right_tool, result.right_args) == (want["right_tool"], want["right_args"])


def test_replayed_flags_survive_the_round_trip(scoring_replay):
    model = f"replay/{scoring_replay}"
    assert [c.flags for c in replay(model, "S05").calls] == [[FLAG_INVALID_CALL]]
    truncated = replay(model, "S08").calls[0]
    assert truncated.flags == [FLAG_INVALID_ARGUMENTS] and truncated.raw_arguments == '{"file_path": "src/app/ma'
    assert replay(model, "S20").calls[0].flags == [FLAG_HALLUCINATED]


def test_tool_calls_lines_take_object_string_and_undecodable_arguments(tmp_path):
    path = write_lines(
        tmp_path / "calls.jsonl",
        [
            {
                "task_id": "object",
                "tool_calls": [{"name": "Read", "arguments": {"file_path": "a.py"}}],
                "content": None,
            },
            {"task_id": "string", "tool_calls": [{"name": "Read", "arguments": '{"file_path": "a.py"}'}]},
            {"task_id": "broken", "tool_calls": [{"name": "Read", "arguments": '{"file_path": '}]},
            {
                "task_id": "two",
                "tool_calls": [
                    {"name": "Glob", "arguments": {"pattern": "*.py"}},
                    {"name": "Read", "arguments": {"file_path": "a.py"}},
                ],
            },
            {"task_id": "text", "content": "Create, read, update, delete.", "tool_calls": []},
            {"task_id": "in-text", "content": '<tool_call>{"name": "Read", "arguments": {"file_path": "a'},
        ],
    )
    model = f"replay/{path}"
    assert [(c.name, c.arguments) for c in replay(model, "object").calls] == [("Read", {"file_path": "a.py"})]
    assert [(c.name, c.arguments) for c in replay(model, "string").calls] == [("Read", {"file_path": "a.py"})]
    broken = replay(model, "broken").calls
    assert [(c.name, c.raw_arguments, c.flags) for c in broken] == [
        ("Read", '{"file_path": ', [FLAG_INVALID_ARGUMENTS])
    ]
    assert [c.name for c in replay(model, "two").calls] == ["Glob", "Read"]
    text = replay(model, "text")
    assert text.calls == [] and text.text == "Create, read, update, delete."
    assert [(c.name, c.flags) for c in replay(model, "in-text").calls] == [("Read", [FLAG_INVALID_CALL])]


def test_later_steps_answer_in_text_so_the_episode_ends(scoring_replay):
    reply = replay(f"replay/{scoring_replay}", "S06", step=1)
    assert reply.calls == [] and reply.text == LATER_STEP_TEXT


def test_relative_paths_resolve_against_metadata_then_environment_then_dot_data(tmp_path, monkeypatch):
    line = {"task_id": "t", "tool_calls": [{"name": "Read", "arguments": {"file_path": "a.py"}}]}
    for directory in ("meta", "env", "data"):
        (tmp_path / directory / "replays").mkdir(parents=True)
        write_lines(tmp_path / directory / "replays" / "r.jsonl", [{**line, "content": directory}])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOOLCHOICE_DATA_DIR", str(tmp_path / "env"))
    assert replay("replay/replays/r.jsonl", "t", data_dir=str(tmp_path / "meta")).text == "meta"
    assert replay("replay/replays/r.jsonl", "t").text == "env"
    monkeypatch.delenv("TOOLCHOICE_DATA_DIR")
    assert replay("replay/replays/r.jsonl", "t").text == "data"


def test_a_task_without_a_line_is_a_non_transient_error_naming_file_and_task(scoring_replay):
    with pytest.raises(litellm.BadRequestError) as caught:
        replay(f"replay/{scoring_replay}", "no-such-task")
    assert f"replay file {scoring_replay} has no line for task no-such-task" in str(caught.value)
    assert not is_transient(caught.value)


def test_a_missing_or_bad_file_is_a_non_transient_error_with_the_files_problems(tmp_path):
    with pytest.raises(litellm.NotFoundError) as missing:
        replay(f"replay/{tmp_path / 'absent.jsonl'}", "t")
    assert f"replay file {tmp_path / 'absent.jsonl'} not found" in str(missing.value)
    assert not is_transient(missing.value)

    bad = write_lines(tmp_path / "bad.jsonl", ['{"task_id": "t", "tool_calls": [{"nme": "Read"}]}'])
    with pytest.raises(litellm.BadRequestError) as malformed:
        replay(f"replay/{bad}", "t")
    assert f"{display_path(bad)}:1: tool_calls[0].nme: unknown field" in str(malformed.value)
    assert not is_transient(malformed.value)


def test_a_call_without_a_task_id_only_checks_the_file(scoring_replay):
    reply = replay(f"replay/{scoring_replay}")
    assert reply.calls == [] and f"holds {len(SCORING_CASES)} recorded replies" in reply.text


def test_bad_replay_lines_are_all_reported_with_file_line_and_field(tmp_path):
    path = write_lines(
        tmp_path / "bad.jsonl",
        [
            {"task_id": "a", "content": "fine"},
            '{"task_id": "b", ',
            {"task_id": "c", "extra": 1},
            {"content": "no id"},
            {"task_id": "d", "tool_calls": [{"arguments": {}}]},
            {"task_id": "e", "response": {"format": "openai_chat", "message": {}}, "content": "both"},
            {"task_id": "f", "response": {"format": "gemini", "candidates": []}},
            {"task_id": "a", "content": "again"},
            "[1, 2]",
            {"task_id": "g", "tool_calls": [{"name": "Read", "arguments": 7}]},
            {"task_id": "h", "tool_calls": [{"name": "Read", "args": {}}]},
            {"task_id": "i", "response": {"format": "openai_chat"}},
        ],
    )
    with pytest.raises(InputError) as caught:
        load_replay(path)
    shown = display_path(path)
    assert [str(problem) for problem in caught.value.problems] == [
        f"{shown}:2: bad JSON: Expecting property name enclosed in double quotes (column 18)",
        f"{shown}:3: extra: unknown field (allowed: task_id, tool_calls, content, response)",
        f"{shown}:4: task_id: required field is missing",
        f"{shown}:5: tool_calls[0].name: required field is missing",
        f"{shown}:6: response: give either 'response' or 'tool_calls'/'content', not both",
        f"{shown}:7: response: unknown response format 'gemini' "
        "(expected one of openai_chat, anthropic_messages, openai_responses)",
        f"{shown}:8: task_id: duplicate task id 'a' (first on line 1)",
        f"{shown}:9: a replay line must be a JSON object",
        f"{shown}:10: tool_calls[0].arguments: must be an object or a JSON string, not int",
        f"{shown}:11: tool_calls[0].args: unknown field (did you mean 'arguments'? allowed: name, arguments)",
        f"{shown}:12: response: openai_chat response needs a 'message' object",
    ]


def test_a_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError) as caught:
        load_replay(tmp_path / "absent.jsonl")
    assert str(caught.value) == f"{display_path(tmp_path / 'absent.jsonl')}: replay file not found"


def test_load_replay_is_cached_until_the_file_changes(tmp_path):
    path = write_lines(tmp_path / "r.jsonl", [{"task_id": "t", "content": "first"}])
    first = load_replay(path)
    first.clear()  # callers get their own dict
    assert load_replay(path)["t"].text == "first"
    write_lines(path, [{"task_id": "t", "content": "second, longer"}])
    os.utime(path, ns=(1, 1))
    assert load_replay(path)["t"].text == "second, longer"
