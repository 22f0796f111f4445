"""Preflight: one clear message per unusable model, naming it; bad replay files are bad input; no key leaks."""

from __future__ import annotations

import asyncio

import litellm
import pytest

from toolchoice_pipeline.execution.failures import describe_failure, redact
from toolchoice_pipeline.execution.preflight import preflight, resolve_model
from toolchoice_pipeline.suites.config import ModelSpec, RetryConfig
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline_tests.execution_support import register_scripted

RETRIES = RetryConfig(max_attempts=1)


def check(tmp_path, *specs):
    return asyncio.run(preflight(list(specs), data_dir=tmp_path, retries=RETRIES))


def test_no_key_unknown_provider_and_unknown_local_model(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = check(
        tmp_path,
        ModelSpec(model="anthropic/claude-sonnet-4-5"),
        ModelSpec(model="gpt-4o-mini-typo"),
        ModelSpec(model="local/nobody"),
        ModelSpec(model="sim/fine"),
        ModelSpec(model="sim/bad", params={"sim_error_rate": 2}),
    )
    assert result["anthropic/claude-sonnet-4-5"].startswith(
        "anthropic/claude-sonnet-4-5: no API key: set ANTHROPIC_API_KEY in the environment"
    )
    assert result["gpt-4o-mini-typo"].startswith("gpt-4o-mini-typo: unknown provider")
    assert result["local/nobody"].startswith("local/nobody: unknown local model (known: ")
    assert result["sim/fine"] is None
    assert result["sim/bad"].startswith("sim/bad: bad sim settings")


def test_a_remote_model_gets_a_call_and_its_refusal_is_explained(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-abcdefghijklmnop")
    refused = litellm.AuthenticationError(
        message="Incorrect API key provided: sk-test-abcdefghijklmnop", llm_provider="openai", model="gpt-4o-mini"
    )
    known = ModelSpec(model="openai/gpt-4o-mini", params={"mock_response": refused})
    misspelt = ModelSpec(model="openai/gpt-4o-mni", params={"mock_response": refused})
    fine = ModelSpec(model="openai/gpt-4o", params={"mock_response": "OK"})
    result = check(tmp_path, known, misspelt, fine)
    assert result["openai/gpt-4o-mini"].startswith("openai/gpt-4o-mini: authentication failed")
    assert result["openai/gpt-4o-mni"].startswith("openai/gpt-4o-mni: model not found")
    assert "did you mean openai/gpt-4o-mini" in result["openai/gpt-4o-mni"]
    assert result["openai/gpt-4o"] is None
    assert all("abcdefghijklmnop" not in (message or "") for message in result.values())


def test_not_found_from_the_provider(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-abcdefghijklmnop")
    missing = litellm.NotFoundError(message="The model `gpt-9` does not exist", llm_provider="openai", model="gpt-9")
    result = check(tmp_path, ModelSpec(model="openai/gpt-9", params={"mock_response": missing}))
    assert result["openai/gpt-9"].startswith("openai/gpt-9: model not found")


def test_in_process_providers_must_be_registered(tmp_path):
    register_scripted(lambda *args: {"role": "assistant", "content": "hi"})
    result = check(tmp_path, ModelSpec(model="scripted/x"))
    assert result == {"scripted/x": None}


def test_replay_files_must_load(tmp_path):
    (tmp_path / "good.jsonl").write_text('{"task_id": "a", "tool_calls": [], "content": "no"}\n')
    assert check(tmp_path, ModelSpec(model="replay/good.jsonl")) == {"replay/good.jsonl": None}
    with pytest.raises(InputError) as missing:
        check(tmp_path, ModelSpec(model="replay/missing.jsonl"))
    assert "missing.jsonl" in str(missing.value)
    (tmp_path / "bad.jsonl").write_text('{"task_id": "a"}\n{"task_id": "b", "oops": 1}\n')
    with pytest.raises(InputError) as bad:
        check(tmp_path, ModelSpec(model="replay/bad.jsonl"))
    assert "bad.jsonl:2: oops: unknown field" in str(bad.value)


def test_replay_paths(tmp_path):
    assert resolve_model("replay/r/x.jsonl", tmp_path) == f"replay/{(tmp_path / 'r' / 'x.jsonl').resolve()}"
    assert resolve_model("replay//abs/x.jsonl", tmp_path) == "replay//abs/x.jsonl"
    assert resolve_model("openai/gpt-4o", tmp_path) == "openai/gpt-4o"


def test_messages_never_carry_keys(monkeypatch):
    monkeypatch.setenv("MY_PROVIDER_TOKEN", "tok-0123456789abcdef")
    text = "bad key sk-proj-AbCdEf0123456789 and tok-0123456789abcdef, Bearer abcdefgh12345678"
    cleaned = redact(text)
    assert "AbCdEf0123456789" not in cleaned and "tok-0123456789abcdef" not in cleaned
    assert "abcdefgh12345678" not in cleaned
    error = litellm.RateLimitError(message="quota for sk-proj-AbCdEf0123456789", llm_provider="openai", model="m")
    error.attempts = 6
    message = describe_failure("openai/m", error)
    assert message.startswith("openai/m: rate limited after 6 attempts") and "AbCdEf" not in message


def test_failure_messages_pass_the_same_sanitiser_as_stored_text(monkeypatch):
    """Formats only the sanitiser knows (a password in a URL, a Databricks or Hugging Face token) are redacted
    from provider errors too, with the sanitiser's typed placeholders; an environment key by its value."""
    monkeypatch.setenv("MY_PROVIDER_TOKEN", "tok-0123456789abcdef")
    hf_token = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3x"
    text = (
        f"connect https://bob:Xy7pQ2wLm9@db.example.com/x failed; header {hf_token}; "
        "dapi0123456789abcdef0123456789abcdef; tok-0123456789abcdef"
    )
    cleaned = redact(text)
    for secret in ("Xy7pQ2wLm9", hf_token, "dapi0123456789abcdef", "tok-0123456789abcdef"):
        assert secret not in cleaned
    for kind in ("url_password", "huggingface_access_token", "databricks_api_token", "environment_secret"):
        assert f"[REDACTED:{kind}]" in cleaned
    error = litellm.APIConnectionError(message=text, llm_provider="openai", model="m")
    message = describe_failure("openai/m", error)
    assert message.startswith("openai/m: ") and "Xy7pQ2wLm9" not in message and hf_token not in message
