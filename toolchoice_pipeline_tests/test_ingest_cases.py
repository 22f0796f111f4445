"""Every shared ingest case (``cases/ingest_cases.jsonl``) as a test: its lines are written as a Claude Code
session file and ingested through ``toolchoice ingest claude-code``; the reader's turns are checked too where
the case speaks of calls after the first step (which only the reader sees)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolchoice_pipeline.ingest.claude_code import SeenRecords, read_claude_code
from toolchoice_pipeline.ingest.jsonl import Warnings
from toolchoice_pipeline.ingest.turns import ToolLedger
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline.util.sanitise import Sanitiser
from toolchoice_pipeline_tests.conftest import CASES
from toolchoice_pipeline_tests.test_sanitise import assert_no_secret_in_text, assert_no_secret_in_tree, run_cli

INGEST_CASES = {case["id"]: case for case in map(json.loads, (CASES / "ingest_cases.jsonl").read_text().splitlines())}


def test_every_shared_case_has_a_test_here():
    assert set(INGEST_CASES) == {"I01", "I03", "I04", "I05"}


def write_session(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


def read_turns(path: Path):
    return list(
        read_claude_code(
            path,
            shown=path.name,
            file_index=0,
            sanitiser=Sanitiser(),
            ledger=ToolLedger(),
            seen=SeenRecords(),
            warnings=Warnings(),
            max_context_chars=32_000,
        )
    )


def ingest(tmp_path: Path, session: Path, capsys, suite: str = "case") -> tuple[Path, str]:
    data_dir = tmp_path / "data"
    code, out, err = run_cli(
        [
            "ingest",
            "claude-code",
            str(session),
            "--suite",
            suite,
            "--catalog",
            str(CASES / "catalog.json"),
            "--data-dir",
            str(data_dir),
        ],
        capsys,
    )
    assert code == 0, err
    load_suite(data_dir, suite)  # the written suite passes every check load_suite makes
    return data_dir / "suites" / suite, out + err


def stored(suite_dir: Path) -> tuple[list[dict], list[dict]]:
    tasks = [json.loads(line) for line in (suite_dir / "tasks.jsonl").read_text(encoding="utf-8").splitlines()]
    replay = [json.loads(line) for line in (suite_dir / "replay.jsonl").read_text(encoding="utf-8").splitlines()]
    return tasks, replay


def test_I01_one_message_over_two_lines_is_one_turn_with_text_and_call(tmp_path, capsys):
    case = INGEST_CASES["I01"]
    session = write_session(tmp_path / "I01.jsonl", case["lines"])
    want = case["want"]
    suite_dir, _ = ingest(tmp_path, session, capsys)
    tasks, replay = stored(suite_dir)
    assert len(tasks) == want["turns"]
    assert [call["name"] for call in replay[0]["tool_calls"]] == want["turn0_calls"]
    assert replay[0]["content"] == want["turn0_text"]
    assert replay[0]["tool_calls"][0]["arguments"] == {"file_path": "src/server.py"}


def test_I03_compaction_summaries_meta_and_command_lines_are_not_prompts(tmp_path, capsys):
    case = INGEST_CASES["I03"]
    session = write_session(tmp_path / "I03.jsonl", case["lines"])
    suite_dir, _ = ingest(tmp_path, session, capsys)
    tasks, replay = stored(suite_dir)
    assert len(tasks) == case["want"]["turns"]
    assert [task["messages"][-1]["content"] for task in tasks] == case["want"]["prompts"]
    # After the compaction the agent saw only the summary: it replaces the earlier context.
    second = [m["content"] for m in tasks[1]["messages"]]
    assert second == ["This session is being continued from a previous conversation...", "Now run the linter"]
    assert [call["name"] for r in replay for call in r["tool_calls"]] == ["Bash", "Bash"]


def test_I04_secrets_are_redacted_before_anything_is_stored(tmp_path, capsys):
    case = INGEST_CASES["I04"]
    session = write_session(tmp_path / "I04.jsonl", case["lines"])
    suite_dir, output = ingest(tmp_path, session, capsys)
    needles = case["want"]["absent_from_every_stored_table"]
    assert assert_no_secret_in_tree(suite_dir.parent.parent, needles) == 5
    assert_no_secret_in_text(output, needles, "the CLI output")
    tasks, replay = stored(suite_dir)
    assert len(tasks) == case["want"]["turns"]
    assert tasks[0]["messages"][0]["content"] == (
        "Deploy with key [REDACTED:aws_access_key_id] and token [REDACTED:github_token], mail [REDACTED:email]"
    )
    assert "Bearer [REDACTED:anthropic_api_key]" in replay[0]["tool_calls"][0]["arguments"]["command"]


def test_I05_tool_results_as_string_or_blocks_both_parse(tmp_path, capsys):
    case = INGEST_CASES["I05"]
    session = write_session(tmp_path / "I05.jsonl", case["lines"])
    turns = read_turns(session)
    assert len(turns) == case["want"]["turns"]
    assert turns[0].call_names == case["want"]["turn0_calls"]
    suite_dir, _ = ingest(tmp_path, session, capsys)
    tasks, replay = stored(suite_dir)
    assert len(tasks) == case["want"]["turns"]
    assert [call["name"] for call in replay[0]["tool_calls"]] == ["Glob"]  # the first step only
    assert tasks[0]["tool_results"] == {"Glob": "src/a.py\nsrc/b.py"}


def test_I05_kind_both_result_shapes_reach_the_next_turns_context(tmp_path, capsys):
    lines = INGEST_CASES["I05"]["lines"] + [
        {
            "type": "user",
            "uuid": "u4",
            "parentUuid": "u3",
            "sessionId": "s1",
            "message": {"role": "user", "content": "Thanks, now count the imports"},
        },
        {
            "type": "assistant",
            "uuid": "a3",
            "parentUuid": "u4",
            "sessionId": "s1",
            "message": {
                "id": "m3",
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t3",
                        "name": "Grep",
                        "input": {"pattern": "^import", "output_mode": "count"},
                    }
                ],
            },
        },
    ]
    session = write_session(tmp_path / "I05b.jsonl", lines)
    suite_dir, _ = ingest(tmp_path, session, capsys)
    tasks, _ = stored(suite_dir)
    tool_messages = [m for m in tasks[1]["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_messages] == [
        ("t1", "src/a.py\nsrc/b.py"),
        ("t2", "src/a.py:1:import os"),
    ]


@pytest.mark.parametrize("case_id", sorted(INGEST_CASES))
def test_each_case_reads_the_same_through_the_reader(tmp_path, case_id):
    case = INGEST_CASES[case_id]
    turns = read_turns(write_session(tmp_path / f"{case_id}.jsonl", case["lines"]))
    assert len(turns) == case["want"]["turns"]
    if "prompts" in case["want"]:
        assert [turn.prompt for turn in turns] == case["want"]["prompts"]
