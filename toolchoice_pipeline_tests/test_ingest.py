"""``toolchoice ingest``: the real transcripts with their turn counts, the canary session, every fault kind of
Claude Code files, Codex rollouts, OpenTelemetry traces, catalogs, labels, and bad input (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from toolchoice_pipeline.ingest.claude_code import SeenRecords, read_claude_code
from toolchoice_pipeline.ingest.codex import read_codex
from toolchoice_pipeline.ingest.conversation import NO_RESULT
from toolchoice_pipeline.ingest.jsonl import Warnings
from toolchoice_pipeline.ingest.turns import ToolLedger
from toolchoice_pipeline.suites.catalog import catalog_version
from toolchoice_pipeline.suites.catalog_files import load_catalog_file
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline.util.sanitise import Sanitiser
from toolchoice_pipeline_tests.conftest import CASES, DATA
from toolchoice_pipeline_tests.test_sanitise import run_cli

TRANSCRIPTS = Path(__file__).resolve().parent / "data" / "transcripts"
FASTHOOKS = TRANSCRIPTS / "claude_code" / "fasthooks_sample_main_transcript.jsonl"
SPOTTER = TRANSCRIPTS / "claude_code" / "spotter_tool_heavy.jsonl"
CODEX = TRANSCRIPTS / "codex" / "rollout_synthetic_daaain.jsonl"
OTEL = Path(__file__).resolve().parent / "data" / "ingest" / "otel_genai_traces.jsonl"
CATALOG = CASES / "catalog.json"


# --- helpers ---------------------------------------------------------------------------------------------


def ingest(
    capsys,
    source: str,
    files: list[Path],
    data_dir: Path,
    suite: str = "s",
    *extra: str,
    catalog: Path | None = CATALOG,
) -> tuple[int, str, str]:
    args = ["ingest", source, *map(str, files), "--suite", suite, "--data-dir", str(data_dir), *extra]
    if catalog is not None:
        args += ["--catalog", str(catalog)]
    return run_cli(args, capsys)


def stored(data_dir: Path, suite: str = "s") -> tuple[list[dict], list[dict]]:
    directory = data_dir / "suites" / suite
    tasks = [json.loads(line) for line in (directory / "tasks.jsonl").read_text(encoding="utf-8").splitlines()]
    replay = [json.loads(line) for line in (directory / "replay.jsonl").read_text(encoding="utf-8").splitlines()]
    return tasks, replay


def first_calls(replay: list[dict]) -> list[list[str]]:
    return [[call["name"] for call in line["tool_calls"]] for line in replay]


def read_turns(path: Path, warnings: Warnings | None = None, **kwargs):
    return list(
        read_claude_code(
            path,
            shown=path.name,
            file_index=0,
            sanitiser=Sanitiser(),
            ledger=ToolLedger(),
            seen=SeenRecords(),
            warnings=warnings or Warnings(),
            max_context_chars=kwargs.get("max_context_chars", 32_000),
        )
    )


def write_lines(path: Path, lines: list) -> Path:
    text = "".join((line if isinstance(line, str) else json.dumps(line, ensure_ascii=False)) + "\n" for line in lines)
    path.write_text(text, encoding="utf-8")
    return path


SESSION = "0a1b2c3d-1111-4222-8333-444455556666"


def user(uuid: str, parent: str | None, content, **extra) -> dict:
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SESSION,
        "cwd": "/repo",
        "message": {"role": "user", "content": content},
        **extra,
    }


def assistant(uuid: str, parent: str | None, message_id: str, blocks: list[dict], **extra) -> dict:
    return {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SESSION,
        "cwd": "/repo",
        "message": {"id": message_id, "role": "assistant", "content": blocks},
        **extra,
    }


def tool_use(call_id: str, name: str, **arguments) -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def tool_result(call_id: str, content) -> list[dict]:
    return [{"type": "tool_result", "tool_use_id": call_id, "content": content}]


def three_turns() -> list[dict]:
    return [
        user("u1", None, "list the files"),
        assistant("a1", "u1", "m1", [tool_use("t1", "Glob", pattern="*")]),
        user("r1", "a1", tool_result("t1", "a.py\nb.py")),
        assistant("a1b", "r1", "m1b", [{"type": "text", "text": "Two files."}]),
        user("u2", "a1b", "read a.py"),
        assistant("a2", "u2", "m2", [tool_use("t2", "Read", file_path="a.py")]),
        user("r2", "a2", tool_result("t2", "print(1)")),
        user("u3", "r2", "run it"),
        assistant("a3", "u3", "m3", [tool_use("t3", "Bash", command="python a.py")]),
    ]


# --- the real transcripts --------------------------------------------------------------------------------


def test_fasthooks_session_has_five_turns(tmp_path, capsys):
    # Real prompts are on lines 2, 10, 19, 27 and 35. Not prompts: the tool_result carriers (5, 14, 22, 30, 40,
    # 42, 47-49, 53), the compaction summary (60, isCompactSummary), the caveat (61, isMeta), the /compact command
    # (62, <command-name>) and its output (63, <local-command-stdout>). Lines 1, 8, 9, 13, 17... are bookkeeping.
    turns = read_turns(FASTHOOKS)
    assert len(turns) == 5
    assert [turn.prompt for turn in turns][:2] == [
        "can you run a command ls -la",
        "ok can you create a hello_world.py file and add a minimal code in it?",
    ]
    # Turn 4: one message (9xxTLt8Y) written over lines 36-38 (thinking, Write, Write), then Read/Bash/Bash, Bash.
    assert turns[4].call_names == ["Write", "Write", "Read", "Bash", "Bash", "Bash"]
    code, out, err = ingest(capsys, "claude-code", [FASTHOOKS], tmp_path / "data")
    assert code == 0, err
    tasks, replay = stored(tmp_path / "data")
    assert len(tasks) == 5
    assert first_calls(replay) == [["Bash"], ["Write"], ["Read"], ["Bash"], ["Write", "Write"]]
    assert [t["id"] for t in tasks] == [f"c45af7b1-t{i}" for i in range(5)]
    # Thinking blocks are left out; the context of turn 1 is turn 0 with its call and result.
    assert [m["role"] for m in tasks[1]["messages"]] == ["user", "assistant", "tool", "assistant", "user"]
    assert "thinking" not in (tmp_path / "data" / "suites" / "s" / "tasks.jsonl").read_text()
    load_suite(tmp_path / "data", "s")


def test_spotter_session_has_two_turns(tmp_path, capsys):
    # Real prompts are on lines 4 and 26. Not prompts: "[Request interrupted by user]" (18, 39), the caveat (20,
    # isMeta), the /mcp command (21) and its output (22), tool results (11, 17, 32, 33, 36, 38); the file opens
    # with file-history-snapshot and progress lines and has queue-operation lines.
    turns = read_turns(SPOTTER)
    assert len(turns) == 2
    assert turns[0].prompt == "start phoenix in background"
    # Message BN5jdsym is written as Read (34), its result (36), then WebFetch (37): merged, in order.
    assert turns[1].call_names == ["WebSearch", "Glob", "Read", "WebFetch"]
    code, _, err = ingest(capsys, "claude-code", [SPOTTER], tmp_path / "data")
    assert code == 0, err
    tasks, replay = stored(tmp_path / "data")
    assert len(tasks) == 2
    assert first_calls(replay) == [["Bash"], ["WebSearch", "Glob"]]
    # The interruption marker and the slash-command lines are in no stored context.
    text = (tmp_path / "data" / "suites" / "s" / "tasks.jsonl").read_text()
    assert "Request interrupted" not in text and "<command-name>" not in text


def test_codex_rollout_has_one_turn_and_unknown_tools_get_minimal_definitions(tmp_path, capsys):
    # One real prompt: the response_item user message on line 4 (the event_msg on line 3 repeats it for the UI).
    warnings = Warnings()
    turns = list(
        read_codex(
            CODEX,
            shown=CODEX.name,
            sanitiser=Sanitiser(),
            ledger=ToolLedger(),
            warnings=warnings,
            max_context_chars=32_000,
        )
    )
    assert len(turns) == 1
    assert turns[0].call_names == ["exec_command", "apply_patch", "mcp__synthetic__lookup"]
    assert warnings.items == [f"{CODEX.name}:14: line skipped: unknown line type 'future_synthetic_record'"]
    code, out, err = ingest(capsys, "codex", [CODEX], tmp_path / "data")
    assert code == 0, err
    assert "unknown line type 'future_synthetic_record'" in err and ":14:" in err
    tasks, replay = stored(tmp_path / "data")
    assert [t["id"] for t in tasks] == ["11111111-t0"]
    assert replay[0]["tool_calls"] == [{"name": "exec_command", "arguments": {"cmd": "find . -maxdepth 1 -type f"}}]
    catalog = {t.name: t for t in load_catalog_file(tmp_path / "data" / "suites" / "s" / "catalog.yaml")}
    assert catalog["exec_command"].description == ""
    assert catalog["exec_command"].parameters == {"type": "object", "properties": {"cmd": {}}}
    assert catalog["apply_patch"].parameters["properties"] == {"input": {}}
    assert "added for called tools: apply_patch, exec_command, mcp__synthetic__lookup" in out
    assert "SYNTHETIC_ENCRYPTED_CONTENT" not in (tmp_path / "data" / "suites" / "s" / "tasks.jsonl").read_text()


def test_canary_session_ingests_into_four_labelled_tasks(tmp_path, capsys):
    data_dir = tmp_path / "data"
    shutil.copytree(DATA / "suites" / "coding_agent", data_dir / "suites" / "coding_agent")
    from toolchoice_pipeline.ingest.canary import PACKAGED_CANARY

    code, out, err = ingest(
        capsys,
        "claude-code",
        [PACKAGED_CANARY / "canary.jsonl"],
        data_dir,
        "canary",
        "--labels",
        str(PACKAGED_CANARY / "canary.labels.jsonl"),
        catalog=None,
    )
    assert code == 0, err
    tasks, replay = stored(data_dir, "canary")
    assert [t["expected"]["tool"] for t in tasks] == ["Read", "Bash", "Bash", "Glob"]
    assert first_calls(replay) == [["Read"], ["WebSearch"], ["Read"], ["WebSearch"]]
    suite = load_suite(data_dir, "canary")
    assert suite.spec.models == ["replay/suites/canary/replay.jsonl"]
    assert suite.catalog_version == catalog_version(
        load_catalog_file(DATA / "suites" / "coding_agent" / "catalog.yaml")
    )
    assert "4 tasks (4 labelled)" in out


# --- fault kinds of Claude Code files --------------------------------------------------------------------


def test_truncated_and_malformed_lines_are_skipped_with_file_and_line_and_the_rest_kept(tmp_path, capsys):
    lines = [json.dumps(line) for line in three_turns()]
    lines.insert(3, lines[3][: len(lines[3]) // 2])  # a write cut off mid-line, now line 4
    lines.insert(6, "not json at all")  # line 7
    lines.insert(8, "[1, 2, 3]")  # line 9
    session = write_lines(tmp_path / "broken.jsonl", lines)
    code, _, err = ingest(capsys, "claude-code", [session], tmp_path / "data")
    assert code == 0, err
    assert "broken.jsonl:4: line skipped: not valid JSON" in err
    assert "broken.jsonl:7: line skipped: not valid JSON" in err
    assert "broken.jsonl:9: line skipped: not a JSON object" in err
    tasks, replay = stored(tmp_path / "data")
    assert first_calls(replay) == [["Glob"], ["Read"], ["Bash"]]


def test_line_separators_inside_strings_do_not_split_lines(tmp_path):
    text = "first part\u2028second part\u2029third\x85fourth\x0cfifth"
    session = write_lines(
        tmp_path / "u2028.jsonl",
        [user("u1", None, text), assistant("a1", "u1", "m1", [tool_use("t1", "Grep", pattern="a\u2028b")])],
    )
    turns = read_turns(session)
    assert len(turns) == 1
    assert turns[0].prompt == text
    assert turns[0].first_step.calls[0].arguments == {"pattern": "a\u2028b"}


def test_duplicated_uuids_are_read_once(tmp_path):
    lines = three_turns()
    lines.insert(2, lines[1])  # the assistant record written twice
    lines.insert(0, lines[0])  # the first prompt written twice
    warnings = Warnings()
    turns = read_turns(write_lines(tmp_path / "dups.jsonl", lines), warnings)
    assert len(turns) == 3
    assert turns[0].call_names == ["Glob"]
    assert [m["role"] for m in turns[1].messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert warnings.items == ["dups.jsonl: 2 records with a uuid already read were skipped"]


def test_a_session_copied_into_a_resumed_file_joins_the_context_but_opens_no_turn(tmp_path, capsys):
    lines = three_turns()
    first = write_lines(tmp_path / "first.jsonl", lines[:7])
    resumed = [dict(line, sessionId="9f9f9f9f-0000-4000-8000-000000000000") for line in lines]
    second = write_lines(tmp_path / "second.jsonl", resumed)
    code, _, err = ingest(capsys, "claude-code", [first, second], tmp_path / "data")
    assert code == 0, err
    tasks, _ = stored(tmp_path / "data")
    assert [t["id"] for t in tasks] == ["0a1b2c3d-t0", "0a1b2c3d-t1", "9f9f9f9f-t0"]
    assert tasks[2]["messages"][-1]["content"] == "run it"
    assert [m["content"] for m in tasks[2]["messages"] if m["role"] == "user"] == [
        "list the files",
        "read a.py",
        "run it",
    ]


def test_bookkeeping_lines_before_the_first_prompt_are_skipped(tmp_path):
    head = [
        {"type": "summary", "summary": "Listing files", "leafUuid": "a3"},
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {"trackedFileBackups": {}}},
        {"type": "queue-operation", "operation": "enqueue", "content": "list the files"},
        {"type": "progress", "uuid": "p1", "parentUuid": None, "data": {"type": "hook_progress"}},
        {"type": "system", "subtype": "local_command", "uuid": "s1", "content": "<command-name>/model</command-name>"},
    ]
    turns = read_turns(write_lines(tmp_path / "head.jsonl", head + three_turns()))
    assert [t.prompt for t in turns] == ["list the files", "read a.py", "run it"]


def test_a_broken_parent_chain_falls_back_to_file_order(tmp_path):
    lines = three_turns()
    lines[4]["parentUuid"] = "missing-1"  # "read a.py"
    lines[7]["parentUuid"] = "missing-2"  # "run it"
    warnings = Warnings()
    turns = read_turns(write_lines(tmp_path / "chain.jsonl", lines), warnings)
    assert [t.prompt for t in turns] == ["list the files", "read a.py", "run it"]
    assert [m["content"] for m in turns[2].messages if m["role"] == "user"] == ["list the files", "read a.py", "run it"]
    assert warnings.items == ["chain.jsonl: 2 prompts name a parentUuid not in the file: file order followed"]


def test_a_prompt_edited_by_the_user_rewinds_the_context_to_its_branch_point(tmp_path):
    lines = three_turns()[:7] + [
        user("u2b", "a1b", "read b.py instead"),  # branches from the same point as "read a.py"
        assistant("a2b", "u2b", "m2b", [tool_use("t2b", "Read", file_path="b.py")]),
    ]
    turns = read_turns(write_lines(tmp_path / "fork.jsonl", lines))
    assert [t.prompt for t in turns] == ["list the files", "read a.py", "read b.py instead"]
    assert [m["content"] for m in turns[2].messages if m["role"] == "user"] == ["list the files", "read b.py instead"]
    assert [m["content"] for m in turns[1].messages if m["role"] == "user"] == ["list the files", "read a.py"]


def test_meta_command_shell_and_interruption_lines_are_not_prompts(tmp_path):
    lines = (
        three_turns()[:4]
        + [
            user(
                "x1",
                "a1b",
                "Caveat: The messages below were generated by the user while running local commands.",
                isMeta=True,
            ),
            user("x2", "x1", "<command-name>/cost</command-name>\n<command-message>cost</command-message>"),
            user("x3", "x2", "<local-command-stdout>Total cost: $0.01</local-command-stdout>"),
            user("x4", "x3", "<bash-input>ls</bash-input>"),
            user("x5", "x4", [{"type": "text", "text": "[Request interrupted by user for tool use]"}]),
            user("x6", "x5", "expanded skill text", isMeta=True),
        ]
        + three_turns()[4:]
    )
    turns = read_turns(write_lines(tmp_path / "meta.jsonl", lines))
    assert [t.prompt for t in turns] == ["list the files", "read a.py", "run it"]
    assert not any("cost" in str(m.get("content")) for m in turns[2].messages)


def test_sidechain_records_stay_out_of_the_main_turns(tmp_path):
    lines = three_turns()
    sidechain = [
        user("s1", "a1", "Search the code for TODOs", isSidechain=True),
        assistant("s2", "s1", "ms", [tool_use("st", "Grep", pattern="TODO")], isSidechain=True),
    ]
    turns = read_turns(write_lines(tmp_path / "side.jsonl", lines[:2] + sidechain + lines[2:]))
    assert [t.prompt for t in turns] == ["list the files", "read a.py", "run it"]
    assert turns[0].call_names == ["Glob"]
    assert "TODO" not in json.dumps(turns[2].messages)


def test_a_subagent_file_is_read_as_its_own_turns_linked_by_agent_id(tmp_path, capsys):
    main = write_lines(
        tmp_path / f"{SESSION}.jsonl",
        three_turns()[:3]
        + [
            assistant(
                "a1c",
                "r1",
                "m1c",
                [
                    tool_use(
                        "task1",
                        "Task",
                        description="find TODOs",
                        prompt="Search the code for TODOs",
                        subagent_type="Explore",
                    )
                ],
            )
        ],
    )
    agent = "a7f3c9e2d41b"
    (tmp_path / "subagents").mkdir()
    sub = write_lines(
        tmp_path / "subagents" / f"agent-{agent}.jsonl",
        [
            user("s1", None, "Search the code for TODOs", isSidechain=True, agentId=agent),
            assistant("s2", "s1", "ms", [tool_use("st", "Grep", pattern="TODO")], isSidechain=True, agentId=agent),
            user("s3", "s2", tool_result("st", "a.py:3: # TODO"), isSidechain=True, agentId=agent),
        ],
    )
    code, _, err = ingest(capsys, "claude-code", [main, sub], tmp_path / "data")
    assert code == 0, err
    tasks, replay = stored(tmp_path / "data")
    assert [t["id"] for t in tasks] == ["0a1b2c3d-t0", f"0a1b2c3d-{agent[:8]}-t0"]
    assert tasks[1]["tags"] == ["claude-code", "subagent", "catalog:file"]
    assert first_calls(replay) == [["Glob"], ["Grep"]]
    manifest = json.loads((tmp_path / "data" / "suites" / "s" / "ingest.json").read_text())
    assert [(s["session"], s["agent"]) for s in manifest["sessions"]] == [(SESSION, None), (SESSION, agent)]


def test_a_turn_without_a_recorded_reply_is_counted_but_makes_no_task(tmp_path, capsys):
    session = write_lines(tmp_path / "noreply.jsonl", three_turns() + [user("u4", "a3", "and then?")])
    code, _, err = ingest(capsys, "claude-code", [session], tmp_path / "data")
    assert code == 0
    assert "noreply.jsonl:10: turn 3 has no recorded reply: no task" in err
    tasks, _ = stored(tmp_path / "data")
    assert len(tasks) == 3


def test_calls_without_a_recorded_result_get_a_placeholder_so_the_context_is_valid(tmp_path):
    lines = [
        user("u1", None, "check"),
        assistant("a1", "u1", "m1", [tool_use("t1", "Bash", command="make"), tool_use("t2", "Bash", command="ls")]),
        user("r1", "a1", tool_result("t2", "Makefile")),
        user("u2", "r1", "go on"),
        assistant("a2", "u2", "m2", [tool_use("t3", "Read", file_path="Makefile")]),
    ]
    turns = read_turns(write_lines(tmp_path / "missing.jsonl", lines))
    tools = [(m["tool_call_id"], m["content"]) for m in turns[1].messages if m["role"] == "tool"]
    assert tools == [("t2", "Makefile"), ("t1", NO_RESULT)]


# --- limits ------------------------------------------------------------------------------------------------


def test_huge_tool_results_are_truncated_to_the_configured_size(tmp_path, capsys):
    lines = three_turns()
    lines[2] = user("r1", "a1", tool_result("t1", "\n".join(f"file_{i:05d}.py" for i in range(2000))))
    session = write_lines(tmp_path / "big.jsonl", lines)
    code, _, err = ingest(capsys, "claude-code", [session], tmp_path / "data", "s", "--max-tool-result-bytes", "300")
    assert code == 0, err
    tasks, _ = stored(tmp_path / "data")
    result = next(m["content"] for m in tasks[1]["messages"] if m["role"] == "tool")
    assert "[TRUNCATED: " in result and len(result.encode()) <= 300 + 40
    assert result.startswith("file_00000.py") and result.endswith("file_01999.py")
    assert tasks[0]["tool_results"]["Glob"] == result


def test_the_context_before_each_prompt_stays_within_its_budget(tmp_path):
    lines = []
    parent = None
    for i in range(60):
        lines += [
            user(f"u{i}", parent, f"step {i}: " + "x" * 200),
            assistant(f"a{i}", f"u{i}", f"m{i}", [tool_use(f"t{i}", "Bash", command=f"echo {i}")]),
            user(f"r{i}", f"a{i}", tool_result(f"t{i}", "y" * 300)),
        ]
        parent = f"r{i}"
    turns = read_turns(write_lines(tmp_path / "long.jsonl", lines), max_context_chars=2000)
    assert len(turns) == 60
    last = turns[-1].messages
    assert last[0]["content"].endswith("earlier messages of this session are left out]")
    assert sum(len(json.dumps(m)) for m in last) < 4000
    offered = {call["id"] for m in last if m["role"] == "assistant" for call in m.get("tool_calls", [])}
    assert all(m["tool_call_id"] in offered for m in last if m["role"] == "tool")


# --- catalogs ----------------------------------------------------------------------------------------------


def test_the_catalog_is_a_snapshot_with_live_dumps_merged_under_the_curated_one(tmp_path, capsys):
    curated = tmp_path / "catalog.json"
    shutil.copy(CATALOG, curated)
    dump = tmp_path / "mcp.json"
    dump.write_text(
        json.dumps(
            {
                "tools": [
                    {"name": "Read", "description": "live Read", "inputSchema": {"type": "object"}},
                    {"name": "mcp__db__query", "description": "Run SQL", "inputSchema": {"type": "object"}},
                ]
            }
        )
    )
    session = write_lines(tmp_path / "s.jsonl", three_turns())
    code, _, err = ingest(
        capsys, "claude-code", [session], tmp_path / "data", "s", "--catalog-dump", str(dump), catalog=curated
    )
    assert code == 0, err
    snapshot = tmp_path / "data" / "suites" / "s" / "catalog.yaml"
    tools = {t.name: t for t in load_catalog_file(snapshot)}
    assert tools["Read"].description.startswith("Show the contents of one local file")
    assert "mcp__db__query" in tools and len(tools) == 11
    before = snapshot.read_bytes()
    curated.write_text(json.dumps([{"name": "Read", "description": "changed", "parameters": {"type": "object"}}]))
    assert snapshot.read_bytes() == before


def test_the_demo_suite_catalog_is_the_default_and_its_absence_is_a_clear_error(tmp_path, capsys):
    session = write_lines(tmp_path / "s.jsonl", three_turns())
    code, _, err = ingest(capsys, "claude-code", [session], tmp_path / "data", catalog=None)
    assert code == 2
    assert "suites/coding_agent/catalog.yaml: --catalog: session files do not record the tools on offer" in err
    shutil.copytree(DATA / "suites" / "coding_agent", tmp_path / "data" / "suites" / "coding_agent")
    code, _, err = ingest(capsys, "claude-code", [session], tmp_path / "data", catalog=None)
    assert code == 0, err
    assert (tmp_path / "data" / "suites" / "s" / "catalog.yaml").read_text() == yaml.safe_dump(
        yaml.safe_load((DATA / "suites" / "coding_agent" / "catalog.yaml").read_text()),
        sort_keys=False,
        allow_unicode=True,
        width=110,
    )


def test_a_tool_every_call_to_which_was_refused_is_not_added_to_the_catalog(tmp_path, capsys):
    lines = [
        user("u1", None, "open it"),
        assistant("a1", "u1", "m1", [tool_use("t1", "OpenFile", path="a.py")]),
        user(
            "r1",
            "a1",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "is_error": True,
                    "content": "<tool_use_error>Error: No such tool available: OpenFile</tool_use_error>",
                }
            ],
        ),
        assistant("a2", "r1", "m2", [tool_use("t2", "mcp__notes__add", text="hi")]),
        user("r2", "a2", tool_result("t2", "added")),
    ]
    code, out, err = ingest(capsys, "claude-code", [write_lines(tmp_path / "s.jsonl", lines)], tmp_path / "data")
    assert code == 0, err
    names = {t.name for t in load_catalog_file(tmp_path / "data" / "suites" / "s" / "catalog.yaml")}
    assert "mcp__notes__add" in names and "OpenFile" not in names
    tasks, replay = stored(tmp_path / "data")
    assert first_calls(replay) == [["OpenFile"]] and tasks[0]["tool_results"] is None


# --- re-ingesting, stable ids ------------------------------------------------------------------------------


def test_reingesting_is_refused_without_force_and_replaces_the_suite_with_it(tmp_path, capsys):
    data_dir = tmp_path / "data"
    session = write_lines(tmp_path / "s.jsonl", three_turns())
    assert ingest(capsys, "claude-code", [session], data_dir)[0] == 0
    first = {p.name: p.read_bytes() for p in (data_dir / "suites" / "s").iterdir()}
    code, _, err = ingest(capsys, "claude-code", [FASTHOOKS], data_dir)
    assert code == 2 and "suite 's' exists; pass --force to replace it" in err
    assert {p.name: p.read_bytes() for p in (data_dir / "suites" / "s").iterdir()} == first
    assert ingest(capsys, "claude-code", [session], data_dir, "s", "--force")[0] == 0
    assert {p.name: p.read_bytes() for p in (data_dir / "suites" / "s").iterdir()} == first  # stable output
    assert ingest(capsys, "claude-code", [FASTHOOKS], data_dir, "s", "--force")[0] == 0
    assert len(stored(data_dir)[0]) == 5
    assert not (data_dir / ".ingest-tmp").exists()


# --- labels ------------------------------------------------------------------------------------------------


def test_labels_fill_expected_and_session_may_be_left_out_for_one_file(tmp_path, capsys):
    labels = write_lines(
        tmp_path / "labels.jsonl",
        [
            {"turn": 1, "expected": {"tool": "Read", "arguments": {"file_path": "a.py"}}},
            {"turn": 2, "expected": {"tool": "Bash", "arguments": {"command": {"regex": "python"}}}},
        ],
    )
    session = write_lines(tmp_path / "s.jsonl", three_turns())
    code, out, err = ingest(capsys, "claude-code", [session], tmp_path / "data", "s", "--labels", str(labels))
    assert code == 0, err
    tasks, _ = stored(tmp_path / "data")
    assert [t["expected"] for t in tasks] == [
        None,
        {"tool": "Read", "arguments": {"file_path": "a.py"}},
        {"tool": "Bash", "arguments": {"command": {"regex": "python"}}},
    ]
    assert "3 tasks (2 labelled)" in out


@pytest.mark.parametrize(
    "label, where",
    [
        (
            {"session": SESSION, "turn": 7, "expected": {"tool": "Read"}},
            "labels.jsonl:2: turn: no turn 7: the session has 3 turns (0 to 2)",
        ),
        (
            {"session": "nope", "turn": 0, "expected": {"tool": "Read"}},
            "labels.jsonl:2: session: no ingested session 'nope'",
        ),
        ({"turn": 0, "expected": {"tool": "Teleport"}}, "labels.jsonl:2: expected.tool: tool 'Teleport' is not in"),
        (
            {"turn": 0, "expected": {"tool": "Read", "arguments": {"path": "a.py"}}},
            "labels.jsonl:2: expected.arguments.path: key argument 'path' is not a parameter of tool 'Read'",
        ),
        ({"turn": 0, "expectd": {"tool": "Read"}}, "labels.jsonl:2: expectd: unknown field"),
    ],
)
def test_bad_labels_are_input_errors_naming_file_line_and_field_and_nothing_is_written(tmp_path, capsys, label, where):
    labels = write_lines(tmp_path / "labels.jsonl", [{"turn": 1, "expected": {"tool": "Read"}}, label])
    session = write_lines(tmp_path / "s.jsonl", three_turns())
    code, out, err = ingest(capsys, "claude-code", [session], tmp_path / "data", "s", "--labels", str(labels))
    assert code == 2
    assert where in err
    assert not (tmp_path / "data" / "suites" / "s").exists()
    assert not (tmp_path / "data" / ".ingest-tmp").exists()


# --- bad input ---------------------------------------------------------------------------------------------


def test_a_missing_file_is_an_input_error_and_nothing_is_read(tmp_path, capsys):
    session = write_lines(tmp_path / "s.jsonl", three_turns())
    code, _, err = ingest(capsys, "claude-code", [session, tmp_path / "nope.jsonl"], tmp_path / "data")
    assert code == 2
    assert err.strip() == f"error: {tmp_path / 'nope.jsonl'}: file not found"
    assert not (tmp_path / "data").exists()


def test_a_file_that_is_not_json_lines_is_an_input_error(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("# Notes\n\nThis is not a transcript.\n")
    code, _, err = ingest(capsys, "claude-code", [readme], tmp_path / "data")
    assert code == 2
    assert f"error: {readme}:1: not a JSON Lines file: no line holds a JSON object" in err
    assert not (tmp_path / "data" / "suites" / "s").exists()
    binary = tmp_path / "blob.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage\n\x89PNG\r\n")
    code, _, err = ingest(capsys, "codex", [binary], tmp_path / "data")
    assert code == 2 and f"{binary}:1: not a JSON Lines file" in err


def test_a_session_without_any_prompt_is_an_input_error(tmp_path, capsys):
    session = write_lines(tmp_path / "empty.jsonl", [{"type": "file-history-snapshot", "messageId": "x"}])
    code, _, err = ingest(capsys, "claude-code", [session], tmp_path / "data")
    assert code == 2 and "no user prompt with a recorded reply found" in err


def test_an_invalid_suite_name_is_an_input_error(tmp_path, capsys):
    session = write_lines(tmp_path / "s.jsonl", three_turns())
    code, _, err = ingest(capsys, "claude-code", [session], tmp_path / "data", "../escape")
    assert code == 2 and "--suite: '../escape' is not a valid suite name" in err


# --- OpenTelemetry -----------------------------------------------------------------------------------------


def test_otel_traces_give_one_task_per_prompt_with_the_catalog_they_carried(tmp_path, capsys):
    # Three prompts: the Paris conversation's two chat spans whose input ends with a user message (the invoke_agent
    # span, the execute_tool span and the chat span answering a tool result are not first steps), and the
    # Pydantic AI dice game.
    code, out, err = ingest(capsys, "otel", [OTEL], tmp_path / "data", catalog=None)
    assert code == 0, err
    tasks, replay = stored(tmp_path / "data")
    assert [t["id"] for t in tasks] == ["conv-par-t0", "5b8aa5a2-t0", "conv-par-t1"]
    assert first_calls(replay) == [["get_weather"], ["roll_dice"], ["search_flights"]]
    assert replay[2]["content"] == "Let me look for flights first."
    assert [t["name"] for t in tasks[0]["tools"]] == ["get_weather", "search_flights", "send_email"]
    assert [t["name"] for t in tasks[1]["tools"]] == ["roll_dice", "get_player_name"]
    assert tasks[0]["messages"][0] == {
        "role": "system",
        "content": "You are a travel assistant. Use the tools to answer; never invent flight numbers.",
    }
    # The second prompt's span recorded its content in structured form; its context holds the first exchange.
    roles = [m["role"] for m in tasks[2]["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert tasks[2]["messages"][-1]["content"].endswith("mail the options to [REDACTED:email]")
    catalog = {t.name for t in load_catalog_file(tmp_path / "data" / "suites" / "s" / "catalog.yaml")}
    assert catalog == {"get_weather", "search_flights", "send_email", "roll_dice", "get_player_name"}
    load_suite(tmp_path / "data", "s")


def test_otel_a_pretty_printed_single_export_is_read_too(tmp_path, capsys):
    request = json.loads(OTEL.read_text().splitlines()[1])
    pretty = tmp_path / "trace.json"
    pretty.write_text(json.dumps(request, indent=2))
    code, _, err = ingest(capsys, "otel", [pretty], tmp_path / "data", catalog=None)
    assert code == 0, err
    assert first_calls(stored(tmp_path / "data")[1]) == [["roll_dice"]]


def test_otel_spans_without_tool_definitions_are_refused_until_a_catalog_is_given(tmp_path, capsys):
    request = json.loads(OTEL.read_text().splitlines()[1])
    span = request["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
    span["attributes"] = [kv for kv in span["attributes"] if kv["key"] != "model_request_parameters"]
    trace = write_lines(tmp_path / "trace.jsonl", [request])
    code, _, err = ingest(capsys, "otel", [trace], tmp_path / "data", catalog=None)
    assert code == 2 and "cannot be known: it records no tool definitions" in err and "--catalog" in err
    code, out, err = ingest(capsys, "otel", [trace], tmp_path / "data")
    assert code == 0, err
    tasks, _ = stored(tmp_path / "data")
    assert tasks[0]["tools"] is None and tasks[0]["tags"] == ["otel", "catalog:file"]
    assert "added for called tools: roll_dice" in out


def test_cli_help_lists_the_three_sources(capsys):
    code, out, _ = run_cli(["ingest", "--help"], capsys)
    assert code == 0
    assert all(name in out for name in ("claude-code", "codex", "otel"))
