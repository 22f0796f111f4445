"""Hostile input, second round (issue 29): identifiers with control characters, JSON that is not strict in the
readers of outside data, negative token usage, and providers that trickle, or ask to come back tomorrow.

Real parts: the installed console script, real session and OTel files, LiteLLM calling a 127.0.0.1 server the
test starts."""

from __future__ import annotations

import asyncio
import json

import litellm
import pytest

from toolchoice_pipeline.execution import llm
from toolchoice_pipeline.execution.llm import MAX_REPLY_CHARS, MalformedReply, complete
from toolchoice_pipeline.ingest.genai_calls import decoded
from toolchoice_pipeline.ingest.jsonl import Warnings, read_json_lines
from toolchoice_pipeline.ingest.otlp_json import documents
from toolchoice_pipeline.releases.request import check_release_id
from toolchoice_pipeline.suites.config import ModelSpec, RetryConfig
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline.util.identifiers import control_character
from toolchoice_pipeline.util.json_text import MAX_LINE_BYTES, bounded_lines
from toolchoice_pipeline_tests.openai_server import OpenAICompatibleServer
from toolchoice_pipeline_tests.pipeline_helpers import DEMO_SUITE, copy_data, toolchoice
from toolchoice_pipeline_tests.test_hostile_exit_codes import assert_one_error_line

MODEL = "openai/local-model"

# --- identifiers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("release_id", ["r1\n", "r1\r", "r\x001", "r1\x1b[2J", "r1\u2028"])
def test_a_release_id_with_a_control_character_or_line_break_is_refused(release_id):
    with pytest.raises(InputError) as refused:
        check_release_id(release_id)
    assert "release id" in str(refused.value.problems[0])


@pytest.mark.parametrize(
    ("text", "found"),
    [("a\nb", "U+000A"), ("a\x00", "U+0000"), ("\x1b[31m", "U+001B"), ("x\u0085", "U+0085"), ("ok\t", "U+0009")],
)
def test_control_character_names_the_character_and_where(text, found):
    assert control_character(text).startswith(found)
    assert control_character("local/bm25-router") is None
    assert control_character("modèle/日本語") is None  # letters of any script are fine


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return copy_data(tmp_path_factory.mktemp("hostile") / "data")


@pytest.mark.slow
def test_run_refuses_a_release_id_with_a_trailing_newline(data_dir):
    done = toolchoice("run", "--release", "r1\n", "--no-judge", "--data-dir", str(data_dir))
    assert_one_error_line(done, 2, "release id 'r1\\n'")
    assert not (data_dir / "releases").exists()


@pytest.mark.slow
def test_run_refuses_a_model_name_with_a_newline_on_the_command_line(data_dir):
    done = toolchoice("run", "--models", "local/bm25-router\nINJECTED", "--no-judge", "--data-dir", str(data_dir))
    assert_one_error_line(done, 2, "--models", "U+000A")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "needle"),
    [('"local/bm25-router\\nINJECTED"', "U+000A"), ('"local/bm25-router\\0"', "U+0000"), ('"local/x\x00"', "#x0000")],
    ids=["newline", "escaped-nul", "raw-nul"],
)
def test_validate_refuses_a_model_name_with_a_control_character_with_file_and_line(data_dir, tmp_path, model, needle):
    config = data_dir / "toolchoice.yaml"
    saved = config.read_bytes()
    try:
        config.write_bytes(f"models:\n  - model: {model}\n".encode())
        done = toolchoice("validate", "--data-dir", str(data_dir))
    finally:
        config.write_bytes(saved)
    line = assert_one_error_line(done, 2, "toolchoice.yaml", needle)
    assert "INJECTED" not in done.stdout and "\nINJECTED" not in done.stderr
    assert "models[0].model" in line or "bad YAML" in line


