"""The runner: one episode per (model, task) in a stable order, progress, concurrency limits, faults kept apart."""

from __future__ import annotations

import asyncio

import litellm
import pytest

from toolchoice_pipeline.execution import runner
from toolchoice_pipeline.execution.runner import run_suite, run_suite_sync
from toolchoice_pipeline.suites.config import ModelSpec, RunConfig
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline_tests.execution_support import call, numbered_tasks, register_scripted, write_suite


def config(models, **extra):
    data = {"models": models, "retries": {"max_attempts": 2, "initial_wait_s": 0, "max_wait_s": 0}}
    data.update(extra)
    return RunConfig.model_validate(data)


def reads(model, messages, tools, metadata):
    return {"role": "assistant", "content": None, "tool_calls": [call("Read", {"file_path": "x"}, "c")]}


def test_one_episode_per_model_and_task_in_model_then_task_order(tmp_path):
    suite = write_suite(tmp_path, numbered_tasks(7))
    register_scripted(reads, delay_s=0.001)
    events = []
    episodes = run_suite_sync(
        suite,
        config(["scripted/b", "scripted/a"]),
        data_dir=tmp_path,
        progress=lambda model, done, total: events.append((model, done, total)),
    )
    assert [(e.model, e.task_id) for e in episodes] == [
        (m, t.id) for m in ("scripted/b", "scripted/a") for t in suite.tasks
    ]
    assert all(e.error is None for e in episodes)
    for model in ("scripted/a", "scripted/b"):
        counts = [done for m, done, total in events if m == model]
        assert counts == list(range(1, 8))
        assert {total for m, _, total in events if m == model} == {7}


def test_global_and_per_model_limits_hold_while_models_interleave(tmp_path):
    suite = write_suite(tmp_path, numbered_tasks(24))
    handler = register_scripted(reads, delay_s=0.02)
    cfg = config(
        [{"model": "scripted/a"}, {"model": "scripted/b", "max_concurrency": 2}, {"model": "scripted/c"}],
        concurrency={"max_in_flight": 7, "per_model": 4},
    )
    run_suite_sync(suite, cfg, data_dir=tmp_path)
    assert handler.max_in_flight == 7
    assert handler.max_in_flight_by_model == {"a": 4, "b": 2, "c": 4}
    # interleaved: the last model's first call starts before the first model's last call
    starts = handler.started
    first_c = min(t for t, m in starts if m == "c")
    last_a = max(t for t, m in starts if m == "a")
    assert first_c < last_a


def test_the_suite_models_are_the_default(tmp_path):
    suite = write_suite(tmp_path, numbered_tasks(2), models=["scripted/from-suite"])
    handler = register_scripted(reads)
    episodes = run_suite_sync(suite, config(["scripted/from-config"]), data_dir=tmp_path)
    assert {e.model for e in episodes} == {"scripted/from-suite"}
    assert {r["model"] for r in handler.requests} == {"from-suite"}
    explicit = run_suite_sync(suite, config(["scripted/x"]), data_dir=tmp_path, models=[ModelSpec(model="scripted/y")])
    assert {e.model for e in explicit} == {"scripted/y"}


