"""Run a coroutine on its own event loop so that Ctrl-C (SIGINT) or SIGTERM stops it at once and is never lost.

A Python signal handler runs in the main thread between two bytecodes of whatever runs there; in an event loop,
that is any callback or task. A handler that raises something other than ``KeyboardInterrupt`` (Dagster's step
handler raises ``DagsterExecutionInterruptedError``) raises it inside that callback or task, and asyncio keeps it
there: a callback's exception is logged and dropped, a task's is stored on the task. When the signal landed in a
callback handing over a call's result, or in a task nobody awaits, the interrupt was lost: the run went on,
calling models for minutes, or waited for a result that never came until the call's timeout.

:func:`run_interruptible` installs, while the loop runs, SIGINT and SIGTERM handlers that raise nothing: the first
signal cancels the coroutine's task (as ``asyncio.run`` does for Ctrl-C when Python's default handler is in place),
so it stops at its next ``await`` whatever call is in flight (a call's ``finally`` blocks run, the loop's tasks
are cancelled). Then the handlers that were installed come back and the signal is handed to its handler, which
raises as it would have (Dagster's error inside a step, ``KeyboardInterrupt`` outside). A second signal before the
coroutine stopped goes to that handler at once. A signal that is ignored (``SIG_IGN``) or left to the system
(``SIG_DFL``) stays so. Off the main thread (where no handler runs) it is ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Coroutine
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")
INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


def run_interruptible(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, stopped by the first SIGINT or SIGTERM (see the module docstring). Returns ``main``'s
    result; raises what ``main`` raises, or, after a signal, what the signal's previous handler raises
    (``KeyboardInterrupt`` when that handler only took note of it)."""
    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(main)
    previous: dict[int, Any] = {signum: signal.getsignal(signum) for signum in INTERRUPTS}
    taken = [signum for signum, handler in previous.items() if callable(handler)]
    if not taken:
        return asyncio.run(main)
    received: list[int] = []
    running: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if received:  # a second signal: the user insists, the previous handler acts at once
            _hand_over(previous[signum], signum, frame)
            return
        received.append(signum)
        for loop, task in running:
            try:
                loop.call_soon_threadsafe(task.cancel)  # also wakes the loop from its wait
            except RuntimeError:  # the loop is closed: the run is over, the signal is handed over below
                pass

    async def supervised() -> T:
        task = asyncio.current_task()
        assert task is not None
        running.append((asyncio.get_running_loop(), task))
        if received:  # it came while the loop was being set up
            main.close()
            raise asyncio.CancelledError
        return await main

    for signum in taken:
        signal.signal(signum, on_signal)
    try:
        return asyncio.run(supervised())
    except asyncio.CancelledError:
        if not received:
            raise
    finally:
        for signum in taken:
            signal.signal(signum, previous[signum])
        if received:
            _hand_over(previous[received[0]], received[0], None)
    raise KeyboardInterrupt  # stopped by a signal whose handler only took note of it: there is no result


def _hand_over(handler: Any, signum: int, frame: FrameType | None) -> None:
    if callable(handler):
        handler(signum, frame)
