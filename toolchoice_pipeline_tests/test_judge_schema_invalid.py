"""The offline judge never calls a call right whose arguments are invalid against the tool's schema: a required
argument missing, a value of the wrong type, a value outside the enum (and outside the bounds), whatever else
speaks for the tool (the only tool, the tool the user named, one call of a step whose other calls are right).

Hand-made catalogs per kind, then every BFCL gold call of the samples mutated once per kind, judged against
the task's own catalog (the judge never sees the answer)."""

from __future__ import annotations

import copy
import json

import pytest

from toolchoice_pipeline.ingest.bfcl import build_tasks
from toolchoice_pipeline.judge import build_judge_messages, read_judge_input
from toolchoice_pipeline.providers.offline_judge.model import assess
from toolchoice_pipeline.records.calls import Reply, ToolCall
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline_tests.bfcl_helpers import answers_file, questions_file, read_verdicts

WEATHER = ToolDefinition(
    name="get_forecast",
    description="Get the weather forecast for a city for the next days.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city, e.g. Paris."},
            "days": {"type": "integer", "minimum": 1, "maximum": 7, "description": "How many days ahead."},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit."},
        },
        "required": ["city", "days"],
    },
)
BOOKING = ToolDefinition(
    name="book_table",
    description="Book a table at a restaurant for a number of guests at a given time.",
    parameters={
        "type": "object",
        "properties": {
            "restaurant": {"type": "string", "description": "Name of the restaurant."},
            "guests": {"type": "integer", "description": "Number of guests."},
            "time": {"type": "string", "description": "Time of the booking, HH:MM."},
            "seating": {"type": "string", "enum": ["indoor", "outdoor"]},
            "dietary": {"type": "array", "items": {"type": "string", "enum": ["vegan", "gluten-free", "halal"]}},
        },
        "required": ["restaurant", "guests", "time"],
    },
)
MAIL = ToolDefinition(
    name="send_email",
    description="Send an email message to a recipient.",
    parameters={
        "type": "object",
        "properties": {
            "to": {"type": "string", "description": "Recipient address."},
            "subject": {"type": "string"},
            "urgent": {"type": "boolean"},
        },
        "required": ["to", "subject"],
    },
)
CATALOG = [WEATHER, BOOKING, MAIL]

CASES = {
    # kind -> (request, tool, arguments that fail the schema in that way)
    "missing_required": [
        ("What's the forecast for Paris for the next 3 days?", "get_forecast", {"city": "Paris"}),
        ("Book a table at Chez Anne for 4 people at 19:30.", "book_table", {"restaurant": "Chez Anne", "guests": 4}),
        ("Email bob@example.com with the subject 'Lunch'.", "send_email", {"to": "bob@example.com"}),
        ("Use get_forecast for Oslo, 2 days.", "get_forecast", {"days": 2}),
    ],
    "wrong_type": [
        ("What's the forecast for Paris for the next 3 days?", "get_forecast", {"city": "Paris", "days": "3"}),
        ("What's the forecast for Paris for the next 3 days?", "get_forecast", {"city": "Paris", "days": 3.5}),
        (
            "Book a table at Chez Anne for 4 people at 19:30.",
            "book_table",
            {"restaurant": "Chez Anne", "guests": "four", "time": "19:30"},
        ),
        (
            "Book a table at Chez Anne for 4 people at 19:30.",
            "book_table",
            {"restaurant": "Chez Anne", "guests": 4, "time": 1930},
        ),
        (
            "Email bob@example.com with the subject 'Lunch', mark it urgent.",
            "send_email",
            {"to": "bob@example.com", "subject": "Lunch", "urgent": "yes"},
        ),
        (
            "Email bob@example.com with the subject 'Lunch'.",
            "send_email",
            {"to": ["bob@example.com"], "subject": "Lunch"},
        ),
    ],
    "enum_violation": [
        (
            "What's the forecast for Paris for the next 3 days in kelvin?",
            "get_forecast",
            {"city": "Paris", "days": 3, "unit": "kelvin"},
        ),
        (
            "What's the forecast for Paris for the next 3 days in Celsius?",
            "get_forecast",
            {"city": "Paris", "days": 3, "unit": "Celsius "},
        ),
        (
            "Book a table at Chez Anne for 4 people at 19:30 on the terrace.",
            "book_table",
            {"restaurant": "Chez Anne", "guests": 4, "time": "19:30", "seating": "terrace"},
        ),
        (
            "Book a vegetarian table at Chez Anne for 4 people at 19:30.",
            "book_table",
            {"restaurant": "Chez Anne", "guests": 4, "time": "19:30", "dietary": ["vegetarian"]},
        ),
    ],
    "out_of_bounds": [
        ("What's the forecast for Paris for the next 30 days?", "get_forecast", {"city": "Paris", "days": 30}),
        ("What's the forecast for Paris for today?", "get_forecast", {"city": "Paris", "days": 0}),
    ],
}


