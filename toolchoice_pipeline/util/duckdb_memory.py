"""Connections to one in-memory DuckDB database per process, for the short queries over Arrow tables that scoring
and gating run (a release's scores, its pairing with the baseline, flipped tasks, confusion changes).

Opening a new in-memory database (``duckdb.connect()``) costs about 20 ms of CPU (DuckDB builds its catalog of
built-in functions anew); a cursor on one already open costs a fraction of a millisecond, and publishing a
release ran five such queries. Each cursor is its own DuckDB connection: what one registers or creates as a
``TEMP`` view is invisible to the others and dropped when it is closed, so callers on any thread use it as they
used a connection of their own. A caller that changes a database-wide setting (``SET threads``,
``SET memory_limit``) opens its own database instead (:func:`memory_connection` with ``own=True``).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

_LOCK = threading.Lock()
_SHARED: tuple[int, DuckDBPyConnection] | None = None  # (the process id that opened it, its connection)


def memory_connection(own: bool = False) -> DuckDBPyConnection:
    """A new connection (close it when done) to this process's in-memory DuckDB database, opened on first use;
    with ``own``, to a new in-memory database of its own (for database-wide settings). A process forked after the
    database was opened opens its own rather than use one whose threads stayed in the parent."""
    import duckdb

    if own:
        return duckdb.connect()
    global _SHARED
    with _LOCK:
        if _SHARED is None or _SHARED[0] != os.getpid():
            _SHARED = (os.getpid(), duckdb.connect())
        return _SHARED[1].cursor()
