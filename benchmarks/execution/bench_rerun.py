"""Benchmark 3: re-run benchmark 1's suite with unchanged inputs (cache policy read_write).
Goal: 0 provider calls, and the re-run's wall time ≤ 15% of the first run's.

    python benchmarks/execution/bench_rerun.py [--tasks 2000] [--reruns 3]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402


def main() -> None:
    parser = common.argument_parser(__doc__)
    parser.add_argument("--reruns", type=int, default=3)
    args = parser.parse_args()

    from toolchoice_pipeline.execution.runner import run_suite
    from toolchoice_pipeline.providers.sim import STATS

    specs = common.sim_models(args.models, latency_ms=args.latency_ms)
    config = common.run_config(args.concurrency)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        warm = common.build_suite(root / "warm", 40)
        asyncio.run(run_suite(warm, config, data_dir=root / "warm", models=specs))

        data_dir = root / "bench"
        suite = common.build_suite(data_dir, args.tasks)
        STATS.reset()
        started = time.perf_counter()
        first = asyncio.run(run_suite(suite, config, data_dir=data_dir, models=specs))
        first_wall = time.perf_counter() - started
        first_calls = STATS.attempts

        reruns = []
        for _ in range(args.reruns):
            STATS.reset()
            started = time.perf_counter()
            again = asyncio.run(run_suite(suite, config, data_dir=data_dir, models=specs))
            wall = time.perf_counter() - started
            reruns.append(
                {
                    "wall_s": round(wall, 3),
                    "provider_calls": STATS.attempts,
                    "cache_hit_steps": sum(s.cache_hit for e in again for s in e.steps),
                    "identical_rows": common.row_view(again) == common.row_view(first),
                }
            )

    median_wall = statistics.median(r["wall_s"] for r in reruns)
    common.write_result(
        "rerun",
        {
            "setup": common.setup(args),
            "first_run": {
                "wall_s": round(first_wall, 3),
                "provider_calls": first_calls,
                "steps": sum(len(e.steps) for e in first),
            },
            "reruns": reruns,
            "rerun_wall_median_s": median_wall,
            "rerun_over_first_pct": round(100 * median_wall / first_wall, 2),
            "goal": "0 provider calls and re-run wall <= 15% of the first run",
            "goal_met": all(r["provider_calls"] == 0 and r["identical_rows"] for r in reruns)
            and median_wall <= 0.15 * first_wall,
        },
    )


if __name__ == "__main__":
    main()
