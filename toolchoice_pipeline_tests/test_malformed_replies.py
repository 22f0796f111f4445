"""A provider reply with no ``choices`` (or no message) is a retried transient fault, then an infrastructure
error naming the cause, which ``toolchoice run`` prints. The provider is a real OpenAI-compatible HTTP server
on 127.0.0.1, called through LiteLLM."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
import yaml

from toolchoice_pipeline.execution import llm
from toolchoice_pipeline.execution.failures import describe_failure
from toolchoice_pipeline.execution.llm import MalformedReply, complete
from toolchoice_pipeline.suites.config import ModelSpec, RetryConfig
from toolchoice_pipeline_tests.openai_server import SHUTDOWN_POLL_S
from toolchoice_pipeline_tests.test_cli_validate import toolchoice

RETRIES = RetryConfig(max_attempts=3, initial_wait_s=0.001, max_wait_s=0.01, timeout_s=10)
GOOD = {
    "id": "c1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}
NO_CHOICES = {"id": "c0", "object": "chat.completion", "created": 1, "model": "m", "choices": []}


class Provider:
    """Serves ``replies`` in order (the last one repeats); counts the requests."""

    def __init__(self, replies: list[dict]):
        self.replies, self.requests = replies, 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the http.server name
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                reply = outer.replies[min(outer.requests, len(outer.replies) - 1)]
                outer.requests += 1
                body = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, args=(SHUTDOWN_POLL_S,), daemon=True).start()
        self.api_base = f"http://127.0.0.1:{self.server.server_port}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def provider_factory(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-" + "not-a-real-key")
    made: list[Provider] = []

    async def no_sleep(seconds: float) -> None:
        pass

    monkeypatch.setattr(llm, "_backoff_sleep", no_sleep)

    def make(replies):
        made.append(Provider(replies))
        return made[-1]

    yield make
    for provider in made:
        provider.close()


def _call(provider: Provider):
    spec = ModelSpec(model="openai/m", params={"api_base": provider.api_base})
    return asyncio.run(complete(spec, [{"role": "user", "content": "hello"}], retries=RETRIES))


def test_a_reply_with_no_choices_is_retried_and_the_next_good_reply_is_used(provider_factory):
    provider = provider_factory([NO_CHOICES, NO_CHOICES, GOOD])
    completion = _call(provider)
    assert completion.message["content"] == "hi" and completion.attempts == 3 and provider.requests == 3


@pytest.mark.parametrize(
    "reply, cause",
    [
        (NO_CHOICES, "the provider's reply has no choices"),
        (
            {**NO_CHOICES, "choices": [{"index": 0, "finish_reason": "stop", "message": None}]},
            "Invalid response object",
        ),
    ],
)
def test_replies_that_stay_malformed_become_an_infrastructure_error_naming_the_cause(provider_factory, reply, cause):
    provider = provider_factory([reply])
    with pytest.raises(Exception) as caught:
        _call(provider)
    assert provider.requests == RETRIES.max_attempts
    text = describe_failure("openai/m", caught.value)
    assert text.startswith("openai/m: ") and cause in text and "after 3 attempts" in text
    assert "Traceback" not in text and "IndexError" not in text
    if reply is NO_CHOICES:
        assert isinstance(caught.value, MalformedReply)


@pytest.mark.slow
def test_toolchoice_run_stops_on_a_model_whose_replies_stay_malformed_and_prints_the_cause(demo_copy, provider_factory):
    provider = provider_factory([NO_CHOICES])
    config_path = demo_copy / "data" / "toolchoice.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["models"] = [{"model": "openai/m", "params": {"api_base": provider.api_base}}]
    config["retries"] = {"max_attempts": 2, "initial_wait_s": 0.001, "max_wait_s": 0.01, "timeout_s": 10}
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    done = toolchoice(
        "run",
        "--suite",
        "coding_agent",
        "--release",
        "r1",
        "--models",
        "openai/m",
        "--no-judge",
        "--data-dir",
        "data",
        cwd=demo_copy,
        env={"OPENAI_API_KEY": "test-" + "not-a-real-key"},
    )
    output = done.stdout + done.stderr
    # A model whose every reply is malformed fails its preflight call: the run stops before scoring (exit 3, not
    # the gate's 1) and names the cause.
    assert done.returncode == 3, output
    assert "Traceback" not in output and "IndexError" not in output
    assert "malformed provider reply" in output and "the provider's reply has no choices" in output
    assert provider.requests >= 2
