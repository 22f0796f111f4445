"""Episodes: stop rules, the messages fed back between steps, metadata, and provider-safe tool names."""

from __future__ import annotations

import json

import litellm

from toolchoice_pipeline.execution.episode import NO_RESULT
from toolchoice_pipeline.execution.runner import run_suite_sync
from toolchoice_pipeline.records.calls import FLAG_HALLUCINATED, FLAG_INVALID_CALL
from toolchoice_pipeline.suites.config import RunConfig
from toolchoice_pipeline_tests.execution_support import call, register_scripted, task_line, write_suite


def config(models, max_steps=4):
    return RunConfig.model_validate(
        {"models": models, "max_steps": max_steps, "retries": {"max_attempts": 1, "initial_wait_s": 0}}
    )


def by_step(script_steps):
    """A script answering step n with script_steps[n] (a message dict, or an exception to raise)."""

    def script(model, messages, tools, metadata):
        outcome = script_steps[metadata["step"]]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return script


def test_a_reply_without_calls_ends_the_episode(tmp_path):
    suite = write_suite(tmp_path, [task_line("a", "What is CRUD?", None)])
    handler = register_scripted(by_step([{"role": "assistant", "content": "Create, read, update, delete."}]))
    [episode] = run_suite_sync(suite, config(["scripted/m"]), data_dir=tmp_path)
    assert episode.error is None
    assert len(episode.steps) == 1 and episode.calls == 0
    assert episode.steps[0].reply.text == "Create, read, update, delete."
    assert len(handler.requests) == 1


def test_tool_results_go_back_as_tool_messages_until_the_expected_tool_is_called(tmp_path):
    task = task_line(
        "a", "Open the settings module", "Read", tool_results={"Glob": "src/settings.py", "Grep": {"matches": 2}}
    )
    suite = write_suite(tmp_path, [task])
    handler = register_scripted(
        by_step(
            [
                {
                    "role": "assistant",
                    "content": "Looking.",
                    "tool_calls": [
                        call("Glob", {"pattern": "**/settings.py"}, "c1"),
                        call("Grep", {"pattern": "settings"}, "c2"),
                        call("Glob", {"pattern": "*.cfg"}, "c3"),
                    ],
                },
                {"role": "assistant", "content": None, "tool_calls": [call("Glob", {"pattern": "x"}, "c4")]},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [call("Read", {"file_path": "src/settings.py"}, "c5")],
                },
                {"role": "assistant", "content": "never asked"},
            ]
        )
    )
    [episode] = run_suite_sync(suite, config(["scripted/m"]), data_dir=tmp_path)
    assert [s.step for s in episode.steps] == [0, 1, 2]
    assert episode.calls == 5
    assert episode.first_call.name == "Glob"
    second = handler.requests[1]["messages"]
    assert second[0] == {"role": "user", "content": "Open the settings module"}
    assert second[1]["role"] == "assistant" and second[1]["content"] == "Looking."
    assert [c["id"] for c in second[1]["tool_calls"]] == ["c1", "c2", "c3"]
    assert second[2:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "src/settings.py"},
        {"role": "tool", "tool_call_id": "c2", "content": json.dumps({"matches": 2})},
        {"role": "tool", "tool_call_id": "c3", "content": "src/settings.py"},
    ]
    third = handler.requests[2]["messages"]
    assert third[:5] == second
    assert third[6] == {"role": "tool", "tool_call_id": "c4", "content": "src/settings.py"}
    keys = [s.request_key for s in episode.steps]
    assert len(set(keys)) == 3 and all(len(k) == 64 for k in keys)


def test_tools_without_a_canned_result_get_the_neutral_message(tmp_path):
    suite = write_suite(tmp_path, [task_line("a", "Find the config", "Read")])
    handler = register_scripted(
        by_step(
            [
                {"role": "assistant", "content": None, "tool_calls": [call("Grep", {"pattern": "config"}, "g1")]},
                {"role": "assistant", "content": "Done."},
            ]
        )
    )
    run_suite_sync(suite, config(["scripted/m"]), data_dir=tmp_path)
    assert handler.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "g1", "content": NO_RESULT}


def test_the_episode_stops_at_max_steps(tmp_path):
    suite = write_suite(tmp_path, [task_line("a", "Read the readme", "Read")])
    handler = register_scripted(
        lambda model, messages, tools, metadata: {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("Glob", {"pattern": "README*"}, "c")],
        }
    )
    [episode] = run_suite_sync(suite, config(["scripted/m"], max_steps=3), data_dir=tmp_path)
    assert len(episode.steps) == 3 and len(handler.requests) == 3
    assert episode.error is None


