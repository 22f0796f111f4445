"""Ctrl-C (SIGINT) or SIGTERM while a run's event loop runs (``run_sync``: the agents' calls, the judge's polls) stops
the run at once, wherever in the loop the signal's handler runs: inside a callback, or inside a task nobody awaits,
where asyncio keeps an interrupt that is not ``KeyboardInterrupt`` to itself (Dagster's, raised by its step handler)
and the run used to go on, a Ctrl-C waiting for a minute-long call or lost (issue 27). The handler that was
installed (Dagster's in a step, Python's outside) then raises as it would have, and is installed again.

Real parts: the interpreter's signals (``signal.raise_signal`` runs the handler inside the code that raises it, so
the signal lands exactly there), Dagster's own step handler (``dg.raise_execution_interrupts``), a real event loop.
The call in flight is a coroutine that would finish on its own after a hundred turns of the loop: the run is
interrupted only if it stops before that.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator

import dagster as dg
import pytest

from toolchoice_pipeline.execution.llm import run_sync

SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM}


@pytest.fixture(autouse=True)
def handlers_kept() -> Iterator[None]:
    """Dagster's handler, leaving, copies SIGINT's handler to SIGTERM: the worker's own handlers come back."""
    kept = {signum: signal.getsignal(signum) for signum in SIGNALS.values()}
    yield
    for signum, handler in kept.items():
        signal.signal(signum, handler)


@contextlib.contextmanager
def outside_dagster() -> Iterator[None]:
    """As ``toolchoice run`` sets them before and after its Dagster run: SIGINT and SIGTERM raise
    ``KeyboardInterrupt``."""
    for signum in SIGNALS.values():
        signal.signal(signum, signal.default_int_handler)
    yield


HANDLERS: dict[str, tuple[Callable[[], contextlib.AbstractContextManager], type[BaseException]]] = {
    "a Dagster step": (dg.raise_execution_interrupts, dg.DagsterExecutionInterruptedError),
    "the command outside Dagster": (outside_dagster, KeyboardInterrupt),
}


async def call_in_flight(where: str, signum: int) -> str:
    """The run: a call in flight that would answer after a hundred turns of the loop; ``signum`` comes while the
    loop runs a callback (``where="callback"``) or a task nobody awaits (``where="task"``)."""
    loop = asyncio.get_running_loop()
    if where == "callback":
        loop.call_soon(signal.raise_signal, signum)
    else:

        async def side_task() -> None:
            signal.raise_signal(signum)

        background = loop.create_task(side_task())  # noqa: RUF006 - awaited by nobody, on purpose
        del background
    for _ in range(100):
        await asyncio.sleep(0)
    return "answered"


@pytest.mark.parametrize("where", ["callback", "task"])
@pytest.mark.parametrize("name", SIGNALS)
@pytest.mark.parametrize("handler", HANDLERS)
def test_a_signal_landing_anywhere_in_the_loop_stops_the_run_as_its_handler_says(handler, name, where):
    installed, raised = HANDLERS[handler]
    with installed():
        before = {signum: signal.getsignal(signum) for signum in SIGNALS.values()}
        with pytest.raises(raised):
            run_sync(call_in_flight(where, SIGNALS[name]))
        assert {signum: signal.getsignal(signum) for signum in SIGNALS.values()} == before


def test_a_run_without_a_signal_keeps_its_answer_and_the_handlers():
    with dg.raise_execution_interrupts():
        before = {signum: signal.getsignal(signum) for signum in SIGNALS.values()}

        async def answered() -> str:
            await asyncio.sleep(0)
            return "answered"

        assert run_sync(answered()) == "answered"
        assert {signum: signal.getsignal(signum) for signum in SIGNALS.values()} == before


def test_an_ignored_signal_stays_ignored_and_the_run_answers():
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell's background job starts a command
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    assert run_sync(call_in_flight("callback", signal.SIGINT)) == "answered"
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
