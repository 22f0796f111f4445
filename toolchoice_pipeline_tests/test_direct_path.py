"""Issue 27: ``execution.llm.complete`` calls our deterministic in-process models (``local/``, ``replay/``) directly,
not through ``litellm.acompletion``; both ways must give the same thing. For the local agents, the offline judge
and replay models, on varied calls (a tool call with arguments, no call, after a tool result, a judge poll with a
seed), the direct path and LiteLLM's (``litellm.acompletion`` to the same model through the registered provider,
which stays registered for outside callers) give the same message dict, the same estimated tokens, the same
messages and parameters seen by the model, and the same errors."""

from __future__ import annotations

import asyncio
import copy
import json
import time
from typing import Any

import litellm
import pytest

from toolchoice_pipeline.execution.failures import describe_failure
from toolchoice_pipeline.execution.llm import assistant_message, complete
from toolchoice_pipeline.judge.call_params import poll_params
from toolchoice_pipeline.judge.parse import response_format_for
from toolchoice_pipeline.judge.prompt import build_judge_messages
from toolchoice_pipeline.providers import local_agents, register_providers
from toolchoice_pipeline.providers.local import LocalProvider
from toolchoice_pipeline.providers.replay import ReplayProvider
from toolchoice_pipeline.records.calls import Reply, ToolCall
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.config import JudgeConfig, ModelSpec, RetryConfig
from toolchoice_pipeline_tests.conftest import CASES
from toolchoice_pipeline_tests.execution_support import CATALOG

RETRIES = RetryConfig(max_attempts=3, timeout_s=120.0)
TOOLS = [ToolDefinition.model_validate(tool).to_openai_tool() for tool in CATALOG]
USER = {"role": "user", "content": "Please read the file src/app.py and tell me what it does"}
CALLED = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "src/app.py"}'}}
    ],
}
RESULT = {"role": "tool", "tool_call_id": "call_1", "content": "def main():\n    print('hi')\n"}
CONVERSATIONS = {
    "call with arguments": [USER],
    "grep with a pattern": [{"role": "user", "content": "Search file contents with the regular expression TODO"}],
    "glob by name": [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Find *.md"},
    ],
    "no call": [{"role": "user", "content": "Thanks, that is all for today."}],
    "after a tool result": [USER, CALLED, RESULT],
    "two steps": [{"role": "user", "content": "Find every *.py file and then read setup.py"}, CALLED, RESULT],
}


@pytest.fixture(autouse=True)
def providers():
    register_providers()


def via_litellm(model: str, messages: list[dict[str, Any]], **params: Any) -> tuple[dict[str, Any], int, int]:
    response = asyncio.run(
        litellm.acompletion(
            model=model, messages=copy.deepcopy(messages), timeout=120.0, num_retries=0, max_retries=0, **params
        )
    )
    usage = response.usage
    return assistant_message(response.choices[0].message), usage.prompt_tokens, usage.completion_tokens


def direct(model: str, messages: list[dict[str, Any]], monkeypatch, **params: Any):
    """``complete`` with LiteLLM's handlers for local/ and replay/ made to fail: the call cannot go through them."""

    def refuse(*args, **kwargs):
        raise AssertionError("the direct path reached LiteLLM's handler")

    with monkeypatch.context() as patched:
        patched.setattr(LocalProvider, "completion", refuse)
        patched.setattr(ReplayProvider, "completion", refuse)
        sent = copy.deepcopy(messages)
        done = asyncio.run(complete(ModelSpec(model=model), sent, retries=RETRIES, **params))
    assert sent == messages  # the caller's messages are left as they were
    return done


def same(model, messages, monkeypatch, **params):
    done = direct(model, messages, monkeypatch, **params)
    message, prompt_tokens, completion_tokens = via_litellm(model, messages, **params)
    assert done.message == message
    assert (done.prompt_tokens, done.completion_tokens) == (prompt_tokens, completion_tokens)
    assert done.cost_usd == 0.0 and done.confidence is None and done.attempts == 1
    assert done.provider_ms is not None and 0 < done.provider_ms <= done.latency_ms
    return done


