"""Benchmark 1: 2,000 tasks × 3 sim models at 50 ms latency, concurrency 64: the runner's wall time against a
bare asyncio loop making the same ``litellm.acompletion`` calls (goal: ≤ 1.10×).

The runner does everything a release does (episodes, normalisation, the durable journal in ``read_write``
with a fresh file, progress callbacks); the bare loop only calls LiteLLM. Rounds alternate the order (ABBA) on
this shared 2-core machine; the figure is the median of the per-round ratios.

    python benchmarks/execution/bench_throughput.py [--tasks 2000] [--rounds 3]
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


def timed(function):
    started_wall, started_cpu = time.perf_counter(), time.process_time()
    value = function()
    return value, time.perf_counter() - started_wall, time.process_time() - started_cpu


def main() -> None:
    parser = common.argument_parser(__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from toolchoice_pipeline.execution.runner import run_suite

    specs = common.sim_models(args.models, latency_ms=args.latency_ms)
    config = common.run_config(args.concurrency)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        warm = common.build_suite(root / "warm", 40)
        asyncio.run(common.bare_loop(warm, specs, args.concurrency))
        asyncio.run(run_suite(warm, config, data_dir=root / "warm", models=specs))

        rounds = []
        for index in range(args.rounds):
            data_dir = root / f"round{index}"
            suite = common.build_suite(data_dir, args.tasks)
            done = {spec.model: 0 for spec in specs}

            def progress(model: str, finished: int, total: int, done=done) -> None:
                done[model] = finished

            def bare(suite=suite):
                return timed(lambda: asyncio.run(common.bare_loop(suite, specs, args.concurrency)))

            def runner(suite=suite, data_dir=data_dir, progress=progress):
                return timed(
                    lambda: asyncio.run(run_suite(suite, config, data_dir=data_dir, models=specs, progress=progress))
                )

            if index % 2 == 0:
                (calls, bare_wall, bare_cpu), (episodes, run_wall, run_cpu) = bare(), runner()
            else:
                (episodes, run_wall, run_cpu), (calls, bare_wall, bare_cpu) = runner(), bare()
            failed = sum(1 for e in episodes if e.error)
            provider_calls = sum(1 for e in episodes for s in e.steps if not s.cache_hit)
            rounds.append(
                {
                    "bare_wall_s": round(bare_wall, 3),
                    "runner_wall_s": round(run_wall, 3),
                    "ratio": round(run_wall / bare_wall, 3),
                    "bare_cpu_s": round(bare_cpu, 3),
                    "runner_cpu_s": round(run_cpu, 3),
                    "bare_calls": calls,
                    "runner_provider_calls": provider_calls,
                    "episodes": len(episodes),
                    "failed_episodes": failed,
                    "progress_final": done,
                }
            )
            print(
                f"round {index}: bare {bare_wall:.2f} s, runner {run_wall:.2f} s, ratio {run_wall / bare_wall:.3f}",
                flush=True,
            )

    ratios = [r["ratio"] for r in rounds]
    calls = args.tasks * args.models
    common.write_result(
        "throughput",
        {
            "setup": common.setup(
                args, calls=calls, latency_bound_s=round(calls * args.latency_ms / 1000 / args.concurrency, 3)
            ),
            "rounds": rounds,
            "ratio_median": statistics.median(ratios),
            "cpu_ratio_median": round(statistics.median(r["runner_cpu_s"] / r["bare_cpu_s"] for r in rounds), 3),
            "ratio_of_best_walls": round(
                min(r["runner_wall_s"] for r in rounds) / min(r["bare_wall_s"] for r in rounds), 3
            ),
            "goal": "runner wall / bare loop wall <= 1.10",
            "goal_met": statistics.median(ratios) <= 1.10,
        },
    )


if __name__ == "__main__":
    main()
