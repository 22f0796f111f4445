"""The one normalisation step: every reply shape of the shared scoring cases gives the calls they want."""

import json

import pytest

from toolchoice_pipeline.records.calls import (
    FLAG_HALLUCINATED,
    FLAG_INVALID_ARGUMENTS,
    FLAG_INVALID_CALL,
    calls_in_text,
    flag_hallucinated,
    from_openai_message,
    normalise_response,
    to_openai_message,
)
from toolchoice_pipeline_tests.conftest import CASES

CATALOG_NAMES = [tool["name"] for tool in json.loads((CASES / "catalog.json").read_text())]
SCORING_CASES = [json.loads(line) for line in (CASES / "scoring_cases.jsonl").read_text().splitlines() if line]


@pytest.mark.parametrize("case", SCORING_CASES, ids=[c["id"] for c in SCORING_CASES])
def test_scoring_case_reply_normalises_to_wanted_call_count(case):
    reply = flag_hallucinated(normalise_response(case["response"]), CATALOG_NAMES)
    assert len(reply.calls) == case["want"]["calls"]


def test_malformed_call_in_text_is_an_invalid_call_not_an_abstention():
    case = next(c for c in SCORING_CASES if c["id"] == "S05")
    reply = normalise_response(case["response"])
    assert [c.flags for c in reply.calls] == [[FLAG_INVALID_CALL]]
    assert reply.calls[0].name == "WebSearch"


def test_truncated_arguments_are_kept_raw_and_flagged():
    case = next(c for c in SCORING_CASES if c["id"] == "S08")
    call = normalise_response(case["response"]).calls[0]
    assert call.name == "Read" and call.arguments is None
    assert call.raw_arguments == '{"file_path": "src/app/ma'
    assert FLAG_INVALID_ARGUMENTS in call.flags


def test_unknown_tool_is_flagged_hallucinated():
    case = next(c for c in SCORING_CASES if c["id"] == "S20")
    reply = flag_hallucinated(normalise_response(case["response"]), CATALOG_NAMES)
    assert reply.calls[0].flags == [FLAG_HALLUCINATED]


def test_anthropic_text_is_kept_as_the_models_reasoning():
    case = next(c for c in SCORING_CASES if c["id"] == "S17")
    reply = normalise_response(case["response"])
    assert reply.text == "I'll remove the lock file."
    assert reply.calls[0].arguments == {"command": "rm -f .git/index.lock"}


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "Read", "arguments": {"file_path": "a.py"}}</tool_call>',
        '{"name": "Read", "arguments": {"file_path": "a.py"}}',
        '```json\n{"name": "Read", "parameters": {"file_path": "a.py"}}\n```',
        '[TOOL_CALLS] [{"name": "Read", "arguments": {}}]',
    ],
)
def test_calls_written_in_text_are_invalid_calls(text):
    calls = calls_in_text(text)
    assert len(calls) == 1 and calls[0].is_invalid_call and calls[0].name == "Read"


@pytest.mark.parametrize("text", ["Create, read, update, delete.", '{"answer": 42}', "Use {name} placeholders."])
def test_plain_text_holds_no_call(text):
    assert calls_in_text(text) == []


@pytest.mark.parametrize("case", SCORING_CASES, ids=[c["id"] for c in SCORING_CASES])
def test_openai_rendering_round_trips(case):
    reply = normalise_response(case["response"])
    again = from_openai_message(to_openai_message(reply))
    assert [(c.name, c.arguments, c.flags) for c in again.calls] == [
        (c.name, c.arguments, c.flags) for c in reply.calls
    ]
