"""CPU time of one demo release launched the UI's way vs ``toolchoice run`` (issue 10: one run path).

Run from the repo root: ``python benchmarks/pipeline/ui_launch_cpu.py [--repeats N] [--workers W]``.

Each launch is its own cold process on its own fresh copy of ``data/`` (no call journal, no Dagster history):

- ``cli``: ``toolchoice run --release cli-N`` (the demo suite, its default models, the offline judge);
- ``ui``: what a run worker does for "Materialize all" of the release group on a partition added in the UI,
  through Dagster's own command: ``dagster asset materialize -m toolchoice_pipeline.definitions --select
  <the release assets> --partition ui-N --config-json <launchpad: suite, kind>``: the default asset job with
  the Definitions' executor, in one process (the partition is added first, outside the measurement).

With ``--workers W``: ``toolchoice run --workers W`` against the launchpad's multiprocess configuration
(``execution: {config: {multiprocess: {max_concurrent: W}}}``), i.e. the UI's multiprocess run.

Measures the user + system CPU seconds of each child's whole process tree (this process is a child subreaper:
the forkserver and step processes of a multiprocess run are reaped and counted too) and its wall seconds; writes
``benchmarks/results/pipeline_ui_launch_cpu.json`` (``pipeline_ui_launch_cpu_workers<W>.json``) with the
load average before and after, each run and the medians.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results" / "pipeline_ui_launch_cpu.json"
sys.path.insert(0, str(REPO))

RELEASE_ASSETS = "release_snapshot,tool_catalog,eval_tasks,agent_runs,judge_votes,task_scores,release_scores,baseline"
LAUNCHPAD = json.dumps({"ops": {"release_snapshot": {"config": {"suite": "coding_agent", "kind": "adhoc"}}}})
ADD_PARTITION = (
    "import sys, dagster as dg; i = dg.DagsterInstance.get(); i.add_dynamic_partitions('release', [sys.argv[1]])"
)


PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Orphaned descendants (a multiprocess run's forkserver) become our children, so their CPU is counted."""
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def measured(command: list[str], env: dict[str, str]) -> dict[str, float | int]:
    start = time.monotonic()
    # stderr to a file, never a pipe read after the wait: a run writing more than a pipe holds would block on it
    errors = tempfile.TemporaryFile()
    process = subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=errors)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - start
    cpu = usage.ru_utime + usage.ru_stime
    while True:  # the descendants the command left behind: reaped here, their CPU counted
        try:
            _, _, orphan = os.wait4(-1, 0)
        except ChildProcessError:
            break
        cpu += orphan.ru_utime + orphan.ru_stime
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        errors.seek(0)
        print(errors.read().decode(errors="replace")[-3000:], file=sys.stderr)
    errors.close()
    return {"exit_code": code, "cpu_s": round(cpu, 2), "wall_s": round(wall, 2)}


def copy_data(target: Path) -> Path:
    skip = {"releases", "warehouse", "cache", "reports", "dagster_home"}
    shutil.copytree(
        REPO / "data", target, ignore=lambda d, names: [n for n in names if Path(d) == REPO / "data" and n in skip]
    )
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--workers", type=int, default=None, help="multiprocess runs with W worker processes")
    args = parser.parse_args()
    become_subreaper()
    launchpad = json.loads(LAUNCHPAD)
    if args.workers is not None:
        launchpad["execution"] = {"config": {"multiprocess": {"max_concurrent": args.workers}}}
    results = (
        RESULTS if args.workers is None else RESULTS.with_name(f"pipeline_ui_launch_cpu_workers{args.workers}.json")
    )
    base_env = {
        **os.environ,
        "LITELLM_OFFLINE_MODE": "true",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONPATH": str(REPO),
        "DAGSTER_DISABLE_TELEMETRY": "yes",
    }
    toolchoice = str(Path(sys.executable).with_name("toolchoice"))
    runs: dict[str, list[dict]] = {"cli": [], "ui": []}
    load_before = os.getloadavg()
    dagster = str(Path(sys.executable).with_name("dagster"))
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(args.repeats):
            for mode in ("cli", "ui"):  # alternated, so a change of load hits both
                data_dir = copy_data(Path(tmp) / f"{mode}-{n}" / "data")
                home = data_dir / "dagster_home"
                home.mkdir(exist_ok=True)
                (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
                env = {**base_env, "TOOLCHOICE_DATA_DIR": str(data_dir), "DAGSTER_HOME": str(home)}
                if mode == "cli":
                    command = [toolchoice, "run", "--data-dir", str(data_dir), "--release", f"cli-{n}"]
                    if args.workers is not None:
                        command += ["--workers", str(args.workers)]
                else:
                    subprocess.run(
                        [sys.executable, "-c", ADD_PARTITION, f"ui-{n}"], env=env, check=True, capture_output=True
                    )
                    command = [
                        dagster,
                        "asset",
                        "materialize",
                        "-m",
                        "toolchoice_pipeline.definitions",
                        "--select",
                        RELEASE_ASSETS,
                        "--partition",
                        f"ui-{n}",
                        "--config-json",
                        json.dumps(launchpad),
                    ]
                runs[mode].append(measured(command, env))
                print(mode, runs[mode][-1], flush=True)
    mean = {mode: round(sum(r["cpu_s"] for r in rows) / len(rows), 2) for mode, rows in runs.items()}
    median = {mode: round(statistics.median(r["cpu_s"] for r in rows), 2) for mode, rows in runs.items()}
    result = {
        "benchmark": "pipeline_ui_launch_cpu",
        "command": f"python benchmarks/pipeline/ui_launch_cpu.py --repeats {args.repeats}"
        + (f" --workers {args.workers}" if args.workers is not None else ""),
        "cpu_accounting": "user + sys of the whole process tree (subreaper)",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count()},
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "runs": runs,
        "mean_cpu_s": mean,
        "median_cpu_s": median,
        "ui_over_cli_cpu_ratio": round(median["ui"] / median["cli"], 3),
        "ui_over_cli_cpu_ratio_of": "medians",
        "goal": "ui within 10% of cli (ratio <= 1.10)",
    }
    results.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if all(r["exit_code"] == 0 for rows in runs.values() for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