def grade(request: str, calls: list[tuple[str, dict]], catalog=CATALOG):
    reply = Reply(calls=[ToolCall(name=name, arguments=arguments) for name, arguments in calls])
    return assess(read_judge_input(build_judge_messages([{"role": "user", "content": request}], catalog, reply)))


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_call_invalid_against_the_schema_is_never_judged_correct(kind):
    for request, tool, arguments in CASES[kind]:
        found = grade(request, [(tool, arguments)])
        assert found.verdict == "incorrect", (kind, request, arguments, found.conclusion)
        assert "schema" in found.conclusion, found.conclusion


@pytest.mark.parametrize("kind", sorted(CASES))
def test_nor_when_it_is_the_only_tool_or_one_call_of_a_step(kind):
    for request, tool, arguments in CASES[kind]:
        only = [t for t in CATALOG if t.name == tool]
        assert grade(request, [(tool, arguments)], only).verdict == "incorrect", (kind, request)
        # a second call of the step, schema-valid and serving another part of the request, does not save it
        mail = ("send_email", {"to": "me@example.com", "subject": "the plan"})
        both = grade(request + " Also email me@example.com about the plan.", [(tool, arguments), mail])
        assert both.verdict == "incorrect", (kind, request, both.conclusion)


def test_the_same_calls_made_valid_are_judged_correct():
    """The cases' requests are ones the judge passes when the call is valid: the verdict above is the schema's."""
    valid = {
        "get_forecast": {"city": "Paris", "days": 3},
        "book_table": {"restaurant": "Chez Anne", "guests": 4, "time": "19:30"},
        "send_email": {"to": "bob@example.com", "subject": "Lunch"},
    }
    assert (
        grade("What's the forecast for Paris for the next 3 days?", [("get_forecast", valid["get_forecast"])]).verdict
        == "correct"
    )
    assert (
        grade("Book a table at Chez Anne for 4 people at 19:30.", [("book_table", valid["book_table"])]).verdict
        == "correct"
    )
    assert (
        grade("Email bob@example.com with the subject 'Lunch'.", [("send_email", valid["send_email"])]).verdict
        == "correct"
    )


def mutations(call: dict, tool: ToolDefinition) -> dict[str, dict]:
    """The gold call made schema-invalid once per kind, where the tool's schema allows that kind."""
    properties = tool.parameters.get("properties") or {}
    arguments = call["arguments"]
    out: dict[str, dict] = {}
    required = [r for r in tool.parameters.get("required") or [] if r in arguments]
    if required:
        out["missing_required"] = {k: v for k, v in arguments.items() if k != required[0]}
    for name in arguments:
        kind = (properties.get(name) or {}).get("type")
        wrong = {"integer": "seven", "number": "seven", "string": 7, "boolean": "true", "array": "x", "object": 1}
        if kind in wrong and "wrong_type" not in out:
            out["wrong_type"] = {**arguments, name: wrong[kind]}
        if (properties.get(name) or {}).get("enum") and "enum_violation" not in out:
            out["enum_violation"] = {**arguments, name: "surely-not-an-allowed-value"}
    return out


def test_every_bfcl_gold_call_made_invalid_is_never_judged_correct():
    checked: dict[str, int] = {}
    verdicts = read_verdicts()
    for category in ("simple_python", "multiple", "parallel"):
        tasks = {t.id: t for t in build_tasks(questions_file(category), answers_file(category))}
        golds = [v for v in verdicts if v["category"] == category and v["variant"] == "gold"]
        for line in golds[::2]:  # every other task keeps the test fast; the check is the same on each
            task = tasks[line["task_id"]]
            catalog = {t.name: t for t in task.tools}
            gold = line["tool_calls"]
            for index, call in enumerate(gold):
                if isinstance(call["arguments"], str):
                    call = {**call, "arguments": json.loads(call["arguments"])}
                for kind, arguments in mutations(call, catalog[call["name"]]).items():
                    step = copy.deepcopy(gold)
                    step[index] = {"name": call["name"], "arguments": arguments}
                    reply = Reply(calls=[ToolCall(name=c["name"], arguments=c["arguments"]) for c in step])
                    found = assess(read_judge_input(build_judge_messages(task.message_dicts(), task.tools, reply)))
                    assert found.verdict != "correct", (task.id, kind, arguments, found.conclusion)
                    checked[kind] = checked.get(kind, 0) + 1
                break  # one call per task: the judge's schema check runs on every call alike
    assert checked["missing_required"] > 300 and checked["wrong_type"] > 300 and checked["enum_violation"] > 10
