"""A run's spend shared by its shards: the agent and judge budgets hold across steps and worker processes.

Each shard of a release is its own Dagster step, possibly in its own process; a budget (``budget_usd``,
``judge.budget_usd``) caps the whole run. The spend is kept in one SQLite file per run in the release's
staging directory (WAL mode, so processes on one host add and read at once); a budget with no limit keeps its
spend in memory only.

Across machines (shards on a cluster's executor) the spend is kept in Redis instead: ``TOOLCHOICE_SPEND_URL``
(``redis://host:6379/0``), or, when that is unset, ``TOOLCHOICE_RATE_LIMITS_URL`` if it is a Redis URL, so a team
that shares its rate limits through Redis shares its budgets through the same server. One hash per run,
``toolchoice:spend:<release id>:<run id>``, a field per kind incremented atomically (``HINCRBYFLOAT``); it
expires :data:`REDIS_TTL_S` after its last change.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from toolchoice_pipeline.execution.rate_limits import RATE_LIMITS_URL_ENV, REDIS_SCHEMES, RateLimitStoreError
from toolchoice_pipeline.util.errors import InputError, Problem

SPEND_URL_ENV = "TOOLCHOICE_SPEND_URL"
REDIS_TTL_S = 7 * 24 * 3600  # a run's spend is read while it runs; a week leaves room for a resumed run


class SpendLedger:
    """Spend in USD by kind (``agent``, ``judge``) of one run, in ``path`` (created on first use)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._con: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection:
        if self._con is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("CREATE TABLE IF NOT EXISTS spend (kind TEXT NOT NULL, usd REAL NOT NULL)")
            self._con = con
        return self._con

    def add(self, kind: str, usd: float) -> None:
        if usd:
            self._connection().execute("INSERT INTO spend VALUES (?, ?)", (kind, float(usd)))

    def total(self, kind: str) -> float:
        (total,) = self._connection().execute("SELECT total(usd) FROM spend WHERE kind = ?", (kind,)).fetchone()
        return float(total)

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


class Budget:
    """Spend of one kind against ``limit_usd`` (None = no cap), shared through ``ledger`` when one is given."""

    kind = "agent"

    def __init__(self, limit_usd: float | None, ledger: SpendLedger | RedisSpendLedger | None = None):
        self.limit_usd = limit_usd
        self.ledger = ledger if limit_usd is not None else None
        self.spent_here_usd = 0.0  # by this process

    @property
    def spent_usd(self) -> float:
        """The run's spend so far (every shard's, with a ledger)."""
        return self.ledger.total(self.kind) if self.ledger is not None else self.spent_here_usd

    @property
    def exhausted(self) -> bool:
        return self.limit_usd is not None and self.spent_usd >= self.limit_usd

    def add(self, cost_usd: float) -> None:
        self.spent_here_usd += cost_usd
        if self.ledger is not None:
            self.ledger.add(self.kind, cost_usd)


def spend_url() -> str | None:
    """The Redis URL of the shared spend (:data:`SPEND_URL_ENV`, else a Redis ``TOOLCHOICE_RATE_LIMITS_URL``), or
    None for the local SQLite ledger. Raises :class:`InputError` for a ``TOOLCHOICE_SPEND_URL`` that is not Redis."""
    configured = os.environ.get(SPEND_URL_ENV, "").strip()
    if configured:
        if not configured.startswith(REDIS_SCHEMES):
            raise InputError(
                Problem(
                    file="environment",
                    field=SPEND_URL_ENV,
                    message=f"{configured.split('://', 1)[0] if '://' in configured else 'a path'} is not a spend "
                    "store; use redis://host:6379/0 (or leave it unset: one host)",
                )
            )
        return configured
    limits = os.environ.get(RATE_LIMITS_URL_ENV, "").strip()
    return limits if limits.startswith(REDIS_SCHEMES) else None


class RedisSpendLedger:
    """:class:`SpendLedger` in Redis, for shards on several machines: one hash per run (see the module doc)."""

    def __init__(self, url: str, key: str):
        try:
            from redis import Redis
        except ImportError:
            raise RateLimitStoreError(
                "a redis:// store needs the Redis client: pip install 'toolchoice-pipeline[redis]'"
            ) from None
        self.key = key
        self._redis: Any = Redis.from_url(url)

    def add(self, kind: str, usd: float) -> None:
        if usd:
            with self._redis.pipeline() as pipe:  # MULTI/EXEC: the increment and the expiry together
                pipe.hincrbyfloat(self.key, kind, float(usd))
                pipe.expire(self.key, REDIS_TTL_S)
                pipe.execute()

    def total(self, kind: str) -> float:
        value = self._redis.hget(self.key, kind)
        return float(value) if value is not None else 0.0

    def close(self) -> None:
        self._redis.close()


def open_spend_ledger(local: Path, release_id: str, run_id: str) -> SpendLedger | RedisSpendLedger:
    """The run's ledger: in Redis when :func:`spend_url` names one, else the SQLite file ``local``."""
    url = spend_url()
    if url is not None:
        return RedisSpendLedger(url, f"toolchoice:spend:{release_id}:{run_id}")
    return SpendLedger(local)