def test_a_model_without_its_api_key_fails_alone_with_one_message(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    suite = write_suite(tmp_path, numbered_tasks(3))
    register_scripted(reads)
    episodes = run_suite_sync(suite, config(["openai/gpt-4o-mini", "scripted/ok"]), data_dir=tmp_path)
    failed = [e for e in episodes if e.model == "openai/gpt-4o-mini"]
    assert {e.error for e in failed} == {
        "openai/gpt-4o-mini: no API key: set OPENAI_API_KEY in the environment "
        "(keys are read from the environment only, never from files)"
    }
    assert all(e.steps == [] for e in failed)
    assert all(e.error is None and e.first_call.name == "Read" for e in episodes if e.model == "scripted/ok")


def test_unknown_providers_and_local_models_fail_alone(tmp_path):
    suite = write_suite(tmp_path, numbered_tasks(2))
    register_scripted(reads)
    episodes = run_suite_sync(
        suite, config(["nosuchprovider/model-x", "local/no-such-agent", "scripted/ok"]), data_dir=tmp_path
    )
    errors = {e.model: e.error for e in episodes}
    assert errors["nosuchprovider/model-x"].startswith("nosuchprovider/model-x: unknown provider")
    assert errors["local/no-such-agent"].startswith("local/no-such-agent: unknown local model")
    assert errors["scripted/ok"] is None


def test_a_misspelt_model_is_reported_as_not_found_not_as_an_auth_error(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-123456")
    suite = write_suite(tmp_path, numbered_tasks(2))
    refused = litellm.AuthenticationError(
        message="Incorrect API key provided: sk-test-not-a-real-key-123456", llm_provider="openai", model="gpt-4o-mni"
    )
    spec = ModelSpec(model="openai/gpt-4o-mni", params={"mock_response": refused})
    episodes = run_suite_sync(suite, config(["openai/gpt-4o-mni"]), data_dir=tmp_path, models=[spec])
    message = episodes[0].error
    assert message.startswith("openai/gpt-4o-mni: model not found")
    assert "did you mean openai/gpt-4o-mini" in message
    assert "sk-test-not-a-real-key-123456" not in message
    assert {e.error for e in episodes} == {message}


def test_endless_server_errors_stop_that_model_only(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "CONSECUTIVE_FAILURES_TO_STOP", 3)

    def script(model, messages, tools, metadata):
        if model == "down":
            raise litellm.InternalServerError(message="upstream exploded", llm_provider="scripted", model=model)
        return reads(model, messages, tools, metadata)

    suite = write_suite(tmp_path, numbered_tasks(12))
    handler = register_scripted(script)
    cfg = config(["scripted/down", "scripted/up"], concurrency={"max_in_flight": 4, "per_model": 1})
    episodes = run_suite_sync(suite, cfg, data_dir=tmp_path)
    down = [e for e in episodes if e.model == "scripted/down"]
    assert len(down) == 12 and all(e.error for e in down)
    assert all("upstream exploded" in e.error for e in down)
    # three calls failed after their retries (2 attempts each); no call was made after that
    assert len([r for r in handler.requests if r["model"] == "down"]) == 3 * 2
    assert [len(e.steps) for e in down] == [1, 1, 1] + [0] * 9
    assert down[-1].error.startswith("scripted/down: stopped after 3 consecutive failed calls")
    assert all(e.error is None for e in episodes if e.model == "scripted/up")


def test_per_task_request_errors_do_not_stop_the_model(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "CONSECUTIVE_FAILURES_TO_STOP", 2)

    def script(model, messages, tools, metadata):
        if metadata["task_id"] in {"t000", "t001", "t002"}:
            raise litellm.BadRequestError(message="context too long", llm_provider="scripted", model=model)
        return reads(model, messages, tools, metadata)

    suite = write_suite(tmp_path, numbered_tasks(6))
    register_scripted(script)
    episodes = run_suite_sync(suite, config(["scripted/m"], concurrency={"per_model": 1}), data_dir=tmp_path)
    assert [e.error is None for e in episodes] == [False, False, False, True, True, True]


def test_a_bad_replay_file_is_bad_input(tmp_path):
    suite = write_suite(tmp_path, numbered_tasks(1))
    (tmp_path / "bad.jsonl").write_text('{"task_id": "t000", "tool_calls": "not a list"}\n')
    with pytest.raises(InputError) as caught:
        run_suite_sync(suite, config(["replay/bad.jsonl"]), data_dir=tmp_path)
    assert "bad.jsonl:1" in str(caught.value)


def test_replay_paths_are_resolved_against_the_data_dir(tmp_path):
    suite = write_suite(tmp_path, numbered_tasks(2))
    (tmp_path / "recorded").mkdir()
    (tmp_path / "recorded" / "r.jsonl").write_text(
        '{"task_id": "t000", "tool_calls": [{"name": "Grep", "arguments": {"pattern": "x"}}]}\n'
    )
    episodes = run_suite_sync(suite, config(["replay/recorded/r.jsonl"]), data_dir=tmp_path)
    assert episodes[0].model == "replay/recorded/r.jsonl"
    assert episodes[0].first_call.name == "Grep" and episodes[0].error is None
    assert episodes[1].error and "t001" in episodes[1].error  # no line for this task: its row only


def test_run_suite_sync_works_inside_a_running_event_loop(tmp_path):
    suite = write_suite(tmp_path, numbered_tasks(2))
    register_scripted(reads)

    async def caller():
        return run_suite_sync(suite, config(["scripted/m"]), data_dir=tmp_path)

    assert len(asyncio.run(caller())) == 2


def test_async_api(tmp_path):
    suite = write_suite(tmp_path, numbered_tasks(3))
    register_scripted(reads)
    episodes = asyncio.run(run_suite(suite, config(["scripted/m"]), data_dir=tmp_path))
    assert [e.task_id for e in episodes] == ["t000", "t001", "t002"]