@pytest.mark.parametrize("agent", ["bm25-router", "name-match"])
@pytest.mark.parametrize("conversation", sorted(CONVERSATIONS))
def test_local_agents_answer_the_same_directly_and_through_litellm(agent, conversation, monkeypatch):
    done = same(f"local/{agent}", CONVERSATIONS[conversation], monkeypatch, tools=TOOLS, temperature=0)
    assert done.message["role"] == "assistant"


def test_the_cases_cover_calls_with_arguments_and_text_answers(monkeypatch):
    replies = [direct("local/bm25-router", CONVERSATIONS[name], monkeypatch, tools=TOOLS) for name in CONVERSATIONS]
    calls = [call for done in replies for call in done.message.get("tool_calls") or []]
    assert {call["function"]["name"] for call in calls} >= {"Read", "Grep", "Glob"}
    assert any(json.loads(call["function"]["arguments"]) for call in calls)
    assert any("tool_calls" not in done.message for done in replies)


@pytest.mark.parametrize("seed", [None, 0, 7, 123])
@pytest.mark.parametrize(
    "reply",
    [
        Reply(calls=[ToolCall(name="Read", arguments={"file_path": "src/app.py"})]),
        Reply(calls=[ToolCall(name="Grep", arguments={"pattern": "src/app.py"})]),
        Reply(text="It prints hi."),
    ],
    ids=["right call", "wrong tool", "no call"],
)
def test_the_offline_judge_answers_the_same_directly_and_through_litellm(reply, seed, monkeypatch):
    catalog = [ToolDefinition.model_validate(tool) for tool in CATALOG]
    messages = build_judge_messages([USER], catalog, reply)
    judge = JudgeConfig(model=ModelSpec(model="local/catalog-judge"))
    params = poll_params(judge, seed=seed, response_format=response_format_for(judge.model.model))
    done = same("local/catalog-judge", messages, monkeypatch, **params)
    assert json.loads(done.message["content"])["verdict"] in {"correct", "incorrect", "partial", "abstain"}


def test_a_local_model_sees_the_same_messages_and_parameters_either_way(monkeypatch):
    seen: list[tuple[Any, Any, Any]] = []

    def echo(messages, tools, params):
        seen.append((copy.deepcopy(messages), copy.deepcopy(tools), dict(params)))
        return {"role": "assistant", "content": "ok", "tool_calls": [{"function": {"name": "Read", "arguments": {}}}]}

    monkeypatch.setitem(local_agents.MODELS, "echo", echo)
    params = {"temperature": 0.7, "seed": 3, "max_tokens": 8, "stop": ["x"], "drop_params": True, "top_p": None}
    params |= {"cache": {"no-cache": True}, "metadata": {"task_id": "t1", "step": 1}}
    same("local/echo", [USER, CALLED, RESULT], monkeypatch, tools=TOOLS, **params)
    (direct_seen, litellm_seen) = seen
    assert direct_seen[0] == litellm_seen[0]  # e.g. the assistant message's content None dropped, both ways
    assert "content" not in direct_seen[0][1]
    assert direct_seen[1] == litellm_seen[1] == TOOLS
    litellm_params = dict(litellm_seen[2])
    assert litellm_params.pop("max_retries") == 0  # LiteLLM's OpenAI-client setting, passed along to providers
    assert direct_seen[2] == litellm_params == {"temperature": 0.7, "seed": 3, "max_tokens": 8, "stop": ["x"]}


@pytest.fixture(scope="module")
def scoring_replay(tmp_path_factory):
    cases = [json.loads(line) for line in (CASES / "scoring_cases.jsonl").read_text().splitlines() if line]
    path = tmp_path_factory.mktemp("replay") / "scoring.jsonl"
    path.write_text("".join(json.dumps({"task_id": c["id"], "response": c["response"]}) + "\n" for c in cases))
    return path, [c["id"] for c in cases]


