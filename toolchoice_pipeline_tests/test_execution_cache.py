"""The call journal as a cache: read_write, write_only (with resume), off; errors never cached; keys."""

from __future__ import annotations

import asyncio
import sqlite3

import litellm

from toolchoice_pipeline.execution.journal import (
    CallJournal,
    JournaledCall,
    _add_missing_columns,
    key_params,
    request_key,
)
from toolchoice_pipeline.execution.runner import run_suite_sync
from toolchoice_pipeline.suites.config import RunConfig
from toolchoice_pipeline_tests.execution_support import CATALOG, call, numbered_tasks, register_scripted, write_suite


def config(models=("scripted/m",), **extra):
    data = {"models": list(models), "retries": {"max_attempts": 1}}
    data.update(extra)
    return RunConfig.model_validate(data)


def two_steps(model, messages, tools, metadata):
    if messages[-1]["role"] == "tool":
        return {"role": "assistant", "content": "Done."}
    return {"role": "assistant", "content": None, "tool_calls": [call("Glob", {"pattern": "*.py"}, "g")]}


def comparable(episodes):
    return [
        (
            e.model,
            e.task_id,
            e.error,
            [
                (s.step, s.reply, s.prompt_tokens, s.completion_tokens, s.cost_usd, s.latency_ms, s.request_key)
                for s in e.steps
            ],
        )
        for e in episodes
    ]


def test_read_write_rerun_makes_no_provider_call_and_keeps_the_original_figures(tmp_path):
    suite = write_suite(tmp_path, numbered_tasks(5))
    handler = register_scripted(two_steps)
    first = run_suite_sync(suite, config(), data_dir=tmp_path)
    assert len(handler.requests) == 10 and not any(s.cache_hit for e in first for s in e.steps)
    second = run_suite_sync(suite, config(), data_dir=tmp_path)
    assert len(handler.requests) == 10
    assert all(s.cache_hit for e in second for s in e.steps)
    assert comparable(second) == comparable(first)


def test_write_only_always_asks_the_provider_but_records(tmp_path):
    suite = write_suite(tmp_path, numbered_tasks(3))
    handler = register_scripted(two_steps)
    run_suite_sync(suite, config(), data_dir=tmp_path, cache_policy="write_only")
    again = run_suite_sync(suite, config(), data_dir=tmp_path, cache_policy="write_only")
    assert len(handler.requests) == 12
    assert not any(s.cache_hit for e in again for s in e.steps)
    run_suite_sync(suite, config(), data_dir=tmp_path)  # read_write now finds what write_only recorded
    assert len(handler.requests) == 12


def test_write_only_resumes_only_its_own_run(tmp_path):
    suite = write_suite(tmp_path, numbered_tasks(3))
    handler = register_scripted(two_steps)
    run_suite_sync(suite, config(), data_dir=tmp_path, cache_policy="write_only", resume_key="nightly-1")
    run_suite_sync(suite, config(), data_dir=tmp_path, cache_policy="write_only", resume_key="nightly-1")
    assert len(handler.requests) == 6
    run_suite_sync(suite, config(), data_dir=tmp_path, cache_policy="write_only", resume_key="nightly-2")
    assert len(handler.requests) == 12


def test_off_neither_reads_nor_writes(tmp_path):
    suite = write_suite(tmp_path, numbered_tasks(2))
    handler = register_scripted(two_steps)
    cfg = config(cache={"policy": "off"})
    run_suite_sync(suite, cfg, data_dir=tmp_path)
    run_suite_sync(suite, cfg, data_dir=tmp_path)
    assert len(handler.requests) == 8
    assert not (tmp_path / cfg.cache.path).exists()


def test_errors_are_never_cached(tmp_path):
    suite = write_suite(tmp_path, numbered_tasks(3))
    broken = {"t001"}

    def script(model, messages, tools, metadata):
        if metadata["task_id"] in broken:
            raise litellm.BadRequestError(message="try later", llm_provider="scripted", model=model)
        return two_steps(model, messages, tools, metadata)

    handler = register_scripted(script)
    first = run_suite_sync(suite, config(), data_dir=tmp_path)
    assert [e.error is None for e in first] == [True, False, True]
    broken.clear()
    second = run_suite_sync(suite, config(), data_dir=tmp_path)
    assert all(e.error is None for e in second)
    retried = [r["metadata"]["task_id"] for r in handler.requests[5:]]
    assert retried == ["t001", "t001"]
    rows = sqlite3.connect(tmp_path / config().cache.path).execute("SELECT COUNT(*) FROM agent_calls").fetchone()
    assert rows == (6,)


def test_a_changed_tool_description_is_a_new_request(tmp_path):
    suite = write_suite(tmp_path, numbered_tasks(2))
    handler = register_scripted(two_steps)
    run_suite_sync(suite, config(), data_dir=tmp_path)
    changed = [dict(tool) for tool in CATALOG]
    changed[0]["description"] = "Read a text file (any encoding)."
    suite = write_suite(tmp_path, numbered_tasks(2), catalog=changed)
    episodes = run_suite_sync(suite, config(), data_dir=tmp_path)
    assert len(handler.requests) == 8
    assert not any(s.cache_hit for e in episodes for s in e.steps)


