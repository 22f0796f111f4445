"""The ``needle/`` provider with a stand-in engine (``fake_needle``: a package named ``needle`` on disk, loaded
in place of the real one): calls go through LiteLLM to the engine with telemetry off, the conversation replayed
the way the package documents, one engine call at a time off the event loop with the wait counted as queued
time, one model object per tool list, the confidence stored with each call (warehouse and journal), and a
missing package or missing weights refused with exit 2 naming the extra.

Real parts: LiteLLM, our call wrapper and runner, the journal (SQLite), the warehouse (Parquet), the CLI."""

from __future__ import annotations

import asyncio
import importlib
import json
from pathlib import Path

import pytest

from toolchoice_pipeline.execution.llm import TOTAL_TIMEOUT_GRACE_S, complete, is_priced
from toolchoice_pipeline.execution.runner import run_suite_sync
from toolchoice_pipeline.providers import needle as provider
from toolchoice_pipeline.providers import register_providers
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.publish import publish_release
from toolchoice_pipeline.releases.warehouse import Warehouse
from toolchoice_pipeline.suites.config import ModelSpec, RetryConfig, RunConfig
from toolchoice_pipeline.suites.suite import Suite, SuiteSpec
from toolchoice_pipeline.suites.tasks import Task
from toolchoice_pipeline_tests import fake_needle
from toolchoice_pipeline_tests.release_helpers import CATALOG

MODEL = "needle/needle-3"
TOOLS = [{"type": "function", "function": d.model_dump(include={"name", "description", "parameters"})} for d in CATALOG]


@pytest.fixture
def engine(tmp_path, monkeypatch):
    """The stand-in package installed for this test, a fresh provider engine, and the imported fake module."""
    fake_needle.install(tmp_path / "pkg", monkeypatch)
    monkeypatch.delenv("NEEDLE_TELEMETRY", raising=False)
    monkeypatch.setattr(provider, "_ENGINE", None)
    register_providers()
    module = provider.load_needle()
    assert module.__file__.startswith(str(tmp_path))  # the stand-in, not an installed package
    return module


def _call(messages, tools=TOOLS, timeout_s=None, **params):
    spec = ModelSpec(model=MODEL, params=params, timeout_s=timeout_s)
    return complete(spec, messages, retries=RetryConfig(), tools=tools)


def test_telemetry_is_off_before_the_package_is_imported(engine):
    assert engine.TELEMETRY_AT_IMPORT == "0"


def test_a_call_reaches_the_engine_and_its_calls_and_confidence_come_back(engine):
    done = asyncio.run(_call([{"role": "system", "content": "repo: demo"}, {"role": "user", "content": "Read a.py"}]))
    call = done.message["tool_calls"][0]["function"]
    assert (call["name"], json.loads(call["arguments"])) == ("Read", {"file_path": "a.py"})
    assert done.confidence == 0.75
    assert done.cost_usd == 0.0 and is_priced(ModelSpec(model=MODEL))
    # the date prefix the package adds by default is off, so a request is the same from minute to minute
    assert engine.CREATED == [("repo: demo", ["Read", "Grep"], None, False)]


def test_no_fitting_tool_gives_a_text_reply_and_withheld_calls_are_not_calls(engine):
    done = asyncio.run(_call([{"role": "user", "content": "sing me a song"}]))
    assert "tool_calls" not in done.message and done.message["content"] == "no tool fits"
    assert done.confidence == 0.125


