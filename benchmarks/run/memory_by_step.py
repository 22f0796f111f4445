"""Peak RSS of ``toolchoice run`` per Dagster step: where a release's memory goes.

    python benchmarks/run/memory_by_step.py DATA_DIR SUITE      # e.g. a data dir made by benchmarks/run/growth.py

Runs ``toolchoice run --no-judge --release mem`` in this process (the CLI's ``main``) while a thread samples the
process's resident set size (``VmRSS`` of ``/proc/self/status``) every 0.2 s; afterwards it reads each step's
start and end from the run's Dagster event log and prints the highest sample inside each step (MB), then the
overall peak. Prints to stderr; ``--out FILE`` also writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import sqlite3
import threading
import time

samples: list[tuple[float, float]] = []


def _sample() -> None:
    while True:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS"):
                    samples.append((time.time(), int(line.split()[1]) / 1024))
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir")
    parser.add_argument("suite")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    threading.Thread(target=_sample, daemon=True).start()
    from toolchoice_pipeline.cli import main as toolchoice

    try:
        toolchoice(["run", "--suite", args.suite, "--data-dir", args.data_dir, "--no-judge", "--release", "mem"])
    except SystemExit:
        pass
    [run_db] = [d for d in glob.glob(f"{args.data_dir}/dagster_home/history/runs/*.db") if "index" not in d]
    with sqlite3.connect(run_db) as con:
        rows = con.execute(
            "SELECT timestamp, step_key, dagster_event_type FROM event_logs WHERE dagster_event_type IN "
            "('STEP_START', 'STEP_SUCCESS', 'STEP_FAILURE') ORDER BY id"
        ).fetchall()
    spans: dict[str, list[float]] = {}
    for stamp, step, kind in rows:
        moment = datetime.datetime.fromisoformat(str(stamp)).replace(tzinfo=datetime.UTC).timestamp()
        spans.setdefault(step, [moment, moment])
        if kind != "STEP_START":
            spans[step][1] = moment
    steps = {}
    for step, (start, end) in spans.items():
        inside = [rss for moment, rss in samples if start <= moment <= end]
        steps[step] = {"seconds": round(end - start, 1), "peak_rss_mb": round(max(inside), 1) if inside else None}
    figures = {"peak_rss_mb": round(max(rss for _, rss in samples), 1), "steps": steps}
    print(json.dumps(figures, indent=1), file=__import__("sys").stderr)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(figures, handle, indent=1)


if __name__ == "__main__":
    main()
