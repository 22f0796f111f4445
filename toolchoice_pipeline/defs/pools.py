"""Dagster pools: how many steps of every run in one instance call providers, or write the warehouse, at once.

- ``toolchoice_providers``: the shard ops that call models (``run_agent_shard``, ``judge_shard``). Its limit bounds
  the provider calls of all runs together: two ``toolchoice run --workers 2`` and a UI run share it.
- ``toolchoice_warehouse``: ``release_scores``, the one step that commits the warehouse (Parquet tables and DuckDB
  views), and ``baseline``, which moves the suite's baseline pointer. Limit 1: one writer at a time.

Pools are enforced per step (``granularity: op``, Dagster's default when unset) by the executor itself, in-process
and multiprocess alike, so they hold for ``toolchoice run`` too, which executes its run in its own process and
bypasses the daemon's run queue (``max_concurrent_runs`` applies only to runs the daemon launches). A step whose
pool is full waits ("blocked" in the UI's Concurrency page) until a slot is free.

The limits live in the Dagster instance (``<data-dir>/dagster_home``). :func:`ensure_pool_limits` sets a pool's
limit only when the instance has none, at every ``toolchoice run`` and at the first step of every run
(``release_snapshot``); a limit changed in the UI (Deployment → Concurrency) or with ``dagster instance
concurrency set toolchoice_providers 8`` is kept.
"""

from __future__ import annotations

import dagster as dg

PROVIDERS_POOL = "toolchoice_providers"
WAREHOUSE_POOL = "toolchoice_warehouse"
#: Steps calling providers at once across every run of the instance, unless the instance says otherwise.
DEFAULT_PROVIDERS_LIMIT = 4
WAREHOUSE_LIMIT = 1
#: ``{pool: limit}`` an instance starts with.
DEFAULT_POOL_LIMITS = {PROVIDERS_POOL: DEFAULT_PROVIDERS_LIMIT, WAREHOUSE_POOL: WAREHOUSE_LIMIT}


def ensure_pool_limits(instance: dg.DagsterInstance, limits: dict[str, int] | None = None) -> dict[str, int]:
    """Give each pool of ``limits`` (default :data:`DEFAULT_POOL_LIMITS`) its limit in ``instance`` when the
    instance has no limit of its own for it (none set, or only the instance's ``default_limit``); returns the
    limits set now (empty when every pool had one)."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return {}
    own = {pool.name for pool in storage.get_pool_limits() if not pool.from_default}
    wanted = DEFAULT_POOL_LIMITS if limits is None else limits
    added = {name: limit for name, limit in wanted.items() if name not in own}
    for name, limit in added.items():
        storage.set_concurrency_slots(name, limit)
    return added
