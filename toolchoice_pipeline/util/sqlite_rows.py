"""Rows of one SQLite table copied between journal files: a shard's rows out of a host's journal, and back into
another host's journal (a shard's journal on an object store, ``defs/staging.shard_journal``)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterable
from pathlib import Path


def _columns(con: sqlite3.Connection, schema: str, table: str) -> list[str]:
    return [row[1] for row in con.execute(f"PRAGMA {schema}.table_info({table})")]


def _create_like(con: sqlite3.Connection, source_schema: str, table: str) -> None:
    """Create ``table`` in ``main`` with the statement that created it in ``source_schema`` (keys included)."""
    (sql,) = con.execute(
        f"SELECT sql FROM {source_schema}.sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    con.execute(sql)


def merge_rows(into: Path, source: Path, table: str) -> int:
    """Add the rows of ``table`` in ``source`` to ``into`` (rows whose key ``into`` has are kept as they are);
    ``into`` is created as a copy of ``source`` when missing. Returns the rows added. Columns present in one
    file only are left out (a journal of another version)."""
    if not Path(into).exists():
        Path(into).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, into)
        with sqlite3.connect(into) as con:
            return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    con = sqlite3.connect(into, timeout=60, isolation_level=None)
    try:
        con.execute("ATTACH DATABASE ? AS source", (str(source),))
        if not _columns(con, "main", table):
            _create_like(con, "source", table)
        shared = [c for c in _columns(con, "source", table) if c in set(_columns(con, "main", table))]
        names = ", ".join(shared)
        before = con.total_changes
        con.execute(f"INSERT OR IGNORE INTO main.{table} ({names}) SELECT {names} FROM source.{table}")
        return con.total_changes - before
    finally:
        con.close()


def extract_rows(
    source: Path, into: Path, table: str, *, resume_key: str, models: Iterable[str], task_ids: Iterable[str]
) -> int:
    """Write a new SQLite file ``into`` holding the rows of ``table`` in ``source`` journaled under ``resume_key``
    for ``models`` × ``task_ids`` (one shard's rows). Returns the row count (0: no file is written)."""
    if not Path(source).exists():
        return 0
    Path(into).unlink(missing_ok=True)
    con = sqlite3.connect(into, timeout=60, isolation_level=None)
    try:
        con.execute("ATTACH DATABASE ? AS source", (str(source),))
        if not _columns(con, "source", table):
            return 0
        _create_like(con, "source", table)
        con.execute(
            f"INSERT INTO main.{table} SELECT * FROM source.{table} WHERE resume_key = ? "
            "AND model IN (SELECT value FROM json_each(?)) AND task_id IN (SELECT value FROM json_each(?))",
            (resume_key, json.dumps(sorted(set(models))), json.dumps(sorted(set(task_ids)))),
        )
        rows = con.execute(f"SELECT count(*) FROM main.{table}").fetchone()[0]
    finally:
        con.close()
    if not rows:
        Path(into).unlink(missing_ok=True)
    return rows
