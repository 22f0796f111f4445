"""Held-out checks of the ingest, on recordings and secrets built here, in shapes the project's fixtures lack.

- Secrets (:mod:`.heldout_secrets`: 45 service and file formats plus prose in 10 languages and a base64-wrapped
  ``.env`` and two secrets split across lines, none named by the sanitiser's rules or ``secret_kinds.py``) planted in the prompts, tool inputs
  and tool results of a Claude Code session, a Codex rollout and an OTel trace (:mod:`.heldout_recordings`),
  ingested with ``toolchoice ingest``: no piece of 8 characters of any survives in any file the ingest wrote.
- Recorded calls the catalog does not know (:mod:`.heldout_recordings`): a tool outside the trace's own
  definitions, a name differing from a catalog tool only in case, malformed JSON arguments, in the current
  attribute form of the GenAI conventions and in Semantic Kernel's span events (``gen_ai.event.content``):
  the ingest keeps every turn and the recorded choice, and flags the hallucinated ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline.suites.tasks import FLAG_HALLUCINATED_TOOL
from toolchoice_pipeline.util.sanitise import Sanitiser
from toolchoice_pipeline_tests.heldout_recordings import (
    OPS_TOOLS,
    claude_code_session,
    codex_rollout,
    otel_attributes_trace,
    otel_events_trace,
)
from toolchoice_pipeline_tests.heldout_secrets import (
    HELD_OUT_SHAPES,
    PROSE_FORMS,
    SPLIT_FORMS,
    HeldOut,
    held_out,
    survivor,
)
from toolchoice_pipeline_tests.test_ingest import first_calls, ingest, stored

REPO = Path(__file__).resolve().parents[1]
DEMO_CATALOG = REPO / "data" / "suites" / "coding_agent" / "catalog.yaml"


def ops_catalog(path: Path) -> Path:
    path.write_text(json.dumps([{k: v for k, v in t.items() if k != "type"} for t in OPS_TOOLS]), encoding="utf-8")
    return path


def flags(tasks: list[dict]) -> list[bool]:
    return [FLAG_HALLUCINATED_TOOL in task["tags"] for task in tasks]


# --- secrets -------------------------------------------------------------------------------------------------


def test_the_held_out_set_is_wide_and_every_value_is_fresh():
    items = held_out(3)
    assert len(items) == len(HELD_OUT_SHAPES) + len(PROSE_FORMS) + len(SPLIT_FORMS) >= 57
    assert len({item.kind for item in items}) == len(items)
    again = held_out(4)
    assert all(a.values != b.values for a, b in zip(items, again))  # drawn at run time, never a literal


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_held_out_secret_survives_the_sanitiser(seed):
    leaked = {}
    for item in held_out(seed):
        out = Sanitiser().text(item.text)
        piece = survivor(item, out)
        if piece:
            leaked[item.kind] = out
    assert leaked == {}


def test_the_survivor_check_can_fail():
    item = held_out(0)[0]
    assert survivor(item, item.text) is not None


def _turns(items: list[HeldOut], tool: str, argument: str) -> list[tuple[str, list, list]]:
    """Three turns: the secrets in the prompt, in a call's arguments, and in the call's result."""
    third = len(items) // 3
    prompt_items, call_items, result_items = items[:third], items[third : 2 * third], items[2 * third :]
    return [
        (
            "Please check the deploy. Notes:\n" + "\n".join(i.text for i in prompt_items),
            [(tool, {argument: "x"})],
            ["ok"],
        ),
        ("Apply the config", [(tool, {argument: "\n".join(i.text for i in call_items)})], ["done"]),
        ("Show me the env", [(tool, {argument: "cat .env"})], ["\n".join(i.text for i in result_items)]),
        ("And once more, check it", [(tool, {argument: "true"})], ["ok"]),
    ]


def _survivors(items: list[HeldOut], data_dir: Path) -> dict[str, str]:
    found = {}
    for path in sorted(p for p in data_dir.rglob("*") if p.is_file()):
        text = path.read_bytes().decode("utf-8", errors="replace")
        decoded = json.loads(json.dumps(text))  # the files hold JSON-escaped text: look at both forms
        for item in items:
            for form in {text, decoded.encode().decode("unicode_escape", errors="replace")}:
                piece = survivor(item, form)
                if piece:
                    found[item.kind] = f"{path.relative_to(data_dir)}: {piece}"
    return found


@pytest.mark.parametrize("source", ["claude-code", "codex", "otel"])
def test_no_held_out_secret_survives_the_ingest(source, tmp_path, capsys):
    items = held_out(11)
    if source == "claude-code":
        recording = claude_code_session(tmp_path / "in" / "s.jsonl", _turns(items, "Bash", "command"))
        extra, catalog = (), DEMO_CATALOG
    elif source == "codex":
        recording = codex_rollout(tmp_path / "in" / "s.jsonl", _turns(items, "shell", "command"))
        extra, catalog = (), DEMO_CATALOG
    else:
        recording = otel_attributes_trace(tmp_path / "in" / "t.jsonl", _turns(items, "query_logs", "text"))
        extra, catalog = (), None
    code, out, err = ingest(capsys, source, [recording], tmp_path / "data", "s", *extra, catalog=catalog)
    assert code == 0, err
    tasks, _ = stored(tmp_path / "data")
    assert len(tasks) == 4
    assert _survivors(items, tmp_path / "data") == {}
    assert _survivors(items, tmp_path / "in")  # the planted files hold them: the scan can find them
    for item in items[:3]:
        assert item.values[0] not in out + err


# --- hallucinated and malformed calls --------------------------------------------------------------------------


def test_a_call_to_a_tool_outside_the_trace_definitions_is_kept_and_flagged(tmp_path, capsys):
    turns = [
        ("Is checkout healthy?", [("get_service_status", {"service": "checkout"})], ["healthy"]),
        ("Restart checkout", [("restart_service", {"service": "checkout"})], ["restarted"]),
        ("Errors in the payments logs?", [("query_logs", {"service": "payments", "text": "error"})], ["none"]),
    ]
    trace = otel_attributes_trace(tmp_path / "t.jsonl", turns)
    code, _, err = ingest(capsys, "otel", [trace], tmp_path / "data", catalog=None)
    assert code == 0, err
    tasks, replay = stored(tmp_path / "data")
    assert first_calls(replay) == [["get_service_status"], ["restart_service"], ["query_logs"]]
    assert flags(tasks) == [False, True, False]
    load_suite(tmp_path / "data", "s")


def test_a_call_differing_from_a_defined_tool_only_in_case_is_hallucinated(tmp_path, capsys):
    turns = [
        ("Is checkout healthy?", [("Get_Service_Status", {"service": "checkout"})], ["healthy"]),
        ("Errors in the payments logs?", [("query_logs", {"service": "payments", "text": "error"})], ["none"]),
    ]
    trace = otel_attributes_trace(tmp_path / "t.jsonl", turns)
    code, _, err = ingest(capsys, "otel", [trace], tmp_path / "data", catalog=None)
    assert code == 0, err
    tasks, replay = stored(tmp_path / "data")
    assert first_calls(replay) == [["Get_Service_Status"], ["query_logs"]]
    assert flags(tasks) == [True, False]


def test_a_session_call_miscased_against_the_given_catalog_adds_no_second_tool(tmp_path, capsys):
    # Sessions record no definitions: an answered call of an unknown tool is added to the catalog, but "bash"
    # beside the catalog's "Bash" is the same tool miscased (a provider refuses it), so it stays hallucinated.
    turns = [
        ("Run the tests", [("bash", {"command": "pytest -q"})], ["3 passed"]),
        ("Show me app.py", [("Read", {"file_path": "/work/app/app.py"})], ["print(1)"]),
    ]
    session = claude_code_session(tmp_path / "s.jsonl", turns)
    code, _, err = ingest(capsys, "claude-code", [session], tmp_path / "data", catalog=DEMO_CATALOG)
    assert code == 0, err
    tasks, replay = stored(tmp_path / "data")
    assert first_calls(replay) == [["bash"], ["Read"]]
    assert flags(tasks) == [True, False]
    suite = load_suite(tmp_path / "data", "s")
    assert "bash" not in {tool.name for tool in suite.catalog}


@pytest.mark.parametrize("builder", ["codex", "otel_attributes", "otel_events"])
def test_malformed_call_arguments_keep_the_turn_and_the_recorded_text(builder, tmp_path, capsys):
    broken = '{"service": "checkout'
    turns = [
        ("Is checkout healthy?", [("get_service_status", broken)], ["healthy"]),
        ("Errors in the payments logs?", [("query_logs", {"service": "payments", "text": "error"})], ["none"]),
    ]
    if builder == "codex":
        recording = codex_rollout(tmp_path / "r.jsonl", turns)
        code, _, err = ingest(capsys, "codex", [recording], tmp_path / "data", catalog=ops_catalog(tmp_path / "c.json"))
    elif builder == "otel_attributes":
        recording = otel_attributes_trace(tmp_path / "t.jsonl", turns)
        code, _, err = ingest(capsys, "otel", [recording], tmp_path / "data", catalog=None)
    else:
        recording = otel_events_trace(tmp_path / "t.jsonl", turns)
        code, _, err = ingest(capsys, "otel", [recording], tmp_path / "data", catalog=ops_catalog(tmp_path / "c.json"))
    assert code == 0, err
    tasks, replay = stored(tmp_path / "data")
    assert len(tasks) == 2
    assert replay[0]["tool_calls"] == [{"name": "get_service_status", "arguments": broken}]
    assert first_calls(replay)[1] == ["query_logs"]


def test_semantic_kernel_span_events_are_read(tmp_path, capsys):
    # Semantic Kernel writes each message event's content as JSON text in ``gen_ai.event.content``.
    turns = [
        ("Is checkout healthy?", [("get_service_status", {"service": "checkout"})], ["healthy"]),
        ("Restart checkout", [("restart_pod", {"pod": "checkout-1"})], ["restarted"]),
    ]
    trace = otel_events_trace(tmp_path / "t.jsonl", turns)
    code, _, err = ingest(capsys, "otel", [trace], tmp_path / "data", catalog=ops_catalog(tmp_path / "c.json"))
    assert code == 0, err
    tasks, replay = stored(tmp_path / "data")
    assert first_calls(replay) == [["get_service_status"], ["restart_pod"]]
    assert tasks[0]["messages"][-1] == {"role": "user", "content": "Is checkout healthy?"}


def test_two_unknown_names_differing_only_in_case_add_one_tool(tmp_path, capsys):
    # Codex rollouts record no definitions: "shell" called twice and "Shell" once are one tool, miscased once.
    turns = [
        ("List the files", [("Shell", {"command": ["ls"]})], ["a.py"]),
        ("Run the tests", [("shell", {"command": ["pytest"]})], ["3 passed"]),
        ("Show git status", [("shell", {"command": ["git", "status"]})], ["clean"]),
    ]
    rollout = codex_rollout(tmp_path / "r.jsonl", turns)
    code, _, err = ingest(capsys, "codex", [rollout], tmp_path / "data", catalog=DEMO_CATALOG)
    assert code == 0, err
    tasks, replay = stored(tmp_path / "data")
    assert first_calls(replay) == [["Shell"], ["shell"], ["shell"]]
    assert flags(tasks) == [True, False, False]
    names = [tool.name for tool in load_suite(tmp_path / "data", "s").catalog]
    assert "shell" in names and "Shell" not in names