def test_earlier_turns_and_tool_results_are_replayed_in_order(engine):
    messages = [
        {"role": "system", "content": "facts"},
        {"role": "user", "content": "Read a.py"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "a.py"}'}},
                {"id": "c2", "type": "function", "function": {"name": "Grep", "arguments": '{"pattern": "x"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"lines": 3}'},
        {"role": "tool", "tool_call_id": "c2", "content": "no match"},
        {"role": "user", "content": "now Grep TODO"},
    ]
    done = asyncio.run(_call(messages))
    assert engine.TURNS == [("facts", "Read a.py"), ("facts", '[{"lines": 3}, "no match"]'), ("facts", "now Grep TODO")]
    assert done.message["tool_calls"][0]["function"]["name"] == "Grep"


def test_one_model_object_per_distinct_tool_list(engine):
    async def three():
        await _call([{"role": "user", "content": "Read a.py"}])
        await _call([{"role": "user", "content": "Read b.py"}])
        await _call([{"role": "user", "content": "Grep b"}], tools=TOOLS[1:])

    asyncio.run(three())
    assert [names for _, names, _, _ in engine.CREATED] == [["Read", "Grep"], ["Grep"]]


def test_one_engine_call_at_a_time_and_the_wait_for_it_counts_as_queued(engine):
    engine.DELAY = 0.02
    delay_ms = engine.DELAY * 1000

    async def together():
        return await asyncio.gather(*[_call([{"role": "user", "content": f"Read {i}.py"}]) for i in range(4)])

    done = asyncio.run(together())
    assert engine.MAX_ACTIVE == 1
    for completion in done:
        assert completion.provider_ms is not None
        assert delay_ms <= completion.provider_ms <= completion.latency_ms
        assert completion.queued_ms >= completion.latency_ms - completion.provider_ms - 1e-6
    # the last of four calls waited for at least two others: that wait is queued time, not the model's
    assert max(c.queued_ms for c in done) >= 2 * delay_ms
    assert max(c.provider_ms for c in done) < max(c.latency_ms for c in done)


# The attempt's bound: the timeout plus its grace. The model's own time must pass it to be refused (a floor of
# about TOTAL_TIMEOUT_GRACE_S for these tests, however short the timeout).
TIMEOUT_S = 0.05
BOUND_S = TIMEOUT_S + TOTAL_TIMEOUT_GRACE_S


def test_the_timeout_bounds_the_models_own_time_not_the_wait_for_the_engine_nor_binding_a_tool_list(engine):
    # Binding the tool list alone takes longer than the whole bound, so every later call waits longer than it for
    # the engine; yet each call's own answering time is 0.01 s, far inside the bound, so none is cut.
    engine.BIND_DELAY, engine.DELAY = BOUND_S + 0.05, 0.01

    async def together():
        calls = [_call([{"role": "user", "content": f"Read {i}.py"}], timeout_s=TIMEOUT_S) for i in range(6)]
        return await asyncio.gather(*calls)

    done = asyncio.run(together())
    assert all(c.message["tool_calls"][0]["function"]["name"] == "Read" for c in done)
    assert max(c.queued_ms for c in done) > BOUND_S * 1000  # waited for the engine beyond the whole bound
    assert max(c.provider_ms for c in done) > BOUND_S * 1000  # binding counts as the model's time, not as over time


def test_a_reply_whose_own_time_passes_the_timeout_is_refused_as_timed_out(engine):
    engine.DELAY = BOUND_S + 0.05  # beyond the timeout and its grace of the model's own time
    with pytest.raises(Exception, match=rf"no whole reply within {TIMEOUT_S:g} s") as refused:
        asyncio.run(_call([{"role": "user", "content": "Read a.py"}], timeout_s=TIMEOUT_S))
    assert type(refused.value).__name__ == "Timeout"


def _suite(n: int) -> Suite:
    tasks = [
        Task.model_validate(
            {
                "id": f"t{i}",
                "messages": [{"role": "user", "content": f"Read {i}.py"}],
                "expected": {"tool": "Read", "arguments": {"file_path": f"{i}.py"}},
            }
        )
        for i in range(n)
    ]
    return Suite(
        spec=SuiteSpec(name="needle"), directory=Path("suites") / "needle", curated=CATALOG, live=[], tasks=tasks
    )


def test_the_confidence_is_stored_in_agent_calls_and_kept_by_the_journal(engine, tmp_path):
    suite = _suite(3)
    config = RunConfig.model_validate({"models": [{"model": MODEL}]})
    first = run_suite_sync(suite, config, data_dir=tmp_path, cache_policy="read_write")
    again = run_suite_sync(suite, config, data_dir=tmp_path, cache_policy="read_write")
    steps = [s for e in first for s in e.steps]
    assert [s.confidence for s in steps] == [0.75] * 3 and not any(s.cache_hit for s in steps)
    reused = [s for e in again for s in e.steps]
    assert all(s.cache_hit for s in reused) and [s.confidence for s in reused] == [0.75] * 3

    lineage = Lineage(release_id="r1", suite=suite.name, catalog_version=suite.catalog_version, run_id="run")
    published = publish_release(tmp_path, suite, lineage, "adhoc", first)
    rows = Warehouse(tmp_path).read_table("agent_calls", "r1", ["task_id", "tool_name", "confidence"]).to_pylist()
    assert sorted((r["task_id"], r["tool_name"], r["confidence"]) for r in rows) == [
        (f"t{i}", "Read", 0.75) for i in range(3)
    ]
    assert published.scores.models[MODEL].right_tool_pct == 100.0


def test_other_models_store_no_confidence(tmp_path):
    suite = _suite(2)
    config = RunConfig.model_validate({"models": [{"model": "local/name-match"}]})
    episodes = run_suite_sync(suite, config, data_dir=tmp_path, cache_policy="off")
    lineage = Lineage(release_id="r1", suite=suite.name, catalog_version=suite.catalog_version, run_id="run")
    publish_release(tmp_path, suite, lineage, "adhoc", episodes)
    rows = Warehouse(tmp_path).read_table("agent_calls", "r1", ["confidence"]).to_pylist()
    assert rows and all(r["confidence"] is None for r in rows)


def test_a_missing_package_refuses_the_run_with_exit_2_naming_the_extra(tmp_path, monkeypatch, capsys):
    from toolchoice_pipeline.cli import main
    from toolchoice_pipeline_tests.pipeline_helpers import copy_data

    monkeypatch.setitem(importlib.import_module("sys").modules, "needle", None)  # import needle -> ImportError
    data_dir = copy_data(tmp_path / "data")
    with pytest.raises(SystemExit) as exited:
        main(["run", "--data-dir", str(data_dir), "--models", MODEL, "--no-judge", "--release", "n1"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "agent needle/needle-3" in err and "pip install -e '.[needle]'" in err and "Traceback" not in err


def test_missing_weights_or_engine_are_named(tmp_path, monkeypatch):
    fake_needle.install(tmp_path / "no_weights", monkeypatch, weights=False)
    problem = provider.model_problem(MODEL, {})
    assert problem and "no Needle 3 weights" in problem and "pip install -e '.[needle]'" in problem
    assert "needle_weights" in problem

    weights = tmp_path / "downloaded.cact"
    weights.write_bytes(fake_needle.WEIGHTS_TAG + b"\0" * 8)
    assert provider.model_problem(MODEL, {"needle_weights": str(weights)}) is None
    missing = provider.model_problem(MODEL, {"needle_weights": str(tmp_path / "nowhere.cact")})
    assert missing and "needle_weights: no such file" in missing
    wrong = tmp_path / "other.bin"
    wrong.write_bytes(b"GGUF" + b"\0" * 8)
    assert "not a Needle weights file" in (provider.model_problem(MODEL, {"needle_weights": str(wrong)}) or "")


def test_a_missing_engine_is_named(tmp_path, monkeypatch):
    fake_needle.install(tmp_path / "no_engine", monkeypatch, engine=False)
    problem = provider.model_problem(MODEL, {})
    assert problem and "no Needle 3 engine" in problem and "pip install -e '.[needle]'" in problem


def test_an_unknown_needle_model_is_named():
    assert (
        provider.model_problem("needle/needle-9", {})
        == "needle/needle-9: unknown needle model (known: needle/needle-3)"
    )