def test_models_and_parameters_are_part_of_the_key_but_secrets_are_not():
    base = dict(fingerprint=None, task_id="t", step=0, messages=[{"role": "user", "content": "x"}], tools_digest="d")
    key = request_key(model="a/m", params=key_params({"temperature": 0}), **base)
    assert key != request_key(model="b/m", params=key_params({"temperature": 0}), **base)
    assert key != request_key(model="a/m", params=key_params({"temperature": 1}), **base)
    assert key != request_key(model="a/m", params=key_params({"temperature": 0}), **{**base, "step": 1})
    assert key == request_key(model="a/m", params=key_params({"temperature": 0, "api_key": "sk-secret"}), **base)
    assert "api_key" not in key_params({"api_key": "sk-secret", "top_p": 1})


def test_the_journal_stores_no_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-very-secret-value-1234")
    suite = write_suite(tmp_path, numbered_tasks(2))
    register_scripted(two_steps)
    run_suite_sync(suite, config(), data_dir=tmp_path)
    raw = (tmp_path / config().cache.path).read_bytes()
    assert b"sk-very-secret-value-1234" not in raw
    assert b"Glob" in raw  # the file holds the replies (so the check above looked at real content)


def test_a_rerun_keeps_the_provider_and_queued_time_of_the_calls_it_reuses(tmp_path):
    # Found on the 3.11/3.13 new-user pass: the p50 ms column (provider time) went from 9.5 to 67.7 on an
    # unchanged re-run, because the journal kept only the client's latency and a reused step fell back to it.
    # The sim provider reports its own time (10 ms here), as our in-process providers do.
    suite = write_suite(tmp_path, numbered_tasks(4))
    sim = config(models=[{"model": "sim/m", "params": {"sim_latency_ms": 10, "sim_seed": 1}}])
    first = run_suite_sync(suite, sim, data_dir=tmp_path)
    second = run_suite_sync(suite, sim, data_dir=tmp_path)
    split = [[(s.provider_ms, s.queued_ms, s.latency_ms) for s in e.steps] for e in first]
    assert all(provider is not None and provider >= 10.0 for steps in split for provider, _, _ in steps)
    assert all(s.cache_hit for e in second for s in e.steps)
    assert [[(s.provider_ms, s.queued_ms, s.latency_ms) for s in e.steps] for e in second] == split
    assert [e.provider_ms for e in second] == [e.provider_ms for e in first]


def test_a_journal_written_before_the_split_was_kept_gets_its_columns_and_still_serves(tmp_path):
    path = tmp_path / "agent_calls.sqlite"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE agent_calls (request_key TEXT PRIMARY KEY, model TEXT NOT NULL, task_id TEXT NOT NULL, "
        "step INTEGER NOT NULL, message_json TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens "
        "INTEGER NOT NULL, cost_usd REAL NOT NULL, latency_ms REAL NOT NULL, attempts INTEGER NOT NULL, "
        "resume_key TEXT, created_at REAL NOT NULL)"
    )
    old.execute("INSERT INTO agent_calls VALUES ('k1','m','t',0,'{\"content\": \"hi\"}',3,4,0.5,12.5,1,NULL,0)")
    old.commit()
    old.close()
    journal = CallJournal(path, "read_write")
    # a second process that read the old schema before the first added the columns: its ALTER finds them there
    _add_missing_columns_as_if_unseen(path)
    assert journal.lookup("k1") == JournaledCall({"content": "hi"}, 3, 4, 0.5, 12.5, 1, provider_ms=None)
    call = JournaledCall({"content": "yo"}, 1, 2, 0.0, 9.0, provider_ms=7.0, queued_ms=2.0)
    journal.record("k2", model="m", task_id="t", step=0, call=call)
    assert CallJournal(path, "read_write").lookup("k2") == call


def _add_missing_columns_as_if_unseen(path):
    """Run the upgrade as a process that saw the old schema would: every ALTER meets a column already added."""
    conn = sqlite3.connect(path)
    real = conn.execute

    class SawOldSchema:
        def execute(self, sql, *args):
            return iter([]) if sql.startswith("PRAGMA table_info") else real(sql, *args)

    _add_missing_columns(SawOldSchema())
    conn.close()


def test_a_call_recorded_from_the_event_loop_is_committed_when_the_await_returns_and_never_blocks_the_loop(tmp_path):
    path = tmp_path / "journal.sqlite"
    journal = CallJournal(path, "read_write")
    call = JournaledCall({"content": "yo"}, 1, 2, 0.0, 9.0, provider_ms=7.0, queued_ms=2.0)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another writer holds the file: the insert must wait for it

    async def scenario():
        recording = asyncio.create_task(journal.record_from_loop("k", model="m", task_id="t", step=0, call=call))
        ticks = 0
        for _ in range(5):  # the loop keeps turning while the insert waits for SQLite's lock
            await asyncio.sleep(0.02)
            ticks += 1
        assert not recording.done()
        other.execute("COMMIT")
        await recording
        return ticks

    assert asyncio.run(scenario()) == 5
    other.close()
    # committed before the await returned: a new connection, as after the process was killed, reads it
    assert CallJournal(path, "read_write").lookup("k") == call
    journal.close()
    assert journal.keys() == set()  # closed: its writer thread and connections are gone
