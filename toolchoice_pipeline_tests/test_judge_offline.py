"""The offline judge ``local/catalog-judge``: catalog-grounded verdicts, step-by-step reasoning, through LiteLLM."""

import asyncio
import json

import pytest

from toolchoice_pipeline.calls import FLAG_INVALID_CALL, Reply, ToolCall
from toolchoice_pipeline.catalog import ToolDefinition
from toolchoice_pipeline.config import JudgeConfig, RetryConfig
from toolchoice_pipeline.judge import JudgeItem, build_judge_messages, judge_items, parse_verdict, read_judge_input
from toolchoice_pipeline.judge.fit import capabilities, terms
from toolchoice_pipeline.judge.offline import assess, catalog_judge
from toolchoice_pipeline.providers import register_providers

from .conftest import CASES

CATALOG = [ToolDefinition(**tool) for tool in json.loads((CASES / "catalog.json").read_text())]
NAMES_ONLY = [ToolDefinition(name=t.name, parameters={"type": "object", "properties": {
    key: {k: v for k, v in prop.items() if k != "description"} for key, prop in t.parameters["properties"].items()},
    "required": t.parameters.get("required", [])}) for t in CATALOG]


def call(name, **arguments) -> Reply:
    return Reply(calls=[ToolCall(name=name, arguments=arguments)])


def verdict(request, reply, catalog=CATALOG, earlier=()):
    conversation = [*earlier, {"role": "user", "content": request}]
    return assess(read_judge_input(build_judge_messages(conversation, catalog, reply)))


@pytest.mark.parametrize("request_text, reply, want", [
    ("Show me src/server.py", call("Read", file_path="src/server.py"), "correct"),
    ("Which git branch is this repo on?", call("Bash", command="git branch --show-current"), "correct"),
    ("Which git branch is this repo on?", call("WebSearch", query="which git branch"), "incorrect"),
    ("Delete the stale lock file .git/index.lock", call("Bash", command="rm .git/index.lock"), "correct"),
    ("Delete the stale lock file .git/index.lock", call("Read", file_path=".git/index.lock"), "incorrect"),
    ("How many Python files are in src?", call("Glob", pattern="src/**/*.py"), "correct"),
    ("List the Python files in src", call("WebSearch", query="python files"), "incorrect"),
])
def test_catalog_grounded_verdicts(request_text, reply, want):
    assert verdict(request_text, reply).verdict == want


def test_a_tool_outside_the_catalog_is_incorrect():
    found = verdict("Show me src/server.py", call("cat_file", path="src/server.py"))
    assert found.verdict == "incorrect" and "cat_file is not a tool in the catalog" in found.conclusion


def test_arguments_failing_the_json_schema_are_incorrect():
    found = verdict("Show me src/server.py", call("Read", path="src/server.py"))
    assert found.verdict == "incorrect" and "'file_path' is a required property" in found.conclusion


def test_a_call_written_in_text_is_incorrect():
    reply = Reply(text='<tool_call>{"name": "Read"', calls=[ToolCall(name="Read", raw_arguments='{"name": "Read"',
                                                                  flags=[FLAG_INVALID_CALL])])
    assert verdict("Show me src/server.py", reply).verdict == "incorrect"


def test_arguments_about_something_else_than_the_named_file_are_incorrect():
    assert verdict("Show me src/server.py", call("Read", file_path="README.md")).verdict == "incorrect"


def test_no_call_is_wrong_when_a_tool_clearly_fitted_and_right_for_chat():
    assert verdict("Which git branch is this repo on?", Reply(text="main, probably.")).verdict == "incorrect"
    assert verdict("thanks, that fixed it!", Reply(text="Glad to help.")).verdict == "correct"


def test_a_follow_up_is_judged_with_the_earlier_turn():
    earlier = [{"role": "user", "content": "The build leaves a stale lock file behind."},
               {"role": "assistant", "content": "Shall I delete the stale lock file?"}]
    assert verdict("yes, do it", call("Read", file_path="x.lock"), earlier=earlier).verdict == "incorrect"
    assert verdict("yes, do it", call("Bash", command="rm x.lock"), earlier=earlier).verdict == "correct"


def test_negated_capabilities_are_read_from_descriptions():
    read = capabilities("Read", "Show the contents of one local file. Read-only: cannot create, change or delete "
                                "anything.")
    assert terms("show")[0] in read.positive and terms("delete")[0] not in read.positive
    hit = [d for d in read.denials if d.hit_by(set(terms("delete the file")))]
    assert hit
    web = capabilities("WebSearch", "Search the PUBLIC internet. Knows nothing about local files, this repository "
                                    "or the machine's state.")
    assert not web.positive & set(terms("local files repository state"))
    assert [d for d in web.denials if d.hit_by(set(terms("list the local files")))]


def test_names_only_catalog_gives_no_grounds_to_object():
    found = verdict("Delete the stale lock file .git/index.lock", call("Read", file_path=".git/index.lock"),
                    catalog=NAMES_ONLY)
    assert found.verdict == "correct" and "nothing to object to" in found.conclusion


def test_reasoning_goes_step_by_step_and_the_answer_is_the_structured_json():
    messages = build_judge_messages([{"role": "user", "content": "Which git branch is this repo on?"}], CATALOG,
                                    call("WebSearch", query="git branch"))
    parsed = parse_verdict(catalog_judge(messages, [], {})["content"])
    assert parsed.verdict == "incorrect"
    lines = parsed.reasoning.splitlines()
    assert [line.split(",")[0] for line in lines[:4]] == ["Step 1", "Step 2", "Step 3", "Step 4"]
    assert "Bash" in lines[1] and "WebSearch" in lines[2] and lines[4].startswith("Verdict: incorrect")


def test_wording_varies_by_seed_only_above_temperature_zero_and_the_verdict_never_does():
    messages = build_judge_messages([{"role": "user", "content": "Delete .git/index.lock"}], CATALOG,
                                    call("Read", file_path=".git/index.lock"))
    hot = [json.loads(catalog_judge(messages, [], {"temperature": 0.7, "seed": s})["content"]) for s in range(12)]
    cold = [json.loads(catalog_judge(messages, [], {"temperature": 0, "seed": s})["content"]) for s in range(12)]
    assert len({answer["reasoning"] for answer in hot}) > 1
    assert len({answer["reasoning"] for answer in cold}) == 1
    assert {answer["verdict"] for answer in hot + cold} == {"incorrect"}


def test_an_input_that_is_not_a_judge_prompt_gets_an_unparseable_refusal():
    answer = catalog_judge([{"role": "user", "content": "Reply with the word OK."}], [], {})
    assert not parse_verdict(answer["content"]).valid


def test_through_litellm_the_local_judge_gives_three_valid_votes():
    register_providers()
    item = JudgeItem(model="m", task_id="t", conversation=[{"role": "user", "content": "Delete .git/index.lock"}],
                     catalog=CATALOG, reply=call("Read", file_path=".git/index.lock"))
    votes = asyncio.run(judge_items([item], JudgeConfig(), retries=RetryConfig(max_attempts=1)))
    assert [(v.valid, v.verdict, v.judge_model) for v in votes] == [(True, "incorrect", "local/catalog-judge")] * 3
    assert all(v.cost_usd == 0.0 and v.prompt_tokens > 0 for v in votes)
