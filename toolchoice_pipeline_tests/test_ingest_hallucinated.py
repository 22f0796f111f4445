"""A recorded call to a tool outside the agent's catalog (a hallucinated tool) never fails an ingest: the turn
stays a task whose recorded choice is that call, tagged ``flag:hallucinated_tool``, its canned result dropped
and counted in ``ingest.json``. Every reader, on variants of the real-producer fixtures (see
:mod:`toolchoice_pipeline_tests.hallucinated`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolchoice_pipeline.suites.catalog_files import load_catalog_file
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline.suites.tasks import FLAG_HALLUCINATED_TOOL
from toolchoice_pipeline_tests.hallucinated import claude_code_variant, codex_variant, otel_variant
from toolchoice_pipeline_tests.pipeline_helpers import copy_data, query, toolchoice
from toolchoice_pipeline_tests.test_ingest import CODEX, FASTHOOKS, SPOTTER, first_calls, ingest, stored
from toolchoice_pipeline_tests.test_ingest_otel_producers import FIRST_CALLS, OTEL, PRODUCERS, TOOLS_DUMP

CURATED = Path(__file__).resolve().parents[1] / "data" / "suites" / "coding_agent" / "catalog.yaml"
RESTART_TURN = FIRST_CALLS.index(["restart_service"])


def manifest(data_dir: Path, suite: str = "s") -> dict:
    return json.loads((data_dir / "suites" / suite / "ingest.json").read_text())


def flagged(tasks: list[dict]) -> list[int]:
    return [i for i, task in enumerate(tasks) if FLAG_HALLUCINATED_TOOL in task["tags"]]


@pytest.mark.parametrize("fixture", sorted(f for f, has in PRODUCERS.items() if has))
def test_a_trace_calling_a_tool_outside_its_own_definitions_keeps_the_call_as_the_choice(fixture, tmp_path, capsys):
    traces = otel_variant(OTEL / fixture, tmp_path / "variant")
    code, out, err = ingest(capsys, "otel", traces, tmp_path / "data", catalog=None)
    assert code == 0, err
    tasks, replay = stored(tmp_path / "data")
    calls = [list(c) for c in FIRST_CALLS]
    calls[RESTART_TURN] = ["restart_pod"]
    assert first_calls(replay) == calls  # every turn kept, the hallucinated call as recorded
    assert flagged(tasks) == [RESTART_TURN]
    task = tasks[RESTART_TURN]
    assert "restart_pod" not in {tool["name"] for tool in task["tools"]}
    assert "restart_pod" not in (task["tool_results"] or {})  # the recorded result is dropped...
    assert manifest(tmp_path / "data")["hallucinated"] == {  # ...and counted
        "tasks": 1,
        "calls": 1,
        "tool_results_dropped": 1,
        "tools": ["restart_pod"],
    }
    assert "hallucinated tools: 1 tasks" in out and "restart_pod" in out
    # the later turns' context still shows what the agent did: the call and the application's answer
    later = tasks[RESTART_TURN + 1]["messages"]
    assert any(c["function"]["name"] == "restart_pod" for m in later for c in m.get("tool_calls") or [])
    load_suite(tmp_path / "data", "s")  # the suite passes the suite checks


@pytest.mark.parametrize("fixture", sorted(f for f, has in PRODUCERS.items() if not has))
def test_a_trace_without_definitions_adds_an_answered_tool_to_the_given_catalog(fixture, tmp_path, capsys):
    # Without recorded definitions the given catalog is the agent's as far as we know; a call the application
    # answered shows a tool that was on offer (docs/ingest.md, "Catalogs"), as for session files.
    traces = otel_variant(OTEL / fixture, tmp_path / "variant")
    code, _, err = ingest(
        capsys, "otel", traces, tmp_path / "data", "s", "--catalog-dump", str(TOOLS_DUMP), catalog=None
    )
    assert code == 0, err
    tasks, replay = stored(tmp_path / "data")
    assert first_calls(replay)[RESTART_TURN] == ["restart_pod"]
    catalog = {t.name: t for t in load_catalog_file(tmp_path / "data" / "suites" / "s" / "catalog.yaml")}
    assert catalog["restart_pod"].description == ""
    assert "restarted_instances" in tasks[RESTART_TURN]["tool_results"]["restart_pod"]
    assert flagged(tasks) == [] and manifest(tmp_path / "data")["hallucinated"]["tasks"] == 0


@pytest.mark.parametrize(
    "answer",
    [
        "Unknown tool name: 'restart_pod'. Available tools: 'get_service_status', 'query_logs'",
        "restart_pod is not a valid tool, try one of [get_service_status, query_logs].",
        "Tool restart_pod not found in agent ops",
    ],
)
def test_a_trace_without_definitions_whose_app_refused_the_call_flags_it(answer, tmp_path, capsys):
    traces = otel_variant(OTEL / "openai-v2-2.4b0-span", tmp_path / "variant", answer=answer)
    code, _, err = ingest(
        capsys, "otel", traces, tmp_path / "data", "s", "--catalog-dump", str(TOOLS_DUMP), catalog=None
    )
    assert code == 0, err
    tasks, replay = stored(tmp_path / "data")
    assert first_calls(replay)[RESTART_TURN] == ["restart_pod"]
    catalog = {t.name for t in load_catalog_file(tmp_path / "data" / "suites" / "s" / "catalog.yaml")}
    assert "restart_pod" not in catalog
    assert flagged(tasks) == [RESTART_TURN] and not tasks[RESTART_TURN]["tool_results"]
    assert manifest(tmp_path / "data")["hallucinated"]["tools"] == ["restart_pod"]


@pytest.mark.parametrize(
    "source,make,recorded,old,new",
    [
        ("claude-code", claude_code_variant, SPOTTER, "WebSearch", "SearchWeb"),
        ("claude-code", claude_code_variant, FASTHOOKS, "Read", "ReadFile"),
        ("codex", codex_variant, CODEX, "exec_command", "run_shell"),
    ],
)
def test_a_session_call_refused_as_an_unknown_tool_is_the_flagged_choice(
    source, make, recorded, old, new, tmp_path, capsys
):
    session = make(recorded, tmp_path / recorded.name, old, new)
    code, _, err = ingest(capsys, source, [recorded], tmp_path / "original", catalog=CURATED)
    assert code == 0, err
    original_tasks, original_replay = stored(tmp_path / "original")
    code, out, err = ingest(capsys, source, [session], tmp_path / "data", catalog=CURATED)
    assert code == 0, err
    tasks, replay = stored(tmp_path / "data")
    assert len(tasks) == len(original_tasks)  # no turn, no session lost
    changed = [i for i, (a, b) in enumerate(zip(first_calls(original_replay), first_calls(replay))) if a != b]
    assert len(changed) == 1 and new in first_calls(replay)[changed[0]]
    assert flagged(tasks) == changed
    assert tasks[: changed[0]] == original_tasks[: changed[0]]  # the turns before it are stored as they were
    catalog = {t.name for t in load_catalog_file(tmp_path / "data" / "suites" / "s" / "catalog.yaml")}
    assert new not in catalog  # never on offer: the agent refused it
    assert all(new not in (task["tool_results"] or {}) for task in tasks)
    found = manifest(tmp_path / "data")["hallucinated"]
    assert found["tasks"] == 1 and found["tools"] == [new]
    assert f"({new}; tagged flag:hallucinated_tool)" in out


def test_one_bad_turn_costs_that_turn_only(tmp_path, capsys):
    """A span whose own tool definitions are not valid JSON Schema drops its turn with a warning, not the file."""
    traces = otel_variant(OTEL / "openllmetry-0.62.4", tmp_path / "variant")
    lines = traces[0].read_text().splitlines()
    broken = False
    for number, line in enumerate(lines):
        if '\\"query_logs\\"' in line and '"gen_ai.tool.definitions"' in line and not broken:
            lines[number] = line.replace(
                '\\"since_minutes\\": {\\"type\\": \\"integer\\"', '\\"since_minutes\\": {\\"type\\": \\"int\\"', 1
            )
            broken = lines[number] != line
    assert broken
    traces[0].write_text("\n".join(lines) + "\n")
    code, _, err = ingest(capsys, "otel", traces, tmp_path / "data", catalog=None)
    assert code == 0, err
    tasks, _ = stored(tmp_path / "data")
    assert 0 < len(tasks) < len(FIRST_CALLS) and "no task" in err and "since_minutes" in err


@pytest.mark.slow
def test_run_scores_the_hallucinated_choice_wrong_with_its_name_as_first_tool(tmp_path, capsys):
    data_dir = copy_data(tmp_path / "data")
    traces = otel_variant(OTEL / "openllmetry-0.62.4", tmp_path / "variant")
    code, _, err = ingest(capsys, "otel", traces, data_dir, "otel", catalog=None)
    assert code == 0, err
    tasks, _ = stored(data_dir, "otel")
    hallucinated = tasks[RESTART_TURN]["id"]
    done = toolchoice("run", "--suite", "otel", "--release", "h-1", "--data-dir", str(data_dir))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {
        task_id: (first_tool, tsq, flags)
        for task_id, first_tool, tsq, flags in query(
            data_dir, "SELECT task_id, first_tool, tsq, flags FROM task_scores"
        )
    }
    first_tool, tsq, flags = rows[hallucinated]
    assert first_tool == "restart_pod" and tsq == 0.0 and "hallucinated_tool" in flags
    assert all("hallucinated_tool" not in row[2] for task_id, row in rows.items() if task_id != hallucinated)
