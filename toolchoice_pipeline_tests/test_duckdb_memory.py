"""One in-memory DuckDB database per process (util/duckdb_memory.py): its connections keep what they register and
create apart, on any thread, and a caller that changes a database-wide setting gets a database of its own."""

from __future__ import annotations

import threading

import duckdb
import pyarrow as pa
import pytest

from toolchoice_pipeline.util.duckdb_memory import memory_connection


def test_connections_keep_their_registered_tables_and_temp_views_apart():
    first, second = memory_connection(), memory_connection()
    try:
        first.register("scores", pa.table({"x": [1, 2]}))
        second.register("scores", pa.table({"x": [5]}))
        first.execute("CREATE TEMP VIEW total AS SELECT sum(x) AS s FROM scores")
        assert first.execute("SELECT s FROM total").fetchone() == (3,)
        assert second.execute("SELECT sum(x) FROM scores").fetchone() == (5,)
        with pytest.raises(duckdb.CatalogException):
            second.execute("SELECT s FROM total")
    finally:
        first.close()
        second.close()
    later = memory_connection()
    try:  # a closed connection's names are gone with it
        with pytest.raises(duckdb.CatalogException):
            later.execute("SELECT * FROM scores")
    finally:
        later.close()


def test_connections_on_many_threads_each_read_their_own_rows():
    wrong: list[tuple[int, int]] = []

    def work(n: int) -> None:
        for _ in range(20):
            con = memory_connection()
            try:
                con.register("rows", pa.table({"x": [n] * 10}))
                total = con.execute("SELECT sum(x) FROM rows").fetchone()[0]
                if total != 10 * n:
                    wrong.append((n, total))
            finally:
                con.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(1, 7)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_a_database_wide_setting_stays_in_a_database_of_its_own():
    shared = memory_connection()
    own = memory_connection(own=True)
    try:
        [threads] = shared.execute("SELECT current_setting('threads')").fetchone()
        other = 2 if threads == 1 else 1
        own.execute(f"SET threads = {other}")
        assert own.execute("SELECT current_setting('threads')").fetchone() == (other,)
        assert shared.execute("SELECT current_setting('threads')").fetchone() == (threads,)
        later = memory_connection()
        assert later.execute("SELECT current_setting('threads')").fetchone() == (threads,)
        later.close()
    finally:
        shared.close()
        own.close()