def test_calls_written_in_text_are_invalid_and_end_the_episode(tmp_path):
    suite = write_suite(tmp_path, [task_line("a", "Read main.py", "Read")])
    register_scripted(
        by_step(
            [{"role": "assistant", "content": '<tool_call>{"name": "Read", "arguments": {"file_path": "main.py"}}'}]
        )
    )
    [episode] = run_suite_sync(suite, config(["scripted/m"]), data_dir=tmp_path)
    assert len(episode.steps) == 1
    assert FLAG_INVALID_CALL in episode.first_call.flags


def test_tools_outside_the_catalog_are_flagged_hallucinated(tmp_path):
    suite = write_suite(tmp_path, [task_line("a", "Read main.py", "Read")])
    register_scripted(
        by_step(
            [
                {"role": "assistant", "content": None, "tool_calls": [call("OpenFile", {"path": "main.py"}, "h")]},
                {"role": "assistant", "content": "ok"},
            ]
        )
    )
    [episode] = run_suite_sync(suite, config(["scripted/m"]), data_dir=tmp_path)
    assert episode.first_call.name == "OpenFile"
    assert FLAG_HALLUCINATED in episode.first_call.flags


def test_each_call_carries_task_step_and_data_dir_metadata(tmp_path):
    suite = write_suite(tmp_path, [task_line("a", "x", "Read"), task_line("b", "y", "Read")])
    handler = register_scripted(
        by_step(
            [
                {"role": "assistant", "content": None, "tool_calls": [call("Glob", {"pattern": "*"}, "c")]},
                {"role": "assistant", "content": "ok"},
            ]
        )
    )
    run_suite_sync(suite, config(["scripted/m"]), data_dir=tmp_path)
    seen = sorted(
        (r["metadata"]["task_id"], r["metadata"]["step"], r["metadata"]["data_dir"]) for r in handler.requests
    )
    assert seen == [("a", 0, str(tmp_path)), ("a", 1, str(tmp_path)), ("b", 0, str(tmp_path)), ("b", 1, str(tmp_path))]


def test_a_failed_call_keeps_the_steps_before_it(tmp_path):
    suite = write_suite(tmp_path, [task_line("a", "Read it", "Read")])
    register_scripted(
        by_step(
            [
                {"role": "assistant", "content": None, "tool_calls": [call("Glob", {"pattern": "*"}, "c")]},
                litellm.BadRequestError(message="messages too long", llm_provider="scripted", model="m"),
            ]
        )
    )
    [episode] = run_suite_sync(suite, config(["scripted/m"]), data_dir=tmp_path)
    assert [s.error is None for s in episode.steps] == [True, False]
    assert episode.steps[0].reply.first_call.name == "Glob"
    assert episode.error.startswith("scripted/m: request rejected") and "messages too long" in episode.error
    assert episode.steps[1].error == episode.error


def test_dotted_tool_names_go_out_provider_safe_and_come_back_as_in_the_catalog(tmp_path):
    catalog = [
        {
            "name": "spotify.play",
            "description": "Play a song.",
            "parameters": {"type": "object", "properties": {"song": {"type": "string"}}},
        },
        {"name": "spotify.pause", "description": "Pause.", "parameters": {"type": "object", "properties": {}}},
    ]
    suite = write_suite(tmp_path, [task_line("a", "Play Yesterday", "spotify.pause")], catalog=catalog)

    def script(model, messages, tools, metadata):
        if "step" not in metadata:  # the preflight call a remote model gets before its first real call
            return {"role": "assistant", "content": "OK"}
        if metadata["step"] == 0:
            return {
                "role": "assistant",
                "content": None,
                "tool_calls": [call("spotify_play", {"song": "Yesterday"}, "p1")],
            }
        return {"role": "assistant", "content": "done"}

    handler = register_scripted(script, name="fakeremote")
    [episode] = run_suite_sync(suite, config(["fakeremote/m"]), data_dir=tmp_path)
    task_requests = [r for r in handler.requests if "step" in r["metadata"]]
    assert [t["function"]["name"] for t in task_requests[0]["tools"]] == ["spotify_play", "spotify_pause"]
    assert episode.first_call.name == "spotify.play"
    assert episode.first_call.flags == []
    history = task_requests[1]["messages"]
    assert history[1]["tool_calls"][0]["function"]["name"] == "spotify_play"
    assert history[2] == {"role": "tool", "tool_call_id": "p1", "content": NO_RESULT}


def test_in_process_models_see_the_catalog_names_unchanged(tmp_path):
    catalog = [
        {"name": "spotify.play", "description": "Play a song.", "parameters": {"type": "object", "properties": {}}}
    ]
    suite = write_suite(tmp_path, [task_line("a", "Play", "spotify.play")], catalog=catalog)
    handler = register_scripted(
        lambda model, messages, tools, metadata: {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("spotify.play", {}, "p")],
        }
    )
    [episode] = run_suite_sync(suite, config(["scripted/m"]), data_dir=tmp_path)
    assert handler.requests[0]["tools"][0]["function"]["name"] == "spotify.play"
    assert episode.first_call.name == "spotify.play" and episode.first_call.flags == []
