"""The durable call journal and cache: every completed agent call, written as it finishes.

One SQLite file (standard library) at ``<data_dir>/<cache.path>`` in WAL mode with ``synchronous=NORMAL``;
each completed call is committed in its own transaction before the episode moves on. From the event loop the
insert runs on the journal's own writer thread (:meth:`CallJournal.record_from_loop`): on the loop's thread,
SQLite's write releases the GIL, LiteLLM's executor threads take it, and the loop waits to get it back (~5 s of
CPU over 6,000 concurrent calls, ``docs/benchmarks.md``). A committed call
survives the process being killed at any moment (SIGKILL included): SQLite's WAL keeps it. After a power loss
or an OS crash the calls committed since the last WAL checkpoint may be lost (never half-written): they
would be asked again. ``synchronous=FULL`` would close that gap at one ``fsync`` per call, which on this
machine cost more than the whole rest of our per-call work (see ``docs/execution.md``).

Rows are keyed by :func:`request_key`, a SHA-256 over the model, its parameters (secrets never: they are not
allowed in the configuration and are dropped here too; nor where the model is served, ``api_base``, or the
timeout: the model's identity is its model string plus an optional ``journal_key``), the messages, the tools,
the step and the task.
Only successful calls are written: errors are never cached.

Cache policies (``cache.policy`` in ``toolchoice.yaml``, or the caller's override):

- ``read_write`` (default; hand and catalog-change runs): a journaled reply is reused, so a re-run with
  unchanged inputs makes no provider call and a killed run resumes where it stopped;
- ``write_only`` (nightly): always ask the provider (to catch provider drift), and record the answer; a run
  given a ``resume_key`` still reuses the calls it journaled itself under that key, so a killed nightly run
  resumes without asking twice;
- ``off``: neither read nor write (no file is opened).

A reused reply keeps the tokens, ``cost_usd``, ``latency_ms``, its split (``provider_ms``, ``queued_ms``) and ``confidence`` of the
call that produced it; the step is marked ``cache_hit`` so "spent now" is the sum over steps that are not cache
hits. Journals written before the split was kept get its columns on open; their rows have no split (NULL).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolchoice_pipeline.suites.config import SECRET_PARAMS, CachePolicy
from toolchoice_pipeline.util.canonical import canonical_json
from toolchoice_pipeline.util.errors import InputError, Problem, display_path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS agent_calls (
    request_key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    task_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    message_json TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    latency_ms REAL NOT NULL,
    attempts INTEGER NOT NULL,
    resume_key TEXT,
    created_at REAL NOT NULL,
    provider_ms REAL,
    queued_ms REAL,
    confidence REAL
)
"""
# Columns added after the first release of the journal, with their types: added to an older file when opened.
_ADDED_COLUMNS = {"provider_ms": "REAL", "queued_ms": "REAL", "confidence": "REAL"}
_COLUMNS = (
    "request_key, model, task_id, step, message_json, prompt_tokens, completion_tokens, cost_usd, latency_ms, "
    "attempts, resume_key, created_at, provider_ms, queued_ms, confidence"
)
_INSERT = f"INSERT OR REPLACE INTO agent_calls ({_COLUMNS}) VALUES ({','.join('?' * len(_COLUMNS.split(',')))})"
_KEPT_MESSAGE_FIELDS = ("content", "tool_calls", "function_call")


#: Parameters that say where or how long to ask, not what answers: left out of the key, so a local server moved
#: to another port (or a hosted model behind a new proxy) keeps its journal (docs/local_servers.md).
WHERE_PARAMS = {"api_base", "base_url", "timeout"}


def key_params(params: dict[str, Any], journal_key: str | None = None) -> dict[str, Any]:
    """The call parameters that go into the request key: JSON-safe, secrets and :data:`WHERE_PARAMS` dropped;
    ``journal_key`` (a model's ``journal_key``, naming what answers) added when set."""
    kept = {k: v for k, v in params.items() if k not in SECRET_PARAMS and k not in WHERE_PARAMS}
    if journal_key is not None:
        kept["journal_key"] = journal_key
    return json.loads(json.dumps(kept, default=repr))


