"""The sim provider: deterministic faults per request and seed, plausible tool calls, settings checks."""

from __future__ import annotations

import asyncio
import json

import litellm
import pytest

from toolchoice_pipeline.providers import register_providers
from toolchoice_pipeline.providers.sim import FAULT_KINDS, STATS, SimSettings, fault_for, plausible_reply

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file by its path.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "lines": {"type": "integer"}},
                "required": ["path", "lines"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "send_email",
            "description": "Send an email message to someone.",
            "parameters": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]},
        },
    },
]


def test_faults_are_deterministic_and_mixed():
    settings = SimSettings(error_rate=0.3, seed=11)
    first = [fault_for(settings, f"request-{i}", 0) for i in range(3000)]
    assert first == [fault_for(settings, f"request-{i}", 0) for i in range(3000)]
    rate = sum(f is not None for f in first) / len(first)
    assert 0.25 < rate < 0.35
    assert {f for f in first if f} == set(FAULT_KINDS)
    other_seed = [fault_for(SimSettings(error_rate=0.3, seed=12), f"request-{i}", 0) for i in range(3000)]
    assert other_seed != first
    assert all(fault_for(SimSettings(error_rate=0.0), f"r{i}", 0) is None for i in range(100))


def test_the_reply_calls_the_tool_named_in_the_request_with_arguments_from_it():
    message = plausible_reply([{"role": "user", "content": "Please read_file 'notes.txt', first 20 lines"}], TOOLS)
    [tool_call] = message["tool_calls"]
    assert tool_call["function"]["name"] == "read_file"
    assert json.loads(tool_call["function"]["arguments"]) == {"path": "notes.txt", "lines": 20}
    by_words = plausible_reply([{"role": "user", "content": "Email Bob that I am late"}], TOOLS)
    assert by_words["tool_calls"][0]["function"]["name"] == "send_email"
    after_result = plausible_reply([{"role": "user", "content": "x"}, {"role": "tool", "content": "ok"}], TOOLS)
    assert "tool_calls" not in after_result


def test_through_litellm_a_retried_request_eventually_gets_through():
    register_providers()
    STATS.reset()
    params = {"sim_latency_ms": 0, "sim_error_rate": 0.5, "sim_seed": 3, "sim_retry_after_s": 0.25}
    outcomes = []

    async def ask():
        for _attempt in range(30):
            try:
                await litellm.acompletion(
                    model="sim/m",
                    messages=[{"role": "user", "content": "read_file a.txt"}],
                    tools=TOOLS,
                    num_retries=0,
                    **params,
                )
                outcomes.append("ok")
                return
            except litellm.RateLimitError as exc:
                assert exc.response.headers["retry-after"] == "0.25"
                outcomes.append("rate_limit")
            except litellm.InternalServerError:
                outcomes.append("server_error")
            except litellm.Timeout:
                outcomes.append("timeout")

    asyncio.run(ask())
    assert outcomes[-1] == "ok"
    assert STATS.attempts == len(outcomes) and STATS.completed == 1
    assert sum(STATS.faults.values()) == len(outcomes) - 1


@pytest.mark.parametrize("params", [{"sim_error_rate": 1.5}, {"sim_latency_ms": -1}, {"sim_seed": "x"}])
def test_bad_settings_are_refused(params):
    with pytest.raises(ValueError):
        SimSettings.from_params(params)