def test_replay_models_answer_the_same_directly_and_through_litellm(scoring_replay, monkeypatch):
    path, task_ids = scoring_replay
    model = f"replay/{path}"
    for task_id in task_ids:
        for step in (0, 1):
            same(model, [USER], monkeypatch, metadata={"task_id": task_id, "step": step})
    same(model, [USER], monkeypatch, max_tokens=8)  # a preflight: no task named


def failure_via_litellm(model: str, **params: Any) -> BaseException:
    with pytest.raises(Exception) as caught:
        via_litellm(model, [USER], **params)
    return caught.value


def failure_direct(model: str, monkeypatch, **params: Any) -> BaseException:
    with pytest.raises(Exception) as caught:
        direct(model, [USER], monkeypatch, **params)
    return caught.value


def test_errors_are_the_same_directly_and_through_litellm(scoring_replay, tmp_path, monkeypatch):
    def boom(messages, tools, params):
        raise ValueError("the agent's own bug")

    monkeypatch.setitem(local_agents.MODELS, "boom", boom)
    path, _ = scoring_replay
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "a"}\n{"oops"\n')
    cases = [
        ("local/no-such-agent", {}),
        ("local/boom", {}),
        (f"replay/{path}", {"metadata": {"task_id": "missing", "step": 0}}),
        (f"replay/{tmp_path / 'absent.jsonl'}", {"metadata": {"task_id": "a", "step": 0}}),
        (f"replay/{bad}", {"metadata": {"task_id": "a", "step": 0}}),
    ]
    kinds = set()
    for model, params in cases:
        expected = failure_via_litellm(model, **params)
        got = failure_direct(model, monkeypatch, **params)
        assert type(got) is type(expected), model
        assert getattr(got, "status_code", None) == getattr(expected, "status_code", None)
        assert getattr(got, "llm_provider", None) == getattr(expected, "llm_provider", None)
        assert type(got.__context__) is type(expected.__context__)
        assert describe_failure(model, got) == describe_failure(model, expected)
        assert got.attempts == 1
        kinds.add(type(got).__name__)
    # what the run stores for them: not found (unknown model, missing file), the model's bug, request rejected (422, 400)
    assert kinds == {"NotFoundError", "APIConnectionError", "BadRequestError"}
    message = describe_failure("local/no-such-agent", failure_direct("local/no-such-agent", monkeypatch))
    assert message.startswith("local/no-such-agent: model not found: ") and "unknown local model" in message


def test_the_direct_path_keeps_the_total_time_bound_and_the_reply_checks(monkeypatch):
    from toolchoice_pipeline.execution import llm
    from toolchoice_pipeline.execution.llm import MAX_REPLY_CHARS, MalformedReply

    def slow(messages, tools, params):
        time.sleep(0.3)  # holds the event loop, as a slow synchronous agent would
        return {"role": "assistant", "content": "late"}

    def endless(messages, tools, params):
        return {"role": "assistant", "content": "x" * (MAX_REPLY_CHARS + 1)}

    monkeypatch.setitem(local_agents.MODELS, "slow", slow)
    monkeypatch.setitem(local_agents.MODELS, "endless", endless)
    monkeypatch.setattr(llm, "TOTAL_TIMEOUT_GRACE_S", 0.0)  # the bound is then the timeout itself
    once = RetryConfig(max_attempts=1)
    with pytest.raises(litellm.Timeout, match="no whole reply within 0.05 s") as caught:
        asyncio.run(complete(ModelSpec(model="local/slow", timeout_s=0.05), [USER], retries=once))
    assert describe_failure("local/slow", caught.value).startswith("local/slow: timed out: ")
    with pytest.raises(MalformedReply, match="more than 1,000,000"):
        asyncio.run(complete(ModelSpec(model="local/endless"), [USER], retries=once))