def digest(value: Any) -> str:
    """Full SHA-256 (64 hex) of ``value``'s canonical JSON."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def request_key(
    *,
    model: str,
    fingerprint: str | None,
    params: dict[str, Any],
    task_id: str,
    step: int,
    messages: list[dict[str, Any]],
    tools_digest: str,
    sample: int = 0,
) -> str:
    """The journal key of one call (64 hex). ``params`` must already be :func:`key_params`; ``fingerprint``
    identifies what answers behind the model string when it is ours (a replay file's content, a local agent's
    code), so editing those is a new key; ``tools_digest`` is :func:`digest` of the tools as sent.
    ``sample`` (0..k-1 with repeats) makes each sample its own key; sample 0 keeps the key it had before
    repeats existed, so journals written by a run with k = 1 still serve it."""
    key = {
        "model": model,
        "fingerprint": fingerprint,
        "params": params,
        "task_id": task_id,
        "step": step,
        "messages": messages,
        "tools": tools_digest,
    }
    if sample:
        key["sample"] = sample
    return digest(key)


@dataclass(frozen=True)
class JournaledCall:
    """One completed call as stored: the assistant message as the provider returned it (provider tool names)."""

    message: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_ms: float
    attempts: int = 1
    # The split of this call's time (see llm.Completion), journaled with it; None in rows of older journals.
    provider_ms: float | None = None
    queued_ms: float = 0.0
    # The model's confidence in the reply (needle/), journaled with it; None when not reported.
    confidence: float | None = None


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    """Bring a journal written by an older version up to :data:`_SCHEMA` (new columns are nullable)."""
    present = {row[1] for row in conn.execute("PRAGMA table_info(agent_calls)")}
    for name, kind in _ADDED_COLUMNS.items():
        if name not in present:
            try:
                conn.execute(f"ALTER TABLE agent_calls ADD COLUMN {name} {kind}")
            except sqlite3.OperationalError as exc:  # another process opening the same journal added it first
                if "duplicate column" not in str(exc):
                    raise


class CallJournal:
    """The journal of one run, used from the event loop's thread. :meth:`lookup` is a primary-key read, skipped
    for keys that were not journaled when the run started; :meth:`record` (and, awaited from the loop,
    :meth:`record_from_loop`) commits one call in its own transaction before returning. ``models`` limits the
    reusable keys to the run's models."""

    def __init__(
        self, path: Path | None, policy: CachePolicy, *, resume_key: str | None = None, models: list[str] | None = None
    ):
        self.path = path
        self.policy = policy
        self.resume_key = resume_key
        self._known: set[str] = set()
        self._conn: sqlite3.Connection | None = None
        self._writer: ThreadPoolExecutor | None = None
        self._writer_conn: sqlite3.Connection | None = None
        if policy == "off" or path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, isolation_level=None, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
            _add_missing_columns(conn)
            self._conn = conn
            if policy == "read_write" or resume_key is not None:
                self._known = self._reusable_keys(models)
        except (sqlite3.DatabaseError, NotADirectoryError, FileExistsError) as exc:
            raise InputError(
                Problem(
                    file=display_path(path),
                    field="cache.path",
                    message=f"the call journal cannot be opened ({exc}): point cache.path in "
                    "toolchoice.yaml at a file, or delete a damaged journal (only "
                    "cached replies are lost)",
                )
            ) from None

    def _reusable_keys(self, models: list[str] | None) -> set[str]:
        assert self._conn is not None
        query = "SELECT request_key FROM agent_calls WHERE 1=1"
        args: list[str | None] = []
        if models is not None:
            query += f" AND model IN ({','.join('?' * len(models))})"
            args.extend(models)
        if self.policy != "read_write":
            query += " AND resume_key = ?"
            args.append(self.resume_key)
        return {row[0] for row in self._conn.execute(query, args)}

    def lookup(self, key: str) -> JournaledCall | None:
        """The journaled reply for ``key`` if the policy allows reusing it, else None."""
        if key not in self._known:
            return None
        assert self._conn is not None
        row = self._conn.execute(
            "SELECT message_json, prompt_tokens, completion_tokens, cost_usd, latency_ms, attempts, provider_ms, "
            "queued_ms, confidence FROM agent_calls WHERE request_key = ?",
            (key,),
        ).fetchone()
        if row is None:
            return None
        return JournaledCall(
            json.loads(row[0]),
            row[1],
            row[2],
            row[3],
            row[4],
            row[5],
            provider_ms=row[6],
            queued_ms=row[7] or 0.0,
            confidence=row[8],
        )

    def record(self, key: str, *, model: str, task_id: str, step: int, call: JournaledCall) -> None:
        """Write one completed call in its own transaction; returns once it is committed."""
        if self._conn is None:
            return
        # One statement in autocommit mode: SQLite wraps it in its own write transaction, committed (or rolled
        # back) before execute returns, without the two extra statements of an explicit BEGIN ... COMMIT.
        self._conn.execute(_INSERT, self._row(key, model, task_id, step, call))

    async def record_from_loop(self, key: str, *, model: str, task_id: str, step: int, call: JournaledCall) -> None:
        """:meth:`record` for a coroutine: the same one-statement transaction, run on the journal's writer
        thread; returns once it is committed, so the episode still moves on only after its call is durable."""
        if self._conn is None:
            return
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolchoice-journal")
        row = self._row(key, model, task_id, step, call)
        await asyncio.get_running_loop().run_in_executor(self._writer, self._insert_on_writer, row)

    def _insert_on_writer(self, row: tuple[Any, ...]) -> None:
        if self._writer_conn is None:  # opened on the writer thread, which alone uses it
            assert self.path is not None
            self._writer_conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
            self._writer_conn.execute("PRAGMA synchronous=NORMAL")
        self._writer_conn.execute(_INSERT, row)

    def _row(self, key: str, model: str, task_id: str, step: int, call: JournaledCall) -> tuple[Any, ...]:
        message = {k: call.message[k] for k in _KEPT_MESSAGE_FIELDS if call.message.get(k) is not None}
        return (
            key,
            model,
            task_id,
            step,
            json.dumps(message, ensure_ascii=False),
            call.prompt_tokens,
            call.completion_tokens,
            call.cost_usd,
            call.latency_ms,
            call.attempts,
            self.resume_key,
            time.time(),
            call.provider_ms,
            call.queued_ms,
            call.confidence,
        )

    def keys(self) -> set[str]:
        """Every request key in the journal (for benchmarks and tests)."""
        if self._conn is None:
            return set()
        return {row[0] for row in self._conn.execute("SELECT request_key FROM agent_calls")}

    def close(self) -> None:
        if self._writer is not None:
            if self._writer_conn is not None:
                self._writer.submit(self._writer_conn.close).result()
                self._writer_conn = None
            self._writer.shutdown(wait=True)
            self._writer = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> CallJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
