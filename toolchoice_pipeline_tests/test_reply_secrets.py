"""A model's reply is sanitised before it is stored: a fake AWS key pair and a GitHub token in a replayed model's
text and call arguments reach neither the call journal, the staged Parquet nor the warehouse's ``agent_calls``
(end to end through ``toolchoice run``); a reply with nothing to redact is kept as it is."""

from __future__ import annotations

import json
import random
import string

import pytest

from toolchoice_pipeline.util.reply_secrets import sanitise_reply
from toolchoice_pipeline_tests.pipeline_helpers import copy_data, toolchoice
from toolchoice_pipeline_tests.test_ingest import SPOTTER, ingest
from toolchoice_pipeline_tests.test_secrets_e2e import files, parquet_texts, sqlite_texts


def fake_secrets() -> dict[str, str]:
    rnd = random.Random()
    upper = string.ascii_uppercase + "234567"
    b64 = string.ascii_letters + string.digits + "/+"
    return {
        "aws_id": "AK" + "IA" + "".join(rnd.choice(upper) for _ in range(16)),
        "aws_secret": "".join(rnd.choice(b64) for _ in range(40)),
        "github": "gh" + "p_" + "".join(rnd.choice(string.ascii_letters + string.digits) for _ in range(36)),
    }


def test_content_and_call_arguments_are_sanitised_and_the_rest_kept():
    s = fake_secrets()
    message = {
        "role": "assistant",
        "content": f"I will use AWS key {s['aws_id']} with secret {s['aws_secret']}; mail ops@example.com.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {
                    "name": "Bash",
                    "arguments": json.dumps(
                        {"command": f"GITHUB_TOKEN={s['github']} git push", "cwd": "/home/dev/app"}
                    ),
                },
            },
            {"id": "call_2", "type": "function", "function": {"name": "Read", "arguments": '{"path": "a.py"}'}},
        ],
    }
    out = sanitise_reply(message)
    text = json.dumps(out)
    assert not any(value in text for value in s.values())
    assert "[REDACTED:aws_access_key_id]" in out["content"] and "ops@example.com" in out["content"]
    arguments = json.loads(out["tool_calls"][0]["function"]["arguments"])
    assert arguments["command"].startswith("GITHUB_TOKEN=[REDACTED:") and arguments["cwd"] == "/home/dev/app"
    assert out["tool_calls"][1] is message["tool_calls"][1]  # nothing to redact: untouched, not re-encoded
    assert message["content"].count(s["aws_id"]) == 1  # the input is not changed in place


def test_a_reply_with_nothing_to_redact_is_the_same_object():
    message = {
        "role": "assistant",
        "content": "The weather in Paris is mild; I'll fetch the forecast.",
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "get", "arguments": '{"city": "Paris"}'}}],
    }
    assert sanitise_reply(message) is message


def test_undecodable_arguments_and_text_parts_are_sanitised_as_text():
    s = fake_secrets()
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": f"token {s['github']}"}],
        "function_call": {"name": "run", "arguments": f"{{broken json {s['github']}"},
    }
    out = sanitise_reply(message)
    assert s["github"] not in json.dumps(out) and out["function_call"]["arguments"].startswith(
        "{broken json [REDACTED:"
    )


@pytest.mark.slow
def test_secrets_in_a_models_replies_are_stored_nowhere(tmp_path, capsys):
    data_dir = copy_data(tmp_path / "data")
    code, _, err = ingest(capsys, "claude-code", [SPOTTER], data_dir, "leaky")
    assert code == 0, err
    replay = data_dir / "suites" / "leaky" / "replay.jsonl"
    s = fake_secrets()
    lines = []
    for line in replay.read_text().splitlines():  # the recorded model now answers with secrets
        reply = json.loads(line)
        reply["content"] = f"Use AWS key {s['aws_id']} with secret {s['aws_secret']} for the upload."
        reply["tool_calls"] = [{"name": "Bash", "arguments": {"command": f"GH_TOKEN={s['github']} gh pr list"}}]
        lines.append(json.dumps(reply))
    leaky = tmp_path / "leaky_model.jsonl"  # outside the data directory: the test's input, not a stored file
    leaky.write_text("\n".join(lines) + "\n")
    model = f"replay/{leaky}"
    done = toolchoice("run", "--suite", "leaky", "--release", "r-leak", "--models", model, "--data-dir", str(data_dir))
    assert done.returncode == 0, done.stdout + done.stderr
    needles = [*s.values(), s["aws_secret"][5:25], s["github"][8:30]]

    journal = list(sqlite_texts(data_dir / "cache" / "agent_calls.sqlite"))
    journal_calls = [text for table, text in journal if table == "agent_calls"]
    assert any("[REDACTED:aws_access_key_id]" in text for text in journal_calls)  # the replies were journaled
    staged = files(data_dir / "warehouse" / "_staging", "*.parquet")
    published = files(data_dir / "warehouse" / "agent_calls", "*.parquet")
    assert staged and published
    texts = [text for _, text in journal]
    texts += [text for path in staged + published for text in parquet_texts(path)]
    assert any("[REDACTED:" in text for path in published for text in parquet_texts(path))
    leaked = [needle for needle in needles for text in texts if needle in text]
    assert not leaked
    for path in files(data_dir):  # and in no file's raw bytes either
        data = path.read_bytes()
        assert not [n for n in needles if n.encode() in data], path
