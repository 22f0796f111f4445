"""The one call wrapper: which errors are retried (LiteLLM's mock error strings), Retry-After, prices."""

from __future__ import annotations

import asyncio

import httpx
import litellm
import openai
import pytest

from toolchoice_pipeline.execution import llm
from toolchoice_pipeline.execution.llm import call_cost, complete, is_transient
from toolchoice_pipeline.suites.config import ModelSpec, Price, RetryConfig
from toolchoice_pipeline_tests.execution_support import register_scripted

RETRIES = RetryConfig(max_attempts=4, initial_wait_s=0.001, max_wait_s=0.01, timeout_s=0.01)
MESSAGES = [{"role": "user", "content": "hello"}]


@pytest.fixture
def waits(monkeypatch):
    """The sleeps between attempts, recorded instead of slept."""
    recorded: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr(llm, "_backoff_sleep", fake_sleep)
    return recorded


def run(coroutine):
    return asyncio.run(coroutine)


def failing_call(**params):
    return complete(ModelSpec(model="openai/gpt-4o-mini"), MESSAGES, retries=RETRIES, **params)


@pytest.mark.parametrize("mock", ["litellm.RateLimitError", "litellm.InternalServerError"])
def test_transient_mock_errors_are_retried_until_attempts_run_out(mock, waits):
    with pytest.raises((litellm.RateLimitError, litellm.InternalServerError)) as caught:
        run(failing_call(mock_response=mock))
    assert caught.value.attempts == RETRIES.max_attempts
    assert len(waits) == RETRIES.max_attempts - 1


def test_timeouts_are_retried(waits):
    with pytest.raises(litellm.Timeout) as caught:
        run(failing_call(mock_timeout=True))
    assert caught.value.attempts == RETRIES.max_attempts


@pytest.mark.parametrize(
    "mock",
    [
        "litellm.ContextWindowExceededError",
        litellm.AuthenticationError(message="invalid x-api-key", llm_provider="openai", model="gpt-4o-mini"),
        litellm.NotFoundError(message="model does not exist", llm_provider="openai", model="gpt-4o-mini"),
        litellm.BadRequestError(message="bad schema", llm_provider="openai", model="gpt-4o-mini"),
    ],
)
def test_auth_not_found_and_bad_requests_are_not_retried(mock, waits):
    with pytest.raises(openai.APIError) as caught:
        run(failing_call(mock_response=mock))
    assert caught.value.attempts == 1
    assert waits == []


def test_retry_after_is_honoured(waits):
    limited = litellm.RateLimitError(
        message="slow down",
        llm_provider="openai",
        model="gpt-4o-mini",
        response=httpx.Response(429, headers={"retry-after": "7"}, request=httpx.Request("POST", "https://x.invalid")),
    )
    with pytest.raises(litellm.RateLimitError):
        run(failing_call(mock_response=limited))
    # the backoff alone would wait at most max_wait_s (0.01 s); the provider asked for 7 s
    assert waits and all(wait >= 7 for wait in waits)


def test_a_transient_failure_then_success_returns_the_reply(waits):
    outcomes = iter(
        [
            litellm.InternalServerError(message="boom", llm_provider="scripted", model="m"),
            litellm.RateLimitError(message="slow", llm_provider="scripted", model="m"),
            {"role": "assistant", "content": "fine"},
        ]
    )

    def script(model, messages, tools, metadata):
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    register_scripted(script)
    done = run(complete(ModelSpec(model="scripted/m"), MESSAGES, retries=RETRIES))
    assert done.attempts == 3
    assert done.message["content"] == "fine"
    assert len(waits) == 2


def test_single_attempt_providers_are_not_retried(monkeypatch, waits):
    def script(model, messages, tools, metadata):
        raise litellm.InternalServerError(message="boom", llm_provider="scripted", model=model)

    handler = register_scripted(script)
    monkeypatch.setattr(llm, "SINGLE_ATTEMPT_PROVIDERS", ("scripted",))
    with pytest.raises(litellm.InternalServerError) as caught:
        run(complete(ModelSpec(model="scripted/m"), MESSAGES, retries=RETRIES))
    assert caught.value.attempts == 1
    assert len(handler.requests) == 1


def test_is_transient_classes():
    assert is_transient(litellm.RateLimitError(message="", llm_provider="x", model="m"))
    assert is_transient(litellm.Timeout(message="", llm_provider="x", model="m"))
    assert is_transient(litellm.ServiceUnavailableError(message="", llm_provider="x", model="m"))
    assert not is_transient(litellm.AuthenticationError(message="", llm_provider="x", model="m"))
    assert not is_transient(litellm.ContextWindowExceededError(message="", llm_provider="x", model="m"))
    assert not is_transient(ValueError("not a provider error"))


def test_tool_calls_come_back_in_openai_format():
    def script(model, messages, tools, metadata):
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": tools[0]["function"]["name"], "arguments": "{}"}}
            ],
        }

    register_scripted(script)
    tools = [{"type": "function", "function": {"name": "Read", "description": "", "parameters": {"type": "object"}}}]
    done = run(complete(ModelSpec(model="scripted/m"), MESSAGES, retries=RETRIES, tools=tools))
    assert done.message["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": "{}"}}
    ]
    assert done.prompt_tokens > 0 and done.completion_tokens > 0
    assert done.cost_usd == 0.0  # in-process models are free


def test_prices_come_from_litellm_or_the_configured_override():
    spec = ModelSpec(model="openai/gpt-4o-mini")
    done = run(complete(spec, MESSAGES, retries=RETRIES, mock_response="hello"))
    expected = litellm.completion_cost(completion_response=done.raw)
    assert expected > 0 and done.cost_usd == pytest.approx(expected)
    priced = ModelSpec(model="openai/gpt-4o-mini", price=Price(input_usd_per_mtok=1.0, output_usd_per_mtok=2.0))
    assert call_cost(priced, done.raw, 1_000_000, 500_000) == pytest.approx(2.0)
    assert call_cost(ModelSpec(model="local/name-match"), done.raw, 10, 10) == 0.0
