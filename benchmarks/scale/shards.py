"""Shards on worker processes: ``toolchoice run`` in one process against ``toolchoice run --workers N``.

One command from the repo root (run it alone: the machine has 2 shared cores)::

    python benchmarks/scale/shards.py --tasks 3000 --workers 2 --rounds 2

The workload is CPU-bound: the suite ``gen_<n>`` of ``benchmarks/run/growth.py`` (the demo catalog, its tasks
repeated under new ids) on the repo's two local models and the offline judge × 3, so ``--tasks 3000`` is 6,000
episodes. Each round runs the in-process command and the ``--workers N`` command on fresh data directories,
alternating (A B A B ...), under ``/usr/bin/time -v``: wall = elapsed; CPU = user + system of the command and
the processes it waited for (a multiprocess run's workers are not among them), and the machine's busy CPU
seconds during the run from ``/proc/stat`` (every process: compare it only on an otherwise idle machine). ``concurrency.shard_episodes`` is set so each model's tasks make
``--shards-per-model`` shards (default 2) in both commands.
From the ``--workers`` run's Dagster event log it also reads each step's start-up cost (``STEP_WORKER_STARTING``
→ ``STEP_START``: forking a worker, opening the instance, loading the step's inputs) and the steps' count.
Results go to ``benchmarks/results/scale_shards.json`` with ``uptime`` before and after.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1].parent
WORK = REPO / "benchmarks" / "work" / "scale"
RESULTS = REPO / "benchmarks" / "results" / "scale_shards.json"
ENTRY = "from toolchoice_pipeline.cli import main; main()"


def _growth():
    spec = importlib.util.spec_from_file_location("growth", REPO / "benchmarks" / "run" / "growth.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def step_startup_s(data_dir: Path) -> list[float]:
    """Seconds from STEP_WORKER_STARTING to STEP_START of every step of the data dir's one run."""
    runs = [p for p in (data_dir / "dagster_home" / "history" / "runs").glob("*.db") if p.name != "index.db"]
    with sqlite3.connect(runs[0]) as con:
        rows = con.execute(
            "SELECT step_key, dagster_event_type, timestamp FROM event_logs "
            "WHERE dagster_event_type IN ('STEP_WORKER_STARTING', 'STEP_START') ORDER BY id"
        ).fetchall()
    started: dict[str, datetime] = {}
    gaps = []
    for step, kind, stamp in rows:
        moment = datetime.fromisoformat(str(stamp))
        if kind == "STEP_WORKER_STARTING":
            started[step] = moment
        elif step in started:
            gaps.append((moment - started.pop(step)).total_seconds())
    return gaps


def machine_busy_s() -> float:
    """CPU seconds the whole machine has spent busy (every process, from /proc/stat): the worker processes of a
    multiprocess run are forked by a server the command does not wait for, so ``/usr/bin/time`` misses them."""
    fields = [int(x) for x in open("/proc/stat", encoding="ascii").readline().split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def run_once(growth, n_tasks: int, workers: int | None, label: str, shards_per_model: int) -> dict:
    data_dir = WORK / label
    suite = growth.make_data_dir(data_dir, n_tasks)
    config_path = data_dir / "toolchoice.yaml"
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    config.setdefault("concurrency", {})["shard_episodes"] = -(-n_tasks // shards_per_model)
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    command = ["/usr/bin/time", "-v", sys.executable, "-c", ENTRY, "run", "--suite", suite, "--data-dir", str(data_dir)]
    if workers:
        command += ["--workers", str(workers)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "LITELLM_OFFLINE_MODE": "true", "COLUMNS": "200"}
    busy_before = machine_busy_s()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO)
    machine_cpu = machine_busy_s() - busy_before
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{label}: exit {done.returncode}\n{done.stderr[-3000:]}")
    wall = growth._seconds(growth._field(done.stderr, "Elapsed (wall clock) time (h:mm:ss or m:ss)"))
    cpu = float(growth._field(done.stderr, "User time (seconds)")) + float(
        growth._field(done.stderr, "System time (seconds)")
    )
    result = {
        "label": label,
        "workers": workers,
        "episodes": 2 * n_tasks,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),  # the command and what it waited for (not a multiprocess run's workers)
        "machine_cpu_s": round(machine_cpu, 1),  # every process on the machine during the run
        "peak_rss_mb": round(int(growth._field(done.stderr, "Maximum resident set size (kbytes)")) / 1024, 1),
    }
    if workers:
        gaps = step_startup_s(data_dir)
        result["steps"] = len(gaps)
        result["step_startup_s_median"] = round(statistics.median(gaps), 2)
        result["step_startup_s_total"] = round(sum(gaps), 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=3000, help="tasks per model (2 models)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--shards-per-model", type=int, default=2, help="both commands run the same shards")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    growth = _growth()
    load_before = os.getloadavg()
    runs = []
    for round_ in range(args.rounds):
        for workers in (None, args.workers):
            label = f"{'workers' + str(workers) if workers else 'in_process'}-{round_}"
            runs.append(run_once(growth, args.tasks, workers, label, args.shards_per_model))
            print(json.dumps(runs[-1]), flush=True)
    single = [r for r in runs if not r["workers"]]
    sharded = [r for r in runs if r["workers"]]
    wall_single, wall_sharded = (
        statistics.median(r["wall_s"] for r in single),
        statistics.median(r["wall_s"] for r in sharded),
    )
    summary = {
        "episodes": 2 * args.tasks,
        "workers": args.workers,
        "median_wall_s": {"in_process": wall_single, "workers": wall_sharded},
        "median_machine_cpu_s": {
            "in_process": statistics.median(r["machine_cpu_s"] for r in single),
            "workers": statistics.median(r["machine_cpu_s"] for r in sharded),
        },
        "wall_speedup": round(wall_single / wall_sharded, 2),
        "step_startup_s_median": statistics.median(r["step_startup_s_median"] for r in sharded),
    }
    document = {
        "command": " ".join(["python", "benchmarks/scale/shards.py", *sys.argv[1:]]),
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "runs": runs,
        "summary": summary,
    }
    args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
