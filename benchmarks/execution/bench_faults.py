"""Benchmark 2: benchmark 1's run with 20% transient errors (429 with Retry-After, 500, timeout, evenly mixed).
Goal: 100% of tasks completed, zero lost or duplicated rows (episodes and journal rows).

    python benchmarks/execution/bench_faults.py [--tasks 2000] [--error-rate 0.2]
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402


def main() -> None:
    parser = common.argument_parser(__doc__)
    parser.add_argument("--error-rate", type=float, default=0.2)
    parser.add_argument("--retry-after-s", type=float, default=0.05)
    parser.add_argument("--max-attempts", type=int, default=10)
    args = parser.parse_args()

    from toolchoice_pipeline.execution.runner import run_suite
    from toolchoice_pipeline.providers.sim import STATS

    specs = common.sim_models(
        args.models, latency_ms=args.latency_ms, error_rate=args.error_rate, retry_after_s=args.retry_after_s
    )
    config = common.run_config(args.concurrency, max_attempts=args.max_attempts)
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = Path(scratch)
        suite = common.build_suite(data_dir, args.tasks)
        STATS.reset()
        started = time.perf_counter()
        episodes = asyncio.run(run_suite(suite, config, data_dir=data_dir, models=specs))
        wall = time.perf_counter() - started
        journal = sqlite3.connect(data_dir / config.cache.path)
        journal_rows = journal.execute("SELECT COUNT(*), COUNT(DISTINCT request_key) FROM agent_calls").fetchone()
        attempts_histogram = dict(
            sorted(Counter(row[0] for row in journal.execute("SELECT attempts FROM agent_calls")).items())
        )

    expected_pairs = {(spec.model, task.id) for spec in specs for task in suite.tasks}
    pairs = Counter((e.model, e.task_id) for e in episodes)
    completed = sum(1 for e in episodes if e.error is None)
    lost = len(expected_pairs - set(pairs))
    duplicated = sum(count - 1 for count in pairs.values() if count > 1)
    steps = sum(len(e.steps) for e in episodes)
    common.write_result(
        "faults",
        {
            "setup": common.setup(
                args, error_rate=args.error_rate, retry_after_s=args.retry_after_s, retries=config.retries.model_dump()
            ),
            "wall_s": round(wall, 3),
            "episodes": len(episodes),
            "completed": completed,
            "completed_pct": round(100 * completed / len(expected_pairs), 3),
            "lost_rows": lost,
            "duplicated_rows": duplicated,
            "steps": steps,
            "journal_rows": journal_rows[0],
            "journal_distinct_keys": journal_rows[1],
            "provider_attempts": STATS.attempts,
            "provider_replies": STATS.completed,
            "injected_faults": dict(STATS.faults),
            "attempts_per_call_histogram": attempts_histogram,
            "errors": sorted({e.error for e in episodes if e.error})[:5],
            "goal": "100% of tasks completed, 0 lost, 0 duplicated",
            "goal_met": completed == len(expected_pairs)
            and lost == 0
            and duplicated == 0
            and journal_rows[0] == journal_rows[1] == steps,
        },
    )


if __name__ == "__main__":
    main()
