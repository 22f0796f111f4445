"""Replies bounded by size, not only by time (issue 29): a gzip or deflate bomb and an endless reply from an
OpenAI-compatible server on 127.0.0.1 stop at ``MAX_REPLY_BYTES`` with one clear per-call error, long before the
call's timeout; a compressed reply of a normal size is read as before. In-process models are bounded by the
configured ``timeout_s`` too, and fail as a remote model that timed out does.

Real parts: LiteLLM's OpenAI provider against a real HTTP server on 127.0.0.1; the ``sim/`` and ``local/``
in-process providers; the bodies are built at test time."""

from __future__ import annotations

import asyncio
import json
import time
import zlib
from collections.abc import Iterator

import litellm
import pytest
from litellm import CustomLLM

from toolchoice_pipeline.execution.bounded_http import MAX_REPLY_BYTES, ReplyTooLarge
from toolchoice_pipeline.execution.failures import describe_failure, is_model_level
from toolchoice_pipeline.execution.llm import TOTAL_TIMEOUT_GRACE_S, complete
from toolchoice_pipeline.providers import register_providers, sim
from toolchoice_pipeline.suites.config import ModelSpec, RetryConfig
from toolchoice_pipeline_tests.openai_server import OpenAICompatibleServer

MODEL = "openai/local-model"
RETRIES = RetryConfig(max_attempts=3, initial_wait_s=0, max_wait_s=0.01, timeout_s=60)


def reply_json(content: str) -> bytes:
    return json.dumps(
        {
            "id": "c1",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        }
    ).encode()


def compressed(encoding: str, pieces: Iterator[bytes]) -> Iterator[bytes]:
    """``pieces`` compressed as they come (gzip, zlib-wrapped deflate or raw deflate), so a bomb of tens of
    megabytes never exists whole in the test either."""
    wbits = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS, "raw-deflate": -zlib.MAX_WBITS}[encoding]
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    for piece in pieces:
        out = packer.compress(piece)
        if out:
            yield out
    yield packer.flush()


def bomb_pieces(inflated_bytes: int) -> Iterator[bytes]:
    """A chat completion whose content is ``inflated_bytes`` of one letter (valid JSON when whole)."""
    head, tail = reply_json("@").split(b"@")
    yield head
    block = b"a" * (1 << 20)
    for _ in range(inflated_bytes // len(block)):
        yield block
    yield tail


def endless() -> Iterator[bytes]:
    """JSON whitespace, 64 KiB at a time, for ever (a valid prefix that never ends)."""
    chunk = b" " * (64 * 1024)
    while True:
        yield chunk


@pytest.fixture
def no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def call(server: OpenAICompatibleServer, retries: RetryConfig = RETRIES):
    spec = ModelSpec(model=MODEL, params={"api_base": server.api_base})
    return asyncio.run(complete(spec, [{"role": "user", "content": "hi"}], retries=retries))


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_compression_bomb_stops_at_the_byte_limit_with_one_per_call_error(no_key, encoding):
    inflated = 4 * MAX_REPLY_BYTES  # 64 MiB from about 64 KiB on the wire
    server = OpenAICompatibleServer(
        raw_body=lambda: compressed(encoding, bomb_pieces(inflated)), content_encoding=encoding
    )
    try:
        with pytest.raises(ReplyTooLarge) as caught:
            call(server)
    finally:
        server.close()
    assert f"larger than {MAX_REPLY_BYTES:,} bytes (after {encoding} decompression" in str(caught.value)
    assert len(server.requests) == 1  # the same request would get the same bomb: not retried
    line = describe_failure(MODEL, caught.value)
    assert line.startswith(f"{MODEL}: reply too large: ") and "Traceback" not in line
    assert not is_model_level(caught.value)  # one call's reply, not the model: the run goes on


def test_an_endless_reply_stops_at_the_byte_limit_before_the_timeout(no_key):
    server = OpenAICompatibleServer(raw_body=endless)
    try:
        with pytest.raises(ReplyTooLarge, match=f"larger than {MAX_REPLY_BYTES:,} bytes \\(on the wire\\)"):
            call(server, RetryConfig(max_attempts=1, timeout_s=600))
    finally:
        server.close()


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
def test_a_compressed_reply_of_a_normal_size_is_read_whole(no_key, encoding):
    header = "deflate" if encoding == "raw-deflate" else encoding
    content = "x" * 500_000
    server = OpenAICompatibleServer(
        raw_body=lambda: compressed(encoding, iter([reply_json(content)])), content_encoding=header
    )
    try:
        assert call(server).message["content"] == content
    finally:
        server.close()
    assert server.accept_encoding == ["gzip, deflate"]  # only what is decompressed with a bounded size


def test_a_reply_in_an_encoding_that_was_not_asked_for_is_refused(no_key):
    server = OpenAICompatibleServer(raw_body=lambda: iter([b"\x1b\x00"]), content_encoding="br")
    try:
        with pytest.raises(ReplyTooLarge, match="encoded as br: only gzip, deflate were asked for"):
            call(server)
    finally:
        server.close()


# The attempt's bound: the timeout plus its grace (a floor of about TOTAL_TIMEOUT_GRACE_S for the two tests below,
# however short the timeout).
TIMEOUT_S = 0.05
BOUND_S = TIMEOUT_S + TOTAL_TIMEOUT_GRACE_S


def test_an_in_process_model_slower_than_its_timeout_fails_as_a_remote_one_does():
    register_providers()
    spec = ModelSpec(model="sim/slow", params={"sim_latency_ms": 60_000}, timeout_s=TIMEOUT_S)
    attempted, completed = sim.STATS.attempts, sim.STATS.completed
    with pytest.raises(litellm.Timeout, match=f"no whole reply within {TIMEOUT_S:g} s") as caught:
        asyncio.run(complete(spec, [{"role": "user", "content": "hi"}], retries=RetryConfig(max_attempts=1)))
    # cut by the timeout (plus its grace) while the model was still at work, not refused after it answered
    assert (sim.STATS.attempts, sim.STATS.completed) == (attempted + 1, completed)
    assert describe_failure("sim/slow", caught.value).startswith("sim/slow: timed out: ")


class Stuck(CustomLLM):
    """An in-process model that holds the event loop past the attempt's bound (as a slow synchronous local agent
    would)."""

    async def acompletion(self, *args, **kwargs):
        time.sleep(BOUND_S + 0.05)
        return litellm.ModelResponse(choices=[{"message": {"role": "assistant", "content": "late"}}])


def test_a_synchronous_in_process_model_past_its_timeout_is_refused_as_a_timeout():
    register_providers({"stuck": Stuck()})
    spec = ModelSpec(model="stuck/agent", timeout_s=TIMEOUT_S)
    with pytest.raises(litellm.Timeout, match=f"no whole reply within {TIMEOUT_S:g} s"):
        asyncio.run(complete(spec, [{"role": "user", "content": "hi"}], retries=RetryConfig(max_attempts=1)))