@pytest.mark.slow
def test_validate_refuses_a_task_id_with_an_escape_sequence_with_file_line_and_field(data_dir):
    tasks = data_dir / "suites" / DEMO_SUITE / "tasks.jsonl"
    saved = tasks.read_bytes()
    lines = saved.decode().splitlines()
    task = json.loads(lines[1])
    task["id"] += "\x1b[2J"
    lines[1] = json.dumps(task)
    try:
        tasks.write_text("\n".join(lines) + "\n")
        done = toolchoice("validate", "--data-dir", str(data_dir))
    finally:
        tasks.write_bytes(saved)
    assert_one_error_line(done, 2, "tasks.jsonl:2: id:", "U+001B")


# --- strict JSON in the readers of outside data -------------------------------------------------------------

NOT_STRICT = {
    "nan": '{"type": "user", "n": NaN}',
    "infinity": '{"type": "user", "n": -Infinity}',
    "overflow": '{"type": "user", "n": 1e999}',
    "duplicate-key": '{"type": "user", "type": "assistant"}',
}


@pytest.mark.parametrize("kind", NOT_STRICT)
def test_a_session_line_that_is_not_strict_json_is_skipped_with_its_line(tmp_path, kind):
    session = tmp_path / "s.jsonl"
    session.write_text('{"type": "user", "n": 1}\n' + NOT_STRICT[kind] + "\n")
    warnings = Warnings()
    kept = list(read_json_lines(session, "s.jsonl", warnings))
    assert [number for number, _ in kept] == [1]
    assert warnings.count == 1 and warnings.items[0].startswith("s.jsonl:2: line skipped: not valid JSON")


@pytest.mark.parametrize("kind", NOT_STRICT)
def test_a_pretty_printed_otel_export_that_is_not_strict_json_is_refused(tmp_path, kind):
    value = NOT_STRICT[kind]
    trace = tmp_path / "t.json"
    trace.write_text('{\n  "resourceSpans": [],\n  "extra": ' + value + "\n}\n")
    with pytest.raises(InputError) as refused:
        list(documents(trace, "t.json", Warnings()))
    assert "not OTLP JSON" in str(refused.value.problems[0])


def test_an_attribute_holding_json_that_is_not_strict_is_not_decoded():
    assert decoded('{"a": NaN}') is None and decoded('{"a": 1, "a": 2}') is None and decoded("[1e999]") is None
    assert decoded('{"a": 1.5}') == {"a": 1.5}


# --- providers: usage, trickling replies, Retry-After --------------------------------------------------------


@pytest.fixture
def no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def serve(**hostile):
    return OpenAICompatibleServer(**hostile)


def call(server, retries: RetryConfig):
    spec = ModelSpec(model=MODEL, params={"api_base": server.api_base})
    return asyncio.run(complete(spec, [{"role": "user", "content": "hi"}], retries=retries))


@pytest.mark.parametrize("usage", [{"prompt_tokens": -5, "completion_tokens": 5, "total_tokens": 0}])
def test_negative_token_usage_from_a_provider_is_refused(no_key, usage):
    server = serve(usage=usage)
    try:
        with pytest.raises(MalformedReply, match="usage.prompt_tokens = -5"):
            call(server, RetryConfig(max_attempts=1, timeout_s=30))
    finally:
        server.close()


def test_a_reply_sent_one_byte_at_a_time_cannot_extend_the_call_past_its_timeout(no_key):
    # a ~300-byte reply: 15 s at this pace, 10 times the attempt's bound (0.5 s + 1 s grace); each byte comes a
    # tenth of the read timeout after the last
    server = serve(trickle_s=0.05)
    try:
        with pytest.raises(litellm.Timeout, match="no whole reply within 0.5 s"):
            call(server, RetryConfig(max_attempts=1, timeout_s=0.5))
        # ended by the timeout while the reply was still coming (the server's count of what it sent), not by its length
        assert len(server.requests) == 1 and not any(sent == length for sent, length in server.sent)
    finally:
        server.close()


def _noted_sleep(waits: list[float]):
    async def noted(seconds: float) -> None:
        waits.append(seconds)

    return noted


