"""Python's cyclic garbage collector set for a batch: a command (its thresholds, from ``toolchoice``'s entry
point on), a run's steps (the objects alive when they start frozen too), and the command's exit.

A run allocates millions of short-lived objects (LiteLLM's responses and logging objects, pydantic records) on
top of the millions its imports left alive (LiteLLM's price table, Dagster's definitions). With the default
thresholds (700, 10, 10) the collector ran ~3,200 times in a 6,000-episode run, and its full collections walked
every one of those long-lived objects: 8-12 s of the run's CPU, 1.2 s under these settings
(``benchmarks/run/collector_time.py``, docs/benchmarks.md). Refcounting still frees almost everything at once;
the collector only finds cycles, so running it less often costs little memory (peak RSS unchanged on that run,
+14 MB at 7,300 tasks).

At exit, Python's finalisation runs several full collections while it tears the modules down: 3.5-4 s of a
run's CPU spent walking objects that are about to be freed anyway. The command freezes everything first
(:func:`freeze_before_exit`; ``gc.freeze`` came to CPython from Instagram's forking servers, bpo-31558, which
skipped the exit's collections with ``os._exit``). Unlike ``os._exit``, refcounting still frees the objects and
runs their finalisers, and every ``atexit`` handler runs.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Objects allocated (net) before a young collection, then young and middle collections before the next older
#: one. Python's defaults are (700, 10, 10).
BATCH_THRESHOLDS = (50_000, 20, 20)


@contextmanager
def collector_for_batch() -> Iterator[None]:
    """While the block runs: the objects alive when it starts are frozen (no later collection walks them, see
    ``gc.freeze``) and the collector runs at :data:`BATCH_THRESHOLDS`. Both are undone when it ends, so a
    process that goes on (a test session, a notebook) gets its collector back as it was."""
    thresholds = gc.get_threshold()
    # No collection first: it would cost a full walk at every run's start (many in a test session); a cycle that
    # is garbage already is frozen with the rest and freed after the block.
    gc.freeze()
    gc.set_threshold(*BATCH_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def freeze_before_exit() -> None:
    """Freeze every object alive, for a process about to exit: finalisation's collections then walk none of
    them (~0.3 s instead of 3.5-4 s after a run). Only for the process's last act: a frozen object that becomes
    cyclic garbage later is never collected."""
    gc.freeze()
