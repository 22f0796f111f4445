""":func:`run_sync` finishes LiteLLM's logging callbacks on the event loop that queued them, so consecutive
stages (agents, judge preflight, judge, canary: one ``asyncio.run`` each) print no "LoggingWorker: event loop
changed" warning (issue 14: every ``toolchoice run`` printed one). Real parts: LiteLLM routed to the in-process
``local/`` provider, LiteLLM's own logging worker and logger."""

from __future__ import annotations

import asyncio
import logging

import litellm

from toolchoice_pipeline.execution.llm import run_sync
from toolchoice_pipeline.providers import register_providers

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "Read",
            "description": "Read a local file by its path.",
            "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}},
        },
    }
]


async def one_call() -> str:
    response = await litellm.acompletion(
        model="local/name-match", tools=TOOLS, messages=[{"role": "user", "content": "Read the file README.md"}]
    )
    return response.choices[0].finish_reason


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def loop_changes(run) -> list[str]:
    """The "event loop changed" warnings LiteLLM logs over three stages, each run by ``run`` in its own loop."""
    register_providers()
    run_sync(asyncio.sleep(0))  # callbacks an earlier test left queued finish here, before we listen
    handler, logger = Collect(), logging.getLogger("LiteLLM")
    logger.addHandler(handler)
    try:
        for _ in range(3):
            assert run(one_call()) is not None
    finally:
        logger.removeHandler(handler)
        run_sync(asyncio.sleep(0))  # and none is left to the next test
    return [m for m in handler.messages if "event loop changed" in m and "carried" in m]


def test_consecutive_stages_print_no_loop_change_warning():
    assert loop_changes(run_sync) == []


def test_plain_asyncio_run_would_carry_callbacks_over_and_warn():
    # The reason for run_sync: without it, LiteLLM's queued callbacks move to the next loop with a warning.
    # If a LiteLLM release stops doing that, this test fails and run_sync's flush can go.
    assert loop_changes(asyncio.run)
