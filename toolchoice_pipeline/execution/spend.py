"""A run's spend shared by its shards: the agent and judge budgets hold across steps and worker processes.

Each shard of a release is its own Dagster step, possibly in its own process; a budget (``budget_usd``,
``judge.budget_usd``) caps the whole run. The spend is kept in one SQLite file per run in the release's
staging directory (WAL mode, so processes on one host add and read at once); a budget with no limit keeps its
spend in memory only. Across machines the file must be on storage every worker reaches (see docs/scale.md).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


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

    def __init__(self, limit_usd: float | None, ledger: SpendLedger | None = None):
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
