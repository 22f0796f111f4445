"""Ingest benchmark: throughput and peak memory of ``toolchoice ingest claude-code`` on synthetic sessions.

One command from the repo root (run it alone: the machine has 2 shared cores)::

    python benchmarks/ingest/run.py                 # 10 MB and 50 MB sessions
    python benchmarks/ingest/run.py --sizes 10 50 200 --repeat 2

Goal: ≥ 50 MB of transcript per minute, and flat memory: peak RSS independent of the file size. Each size is
ingested in its own process (interpreter start, imports, reading, sanitising, writing and checking the suite);
the child reports its ingest time and its peak RSS (``ru_maxrss``) and its RSS after the imports, so the growth
attributable to the ingest is visible. Session files are generated once under ``benchmarks/work/ingest/``
(not committed); results go to ``benchmarks/results/ingest_claude_code.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
WORK = REPO / "benchmarks" / "work" / "ingest"
RESULTS = REPO / "benchmarks" / "results" / "ingest_claude_code.json"
CATALOG = REPO / "data" / "suites" / "coding_agent" / "catalog.yaml"
GOAL = {"mb_per_minute": 50.0, "peak_rss": "independent of file size"}
MB = 1_000_000


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def child(session: Path, data_dir: Path) -> None:
    """Run one ingest in this process and print its measurements as JSON."""
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    from toolchoice_pipeline.ingest import IngestOptions, ingest_claude_code

    after_imports = _rss_mb()
    started = time.perf_counter()
    report = ingest_claude_code([session], IngestOptions(suite="bench", data_dir=data_dir, catalog=CATALOG, force=True))
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "ingest_s": seconds,
                "peak_rss_mb": _rss_mb(),
                "rss_after_imports_mb": after_imports,
                "turns": report.turns,
                "tasks": report.tasks,
                "redactions": dict(report.redactions),
                "tasks_bytes": (report.suite_dir / "tasks.jsonl").stat().st_size,
                "replay_bytes": (report.suite_dir / "replay.jsonl").stat().st_size,
            }
        )
    )


def measure(size_mb: int, repeat: int) -> dict:
    from synthetic import generate

    WORK.mkdir(parents=True, exist_ok=True)
    session = WORK / f"session_{size_mb}mb.jsonl"
    marker = WORK / f"session_{size_mb}mb.json"
    if not marker.exists():
        started = time.perf_counter()
        info = generate(session, size_mb * MB)
        info["generate_s"] = round(time.perf_counter() - started, 1)
        marker.write_text(json.dumps(info))
    info = json.loads(marker.read_text())
    runs = []
    for _ in range(repeat):
        data_dir = WORK / f"data_{size_mb}mb"
        shutil.rmtree(data_dir, ignore_errors=True)
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(session), str(data_dir)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        run = json.loads(out.strip().splitlines()[-1])
        run["process_wall_s"] = time.perf_counter() - started
        runs.append(run)
    ingest_s = statistics.median(r["ingest_s"] for r in runs)
    process_s = statistics.median(r["process_wall_s"] for r in runs)
    last = runs[-1]
    return {
        "file": {"bytes": info["bytes"], "lines": info["lines"], "turns": info["turns"], "steps": info["steps"]},
        "ingest_s_median": round(ingest_s, 2),
        "process_wall_s_median": round(process_s, 2),
        "mb_per_minute_ingest": round(info["bytes"] / MB / ingest_s * 60, 1),
        "mb_per_minute_process": round(info["bytes"] / MB / process_s * 60, 1),
        "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs), 1),
        "rss_after_imports_mb": round(statistics.median(r["rss_after_imports_mb"] for r in runs), 1),
        "output": {
            "turns": last["turns"],
            "tasks": last["tasks"],
            "tasks_bytes": last["tasks_bytes"],
            "replay_bytes": last["replay_bytes"],
            "redactions": last["redactions"],
        },
        "runs": [
            {k: round(v, 2) if isinstance(v, float) else v for k, v in r.items() if k != "redactions"} for r in runs
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", nargs=2, metavar=("SESSION", "DATA_DIR"), help=argparse.SUPPRESS)
    parser.add_argument("--sizes", nargs="+", type=int, default=[10, 50], help="session sizes in MB")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), Path(args.child[1]))
        return
    sys.path.insert(0, str(HERE))
    sizes = {f"{size}mb": measure(size, args.repeat) for size in args.sizes}
    peaks = [s["peak_rss_mb"] for s in sizes.values()]
    slowest = min(s["mb_per_minute_ingest"] for s in sizes.values())
    result = {
        "benchmark": "ingest_claude_code",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "goal": GOAL,
        "sizes": sizes,
        "summary": {
            "slowest_mb_per_minute_ingest": slowest,
            "peak_rss_mb_by_size": dict(zip(sizes, peaks)),
            "peak_rss_spread_mb": round(max(peaks) - min(peaks), 1),
            "throughput_goal_met": slowest >= GOAL["mb_per_minute"],
        },
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["summary"], indent=2))


if __name__ == "__main__":
    main()
