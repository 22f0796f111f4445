"""Local servers as first-class providers (issue 30): an OpenAI-compatible server on 127.0.0.1, started by the
test, called through LiteLLM with no ``OPENAI_API_KEY``; the preflight does not ask for one; the call journal
keeps the model's calls when the server moves to another port; a per-model timeout."""

from __future__ import annotations

import asyncio

import litellm
import pytest

from toolchoice_pipeline.execution.llm import complete
from toolchoice_pipeline.execution.local_server import PLACEHOLDER_KEY, is_loopback, needs_placeholder_key
from toolchoice_pipeline.execution.preflight import PREFLIGHT_MESSAGES, static_problem
from toolchoice_pipeline.execution.runner import run_suite_sync
from toolchoice_pipeline.suites.config import ModelSpec, RetryConfig, RunConfig
from toolchoice_pipeline_tests.execution_support import numbered_tasks, write_suite
from toolchoice_pipeline_tests.openai_server import OpenAICompatibleServer

MODEL = "openai/local-model"
RETRIES = RetryConfig(max_attempts=1, timeout_s=30)


@pytest.fixture
def server(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = OpenAICompatibleServer()
    yield made
    made.close()


def test_loopback_addresses():
    for base in ("http://127.0.0.1:8000/v1", "http://localhost:11434/v1", "http://[::1]:8080/v1", "127.0.0.2:9"):
        assert is_loopback(base), base
    for base in ("https://api.openai.com/v1", "http://10.0.0.5:8000/v1", "http://localhost.example.com/v1", "", None):
        assert not is_loopback(base), base


def test_the_preflight_needs_no_key_for_a_local_api_base_only(server, tmp_path):
    local = ModelSpec(model=MODEL, params={"api_base": server.api_base})
    assert static_problem(local, tmp_path) is None
    hosted = ModelSpec(model=MODEL, params={"api_base": "https://llm.example.com/v1"})
    assert "no API key: set OPENAI_API_KEY" in static_problem(hosted, tmp_path)
    assert "no API key" in static_problem(ModelSpec(model=MODEL), tmp_path)


def test_a_keyless_local_server_answers_a_tool_call_through_litellm(server, monkeypatch):
    spec = ModelSpec(model=MODEL, params={"api_base": server.api_base, "temperature": 0})
    tools = [
        {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}
        for name in ("Glob", "Read")
    ]
    done = asyncio.run(complete(spec, [{"role": "user", "content": "Read the README"}], retries=RETRIES, tools=tools))
    assert done.message["tool_calls"][0]["function"]["name"] == "Read"
    assert server.requests[0]["model"] == "local-model"
    assert server.authorization == [f"Bearer {PLACEHOLDER_KEY}"]  # LiteLLM's client wants a key: a placeholder
    monkeypatch.setenv("OPENAI_API_KEY", "test-" + "user-set")  # a key the user set is used as it is
    assert not needs_placeholder_key(MODEL, spec.params)
    assert not needs_placeholder_key("anthropic/x", {"api_base": server.api_base})


def test_the_journal_keeps_a_local_models_calls_when_its_server_moves_to_another_port(server, tmp_path):
    suite = write_suite(tmp_path, numbered_tasks(4))

    def config(api_base, **extra):
        spec = {"model": MODEL, "params": {"api_base": api_base}, **extra}
        return RunConfig.model_validate({"models": [spec], "retries": {"max_attempts": 1, "timeout_s": 30}})

    first = run_suite_sync(suite, config(server.api_base), data_dir=tmp_path)
    asked = len(server.requests)
    assert asked >= 4 and not any(e.error for e in first)
    moved = OpenAICompatibleServer()
    try:
        again = run_suite_sync(suite, config(moved.api_base), data_dir=tmp_path)
        assert moved.requests == [] and all(s.cache_hit for e in again for s in e.steps)
        # A journal_key says "other weights behind the same model string": their calls are asked anew.
        other = run_suite_sync(suite, config(moved.api_base, journal_key="q4-quant"), data_dir=tmp_path)
        assert len(moved.requests) == asked and not any(s.cache_hit for e in other for s in e.steps)
    finally:
        moved.close()


def test_a_per_model_timeout_replaces_the_retries_timeout(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    slow = OpenAICompatibleServer(delay_s=3.0)  # within the retries' 30 s, 15 times the model's own timeout
    try:
        spec = ModelSpec(model=MODEL, params={"api_base": slow.api_base}, timeout_s=0.2)
        with pytest.raises(litellm.Timeout):
            asyncio.run(complete(spec, [{"role": "user", "content": "hi"}], retries=RETRIES))
    finally:
        slow.close()


def test_a_slow_preflight_call_sizes_the_timeout_advice(caplog, tmp_path, monkeypatch):
    from toolchoice_pipeline.execution.local_server import timeout_advice

    assert timeout_advice("openai/m", 10.0, 120.0) is None  # under a quarter of the timeout
    advice = timeout_advice("openai/m", 82.0, 120.0)  # the first call on a slow server
    assert "took 82.0 s of its 120 s timeout" in advice and "timeout_s: 492" in advice
    assert "timeout_s: 3600" in timeout_advice("openai/m", 900.0, 1000.0)
    # Through the runner: a server answering the preflight call in 0.3 s against a 1 s timeout (over the quarter
    # that draws the advice, well inside the timeout) draws the advice in the log.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    slow = OpenAICompatibleServer(delay_s=lambda body: 0.3 if body.get("messages") == PREFLIGHT_MESSAGES else 0.0)
    try:
        suite = write_suite(tmp_path, numbered_tasks(1))
        config = RunConfig.model_validate(
            {
                "models": [{"model": MODEL, "params": {"api_base": slow.api_base}, "timeout_s": 1}],
                "retries": {"max_attempts": 1},
            }
        )
        with caplog.at_level("WARNING", logger="toolchoice_pipeline.execution.runner"):
            episodes = run_suite_sync(suite, config, data_dir=tmp_path)
        assert not any(e.error for e in episodes)
        assert any(
            f"{MODEL}: its preflight call took" in r.getMessage() and "of its 1 s timeout" in r.getMessage()
            for r in caplog.records
        )
    finally:
        slow.close()