def test_a_retry_after_beyond_the_cap_fails_the_call_at_once(no_key, monkeypatch):
    server = serve(retry_after="86400")
    try:
        waits: list[float] = []
        monkeypatch.setattr(llm, "_backoff_sleep", _noted_sleep(waits))
        with pytest.raises(litellm.RateLimitError) as failed:
            call(server, RetryConfig(max_attempts=6, timeout_s=30, max_retry_after_s=60))
        assert failed.value.attempts == 1 and len(server.requests) == 1
        assert waits == []  # failed at once: no wait for the Retry-After, nor a backoff
    finally:
        server.close()


def test_a_retry_after_within_the_cap_is_waited_for_and_retried(no_key, monkeypatch):
    server = serve(retry_after="0.1")
    try:
        waits: list[float] = []
        monkeypatch.setattr(llm, "_backoff_sleep", _noted_sleep(waits))
        with pytest.raises(litellm.RateLimitError) as failed:
            call(server, RetryConfig(max_attempts=3, initial_wait_s=0, max_wait_s=0.2, timeout_s=30))
        assert failed.value.attempts == 3 and len(server.requests) == 3
        assert waits == [0.1, 0.1]  # the Retry-After before each retry (the backoff alone would be 0)
    finally:
        server.close()


# --- a size limit per line ------------------------------------------------------------------------------------


def test_bounded_lines_refuses_a_long_line_by_number_and_reads_on(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"short\n" + b"x" * 100 + b"\n" + b"exactly10\n" + b"y" * 25 + b"\nlast")
    with path.open("rb") as handle:
        got = list(bounded_lines(handle, limit=10))
    assert got == [(1, b"short\n"), (2, None), (3, b"exactly10\n"), (4, None), (5, b"last")]


def test_a_session_line_over_the_limit_is_skipped_and_the_others_are_read(tmp_path):
    session = tmp_path / "s.jsonl"
    with session.open("wb") as out:  # the long line written a MiB at a time, never whole in memory
        out.write(b'{"type": "user", "n": 1}\n{"type": "user", "pad": "')
        for _ in range(MAX_LINE_BYTES // (1 << 20)):
            out.write(b"x" * (1 << 20))
        out.write(b'"}\n{"type": "user", "n": 3}\n')
    warnings = Warnings()
    kept = [number for number, _ in read_json_lines(session, "s.jsonl", warnings)]
    assert kept == [1, 3]
    assert warnings.items == ["s.jsonl:2: the line is longer than 32 MiB: line skipped (one JSON value per line)"]


@pytest.mark.slow
def test_validate_refuses_a_task_line_over_the_limit_with_file_and_line(data_dir):
    tasks = data_dir / "suites" / DEMO_SUITE / "tasks.jsonl"
    saved = tasks.read_bytes()
    lines = saved.decode().splitlines()
    lines.insert(2, json.dumps({"id": "big", "messages": [{"role": "user", "content": "x" * (MAX_LINE_BYTES + 1)}]}))
    try:
        tasks.write_text("\n".join(lines) + "\n")
        done = toolchoice("validate", "--data-dir", str(data_dir))
    finally:
        tasks.write_bytes(saved)
    assert_one_error_line(done, 2, "tasks.jsonl:3: the line is longer than 32 MiB")


def test_a_reply_over_the_size_limit_is_malformed_and_one_at_the_limit_is_kept(no_key):
    server = serve(reply_text="x" * (MAX_REPLY_CHARS + 1))
    try:
        with pytest.raises(MalformedReply, match="1,000,001 characters"):
            call(server, RetryConfig(max_attempts=1, timeout_s=60))
    finally:
        server.close()
    server = serve(reply_text="x" * MAX_REPLY_CHARS)
    try:
        assert len(call(server, RetryConfig(max_attempts=1, timeout_s=60)).message["content"]) == MAX_REPLY_CHARS
    finally:
        server.close()
