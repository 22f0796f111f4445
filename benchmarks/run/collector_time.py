"""Python's garbage collector inside ``toolchoice run``: its CPU time and collections, with the batch settings
(``toolchoice_pipeline/util/collector.py``, what the command uses) and with Python's defaults.

One command from the repo root (run it alone: the machine has 2 shared cores)::

    python benchmarks/run/collector_time.py                  # the peers workload: 2,000 tasks × 3 sim models
    python benchmarks/run/collector_time.py --tasks 200      # a quick look

Each side is one ``toolchoice run --no-judge`` in a fresh process on a fresh copy of ``peers.py``'s data
directory (the synthetic suite, ``sim/`` models at 50 ms, 64 in flight), started through a small bootstrap that
times every collection with ``gc.callbacks`` (CPU seconds by ``time.process_time``, the whole process's) and counts
them by generation. The ``default`` side keeps Python's own settings (the entry point's thresholds and the
steps' freeze replaced, in that process only).
Sides alternate (batch, default, batch, ...). Results: ``benchmarks/results/run_collector.json`` (``--out``).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks" / "execution"))
sys.path.insert(0, str(REPO / "benchmarks" / "run"))

import common  # noqa: E402
from growth import commit_of, uptime  # noqa: E402
from peers import write_data_dir  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "run_collector.json"

# Runs the console script's entry point with every collection timed; argv: side, report file, then the CLI's.
BOOTSTRAP = """
import contextlib, gc, json, sys, time
side, report = sys.argv[1], sys.argv[2]
timing = {"gc_cpu_s": 0.0, "collections": [0, 0, 0]}
started = [0.0]
def timed(phase, info):
    if phase == "start":
        started[0] = time.process_time()
    else:
        timing["gc_cpu_s"] += time.process_time() - started[0]
        timing["collections"][info["generation"]] += 1
gc.callbacks.append(timed)
if side == "default":
    import toolchoice_pipeline.cli as command_line
    import toolchoice_pipeline.defs.resources as resources
    command_line.BATCH_THRESHOLDS = gc.get_threshold()
    resources.collector_for_batch = contextlib.nullcontext
sys.argv = ["toolchoice", *sys.argv[3:]]
from toolchoice_pipeline.cli import main
try:
    main()
except SystemExit as done:
    timing["exit"] = done.code
finally:
    timing["process_cpu_s"] = time.process_time()
    with open(report, "w") as out:
        json.dump(timing, out)
"""


def one_run(side: str, clean: Path, work: Path) -> dict:
    data_dir = work / "run"
    shutil.rmtree(data_dir, ignore_errors=True)
    shutil.copytree(clean, data_dir)
    report = work / "report.json"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "LITELLM_OFFLINE_MODE": "true",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    command = [sys.executable, "-c", BOOTSTRAP, side, str(report)]
    command += ["run", "--suite", "synthetic", "--release", "p", "--no-judge", "--data-dir", str(data_dir)]
    subprocess.run(command, env=env, check=False, capture_output=True)
    timing = json.loads(report.read_text())
    timing["gc_cpu_s"] = round(timing["gc_cpu_s"], 3)
    timing["process_cpu_s"] = round(timing["process_cpu_s"], 3)
    return {"side": side, **timing}


def main() -> None:
    parser = common.argument_parser(__doc__)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="collector-") as tmp:
        work = Path(tmp)
        write_data_dir(work / "clean", args)
        runs, load = [], [uptime()]
        for _ in range(args.rounds):
            for side in ("batch", "default"):
                runs.append(one_run(side, work / "clean", work))
                print(json.dumps(runs[-1]), flush=True)
        load.append(uptime())
    medians = {
        side: {
            key: statistics.median(r[key] for r in runs if r["side"] == side) for key in ("gc_cpu_s", "process_cpu_s")
        }
        for side in ("batch", "default")
    }
    result = {
        "benchmark": "run_collector",
        "command": " ".join(["python", "benchmarks/run/collector_time.py", *sys.argv[1:]]),
        "code": commit_of(REPO),
        "workload": {k: getattr(args, k) for k in ("tasks", "models", "latency_ms", "concurrency")},
        "runs": runs,
        "medians": medians,
        "uptime": load,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(medians))


if __name__ == "__main__":
    main()
