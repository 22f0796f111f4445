"""Targets of the processes the spend-ledger tests spawn (test_shards.py). A module of its own that imports only
the ledger (``execution.spend``, no LiteLLM, no Dagster): each spawned process imports the module its target
lives in, and the test module would cost it seconds of imports. ``Budget`` is what the run's agent budget
(``execution.runner.AgentBudget``) adds spend through."""

from __future__ import annotations

from pathlib import Path

from toolchoice_pipeline.execution.spend import Budget, RedisSpendLedger, SpendLedger


def spend(path: Path, n: int, usd: float) -> None:
    """Add ``usd`` of agent spend ``n`` times through a ledger on the SQLite file ``path``."""
    ledger = SpendLedger(path)
    budget = Budget(100.0, ledger)
    for _ in range(n):
        budget.add(usd)
    ledger.close()


def spend_in_redis(url: str, key: str, n: int, usd: float) -> None:
    """As :func:`spend`, through the Redis ledger at ``url`` under ``key``."""
    ledger = RedisSpendLedger(url, key)
    budget = Budget(100.0, ledger)
    for _ in range(n):
        budget.add(usd)
    ledger.close()
