"""``toolchoice ingest otel`` on OTLP JSON exported by the real instrumentation libraries (see
``scripts/otel_fixtures/``; versions in ``data/otel/SOURCES.md``): every producer's ops-agent run becomes the
same 8 tasks with the same first calls, and each fault (no catalog, content capture off, cut attributes,
retry prompts, several sessions, concatenated documents, one tool name defined twice) is handled."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from toolchoice_pipeline.suites.catalog_files import load_catalog_file
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline_tests.conftest import DATA
from toolchoice_pipeline_tests.test_ingest import first_calls, ingest, stored

OTEL = Path(__file__).resolve().parent / "data" / "otel"
TOOLS_DUMP = OTEL / "ops_agent_tools.json"  # the agent's 4 tools, as a live dump (OpenAI tools format)
SYSTEM = "You are an on-call assistant for a small web shop. Use the tools to inspect and act on services."
PROMPTS = [
    "Is the checkout service healthy right now?",
    "Show me the error logs for checkout from the last 30 minutes.",
    "Restart checkout please.",
    "Thanks, that's all for the restart.",
    "Give me a one-line incident summary.",
    "Now page the payments team with it.",
    "What's the status of the search service?",
    "Page the search on-call: search latency is high.",
]
FIRST_CALLS = [
    ["get_service_status"],
    ["query_logs"],
    ["restart_service"],
    [],
    [],
    ["page_oncall"],
    ["get_service_status"],
    ["page_oncall"],
]
TOOL_NAMES = {"get_service_status", "query_logs", "restart_service", "page_oncall"}
# fixture -> True when its trace records the tool definitions
PRODUCERS = {
    "openai-v2-2.1b0": False,  # per-message log events; no definitions
    "openai-v2-2.4b0": False,  # one gen_ai.client.inference.operation.details log event per call
    "openai-v2-2.4b0-span": False,  # GenAI span attributes
    "openllmetry-0.47.5": True,  # gen_ai.prompt.N.* and llm.request.functions.N.*
    "openllmetry-0.62.4": True,  # GenAI span attributes with gen_ai.tool.definitions
    "openlit-1.45.0": True,  # span attributes, definitions only in the log event
    "pydantic-ai-0.8.1": True,  # the `events` span attribute, model_request_parameters
    "pydantic-ai-2.68.0": True,  # GenAI span attributes, a framework retry before the structured answer
    "langtrace-3.8.21": True,  # gen_ai.content.prompt / .completion span events, gen_ai.request.tools
}


def files(fixture: str) -> list[Path]:
    return sorted((OTEL / fixture).glob("*.jsonl"))


def run(capsys, fixture_files: list[Path], data_dir: Path, *extra: str) -> tuple[int, str, str]:
    return ingest(capsys, "otel", fixture_files, data_dir, "s", *extra, catalog=None)


def ingested(capsys, tmp_path: Path, fixture: str) -> tuple[list[dict], list[dict]]:
    extra = () if PRODUCERS[fixture] else ("--catalog-dump", str(TOOLS_DUMP))
    code, _, err = run(capsys, files(fixture), tmp_path / "data", *extra)
    assert code == 0, err
    return stored(tmp_path / "data")


@pytest.fixture(scope="module")
def ingested_once(tmp_path_factory):
    """``ingested_once(capsys, fixture)``: the directory holding the ``data/`` a producer's fixture was ingested
    into by :func:`ingested`, once for the module: the tests taking it only read the suite written."""
    done: dict[str, Path] = {}

    def ingested_once(capsys, fixture: str) -> Path:
        if fixture not in done:
            root = tmp_path_factory.mktemp(fixture)
            ingested(capsys, root, fixture)
            done[fixture] = root
        return done[fixture]

    return ingested_once


@pytest.mark.parametrize("fixture", sorted(PRODUCERS))
def test_every_producer_gives_the_eight_prompts_with_their_first_calls(fixture, ingested_once, capsys):
    root = ingested_once(capsys, fixture)
    tasks, replay = stored(root / "data")
    assert [t["messages"][-1]["content"] for t in tasks] == PROMPTS
    assert first_calls(replay) == FIRST_CALLS
    assert replay[1]["tool_calls"][0]["arguments"] == {
        "service": "checkout",
        "query": "level:error",
        "since_minutes": 30,
    }
    load_suite(root / "data", "s")


@pytest.mark.parametrize("fixture", sorted(PRODUCERS))
def test_every_producer_keeps_the_system_message_and_feeds_tool_results_back(fixture, ingested_once, capsys):
    tasks, _ = stored(ingested_once(capsys, fixture) / "data")
    for task in tasks:  # (Pydantic AI 2.x adds instructions of its own after ours)
        assert task["messages"][0]["role"] == "system" and task["messages"][0]["content"].startswith(SYSTEM)
        assert task["messages"][0]["content"].count(SYSTEM) == 1
        assert not any(SYSTEM in str(m.get("content")) for m in task["messages"][1:])
    assert "degraded" in tasks[0]["tool_results"]["get_service_status"]
    assert "INC-1042" in tasks[7]["tool_results"]["page_oncall"]
    # the second prompt's context holds the first exchange: the call and its recorded result (not "null")
    roles = [m["role"] for m in tasks[1]["messages"]]
    assert roles[:4] == ["system", "user", "assistant", "tool"]
    assert "degraded" in tasks[1]["messages"][3]["content"]


@pytest.mark.parametrize("fixture", sorted(f for f, has in PRODUCERS.items() if has))
def test_a_trace_with_definitions_is_graded_against_its_own_catalog(fixture, ingested_once, capsys):
    root = ingested_once(capsys, fixture)
    tasks, _ = stored(root / "data")
    for task in tasks:
        assert TOOL_NAMES <= {tool["name"] for tool in task["tools"]}
        assert "catalog:trace" in task["tags"]
    status = next(tool for tool in tasks[0]["tools"] if tool["name"] == "get_service_status")
    assert status["description"].startswith("Current health of one service")
    manifest = json.loads((root / "data" / "suites" / "s" / "ingest.json").read_text())
    assert manifest["catalog"]["task_catalog_sources"] == {"trace": 8}


@pytest.mark.parametrize("fixture", sorted(f for f, has in PRODUCERS.items() if not has))
def test_a_trace_without_definitions_is_refused_unless_a_catalog_is_given_or_chosen(fixture, tmp_path, capsys):
    code, _, err = run(capsys, files(fixture), tmp_path / "data")
    assert code == 2
    assert "cannot be known: it records no tool definitions" in err
    assert "--catalog FILE" in err and "--catalog-dump FILE" in err and "--catalog-from curated" in err
    assert not (tmp_path / "data" / "suites" / "s").exists()

    code, _, err = run(capsys, files(fixture), tmp_path / "data", "--catalog-dump", str(TOOLS_DUMP))
    assert code == 0, err
    tasks, _ = stored(tmp_path / "data")
    assert all(t["tools"] is None and "catalog:live-dump" in t["tags"] for t in tasks)
    catalog = {t.name for t in load_catalog_file(tmp_path / "data" / "suites" / "s" / "catalog.yaml")}
    assert catalog == TOOL_NAMES

    code, _, err = run(capsys, files(fixture), tmp_path / "data2", "--catalog-from", "curated")
    assert code == 2 and "suites/coding_agent/catalog.yaml" in err  # chosen, but this data dir has none


def test_the_curated_catalog_is_used_only_when_chosen(tmp_path, capsys):
    data = tmp_path / "data"
    (data / "suites").mkdir(parents=True)
    shutil.copytree(DATA / "suites" / "coding_agent", data / "suites" / "coding_agent")
    code, _, err = run(capsys, files("openai-v2-2.4b0"), data)
    assert code == 2 and "--catalog-from curated" in err
    code, _, err = run(capsys, files("openai-v2-2.4b0"), data, "--catalog-from", "curated")
    assert code == 0, err
    tasks, _ = stored(data)
    assert all("catalog:curated" in t["tags"] for t in tasks)
    manifest = json.loads((data / "suites" / "s" / "ingest.json").read_text())
    assert manifest["catalog"]["task_catalog_sources"] == {"curated": 8}
    assert manifest["sessions"][0]["catalog_sources"] == {"curated": 6}


@pytest.mark.parametrize(
    "fixture,setting",
    [
        ("openai-v2-2.1b0-no-content", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"),
        ("openai-v2-2.4b0-no-content", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"),
        ("openllmetry-0.62.4-no-content", "TRACELOOP_TRACE_CONTENT"),
        ("openlit-1.45.0-no-content", "capture_message_content"),
        ("pydantic-ai-0.8.1-no-content", "include_content"),
        ("pydantic-ai-2.68.0-no-content", "include_content"),
        ("langtrace-3.8.21-no-content", "TRACE_PROMPT_COMPLETION_DATA"),
    ],
)
def test_content_capture_off_is_one_error_naming_the_setting(fixture, setting, tmp_path, capsys):
    code, out, err = run(capsys, files(fixture), tmp_path / "data", "--catalog-dump", str(TOOLS_DUMP))
    assert code == 2, out
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "without their message content" in lines[0] and setting in lines[0]
    assert "Traceback" not in err


def test_the_event_form_needs_its_log_file_and_says_so(tmp_path, capsys):
    traces = OTEL / "openai-v2-2.4b0" / "traces.jsonl"
    code, _, err = run(capsys, [traces], tmp_path / "data", "--catalog-dump", str(TOOLS_DUMP))
    assert code == 2 and "log records" in err


@pytest.mark.parametrize("fixture", ["openllmetry-0.62.4-truncated", "pydantic-ai-2.68.0-truncated"])
def test_definitions_cut_by_the_attribute_length_limit_are_named(fixture, tmp_path, capsys):
    code, _, err = run(capsys, files(fixture), tmp_path / "data")
    assert code == 2
    assert "cut by an attribute length limit" in err and "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT" in err
    assert "characters)" in err


@pytest.mark.parametrize("fixture", ["pydantic-ai-0.8.1", "pydantic-ai-2.68.0"])
def test_a_framework_retry_is_no_turn_and_the_follow_up_after_the_structured_answer_is_kept(
    fixture, ingested_once, capsys
):
    tasks, replay = stored(ingested_once(capsys, fixture) / "data")
    assert [t["id"].rsplit("-", 1)[1] for t in tasks] == ["t0", "t1", "t2", "t3", "t4", "t5", "t0", "t1"]
    follow_up = tasks[5]["messages"]
    retries = [m for m in follow_up if m.get("name") == "framework_retry"]
    assert len(retries) == 1 and retries[0]["role"] == "user"
    structured = [c for m in follow_up for c in m.get("tool_calls") or [] if c["function"]["name"] == "final_result"]
    assert len(structured) == 1
    assert replay[5]["tool_calls"][0]["arguments"]["team"] == "payments"


@pytest.mark.parametrize("fixture", ["openllmetry-0.62.4", "openai-v2-2.4b0"])  # one file; traces and logs
def test_a_label_without_session_is_refused_when_the_files_hold_several_sessions(fixture, tmp_path, capsys):
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"turn": 0, "expected": {"tool": "get_service_status"}}) + "\n")
    code, _, err = run(
        capsys, files(fixture), tmp_path / "data", "--labels", str(labels), "--catalog-dump", str(TOOLS_DUMP)
    )
    assert code == 2 and "labels.jsonl:1: session: required: the ingested files hold 2 sessions" in err


def test_a_label_without_session_names_the_turn_of_the_only_session(tmp_path, capsys):
    source = files("openllmetry-0.62.4")[0]
    request = json.loads(source.read_text().splitlines()[0])
    first_trace = request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    for resource in request["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            scope["spans"] = [span for span in scope["spans"] if span["traceId"] == first_trace]
    one = tmp_path / "one_session.jsonl"
    one.write_text(json.dumps(request) + "\n")
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"turn": 2, "expected": {"tool": "restart_service"}}) + "\n")
    code, _, err = run(capsys, [one], tmp_path / "data", "--labels", str(labels))
    assert code == 0, err
    tasks, _ = stored(tmp_path / "data")
    assert [t["expected"] is not None for t in tasks] == [False, False, True, False, False, False]


def test_a_label_with_session_is_used_when_the_file_holds_several_sessions(tmp_path, capsys):
    labels = tmp_path / "labels.jsonl"
    fixture = files("openllmetry-0.62.4")
    ingested(capsys, tmp_path / "first", "openllmetry-0.62.4")
    session = json.loads((tmp_path / "first" / "data" / "suites" / "s" / "ingest.json").read_text())["sessions"][0]
    labels.write_text(
        json.dumps({"session": session["session"], "turn": 0, "expected": {"tool": "get_service_status"}}) + "\n"
    )
    code, out, err = run(capsys, fixture, tmp_path / "data", "--labels", str(labels))
    assert code == 0, err
    assert "(1 labelled)" in out


def test_concatenated_pretty_printed_documents_give_the_same_suite(tmp_path, capsys):
    source = files("openllmetry-0.62.4")[0]
    documents = []
    for line in source.read_text().splitlines():  # one document per span, each pretty-printed
        request = json.loads(line)
        for resource in request["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    documents.append({"resourceSpans": [{**resource, "scopeSpans": [{**scope, "spans": [span]}]}]})
    pretty = tmp_path / "pretty.json"
    pretty.write_text("".join(json.dumps(document, indent=2) + "\n" for document in documents))
    assert len(documents) > 10
    code, _, err = run(capsys, [pretty], tmp_path / "pretty")
    assert code == 0, err
    expected_code, _, err = run(capsys, [source], tmp_path / "lines")
    assert expected_code == 0, err
    assert stored(tmp_path / "pretty") == stored(tmp_path / "lines")


def test_a_tool_defined_differently_by_two_agents_keeps_each_definition_per_task(tmp_path, capsys):
    # Pydantic AI's schemas (additionalProperties: false) differ from the OpenAI client's for the same names.
    code, _, err = run(capsys, files("openllmetry-0.62.4") + files("pydantic-ai-2.68.0"), tmp_path / "data")
    assert code == 0, err
    assert "is defined differently by two traces" in err
    tasks, _ = stored(tmp_path / "data")
    manifest = json.loads((tmp_path / "data" / "suites" / "s" / "ingest.json").read_text())
    assert "get_service_status" in manifest["catalog"]["conflicts"]
    schemas = {
        json.dumps(next(t for t in task["tools"] if t["name"] == "get_service_status")["parameters"], sort_keys=True)
        for task in tasks
    }
    assert len(schemas) == 2


def test_a_cut_pretty_printed_document_is_one_error_naming_its_line(tmp_path, capsys):
    request = json.loads(files("openllmetry-0.62.4")[0].read_text().splitlines()[0])
    text = json.dumps(request, indent=2)
    broken = tmp_path / "cut.json"
    broken.write_text(text + "\n" + text[: len(text) // 2])
    code, _, err = run(capsys, [broken], tmp_path / "data")
    first_line_of_second = text.count("\n") + 2
    assert code == 2 and err.startswith(f"error: {broken}:") and "not OTLP JSON" in err
    assert int(err.split(":")[2]) >= first_line_of_second
    assert "Traceback" not in err and not (tmp_path / "data" / "suites" / "s").exists()


def test_a_pretty_printed_document_that_is_not_an_otlp_export_is_named(tmp_path, capsys):
    request = json.loads(files("openllmetry-0.62.4")[0].read_text().splitlines()[0])
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps(request, indent=2) + "\n" + json.dumps({"spans": []}, indent=2) + "\n")
    code, _, err = run(capsys, [mixed], tmp_path / "data")
    assert code == 2 and "resourceSpans: not an OTLP JSON trace or logs export" in err
