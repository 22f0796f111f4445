"""Benchmark 4: benchmark 1's run in a child process, killed with SIGKILL at about half-way, then resumed.
Goal: 0 completed calls re-issued, and final rows identical to an uninterrupted run's.

"Completed calls" are the calls in the journal when the child died; the resumed run must reuse every one of
them and ask the provider only for the others. The uninterrupted run uses a fresh data dir.

    python benchmarks/execution/bench_resume.py [--tasks 2000] [--kill-at 0.5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402


def child(data_dir: Path, args: argparse.Namespace) -> None:
    from toolchoice_pipeline.execution.runner import run_suite
    from toolchoice_pipeline.suites.suite import load_suite

    suite = load_suite(data_dir, common.SUITE, check=False)
    specs = common.sim_models(args.models, latency_ms=args.latency_ms)
    done = 0

    def progress(model: str, finished: int, total: int) -> None:
        nonlocal done
        done += 1
        print(f"done {done}", flush=True)

    print("started", flush=True)
    asyncio.run(
        run_suite(suite, common.run_config(args.concurrency), data_dir=data_dir, models=specs, progress=progress)
    )
    print("finished", flush=True)


def main() -> None:
    parser = common.argument_parser(__doc__)
    parser.add_argument("--kill-at", type=float, default=0.5, help="fraction of episodes done before SIGKILL")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args)
        return

    from toolchoice_pipeline.execution.runner import run_suite
    from toolchoice_pipeline.providers.sim import STATS

    specs = common.sim_models(args.models, latency_ms=args.latency_ms)
    config = common.run_config(args.concurrency)
    total = args.tasks * args.models
    with tempfile.TemporaryDirectory() as scratch:
        killed_dir, clean_dir = Path(scratch) / "killed", Path(scratch) / "clean"
        suite = common.build_suite(killed_dir, args.tasks)
        command = [
            sys.executable,
            __file__,
            "--child",
            str(killed_dir),
            "--tasks",
            str(args.tasks),
            "--models",
            str(args.models),
            "--latency-ms",
            str(args.latency_ms),
            "--concurrency",
            str(args.concurrency),
        ]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=os.environ.copy())
        done_at_kill = 0
        started = None
        for line in process.stdout:
            if line.startswith("started"):
                started = time.perf_counter()
            elif line.startswith("done"):
                done_at_kill = int(line.split()[1])
                if done_at_kill >= args.kill_at * total:
                    os.kill(process.pid, signal.SIGKILL)
                    break
        process.wait()
        killed_after = time.perf_counter() - started if started else None
        journal = killed_dir / config.cache.path
        completed_before = {row[0] for row in sqlite3.connect(journal).execute("SELECT request_key FROM agent_calls")}

        STATS.reset()
        began = time.perf_counter()
        resumed = asyncio.run(run_suite(suite, config, data_dir=killed_dir, models=specs))
        resume_wall = time.perf_counter() - began
        asked = [s.request_key for e in resumed for s in e.steps if not s.cache_hit]
        reused = {s.request_key for e in resumed for s in e.steps if s.cache_hit}
        resume_provider_calls = STATS.attempts

        clean_suite = common.build_suite(clean_dir, args.tasks)
        began = time.perf_counter()
        clean = asyncio.run(run_suite(clean_suite, config, data_dir=clean_dir, models=specs))
        clean_wall = time.perf_counter() - began

    reissued = len(set(asked) & completed_before)
    resumed_rows, clean_rows = common.row_view(resumed), common.row_view(clean)
    differing = sum(1 for a, b in zip(resumed_rows, clean_rows) if a != b) + abs(len(resumed_rows) - len(clean_rows))
    common.write_result(
        "resume",
        {
            "setup": common.setup(args, kill_at_fraction=args.kill_at),
            "killed": {
                "returncode": process.returncode,
                "episodes_done_at_kill": done_at_kill,
                "seconds_before_kill": round(killed_after, 3) if killed_after else None,
                "journaled_calls_at_kill": len(completed_before),
            },
            "resume": {
                "wall_s": round(resume_wall, 3),
                "provider_calls": resume_provider_calls,
                "calls_reused": len(reused),
                "completed_calls_reissued": reissued,
                "failed_episodes": sum(1 for e in resumed if e.error),
            },
            "uninterrupted": {"wall_s": round(clean_wall, 3), "episodes": len(clean)},
            "rows_compared": len(clean_rows),
            "rows_differing": differing,
            "goal": "0 completed calls re-issued, final rows identical to an uninterrupted run",
            "goal_met": process.returncode == -signal.SIGKILL
            and reissued == 0
            and reused == completed_before
            and differing == 0
            and resume_provider_calls == len(asked),
        },
    )


if __name__ == "__main__":
    main()
