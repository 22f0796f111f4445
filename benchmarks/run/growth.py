"""``toolchoice run`` itself on generated suites of growing size: wall time, CPU time and peak RSS of the command.

One command from the repo root (run it alone: the machine has 2 shared cores)::

    python benchmarks/run/growth.py --tasks 73 730 7300            # this checkout, judge on (the default run)
    python benchmarks/run/growth.py --tasks 1 --rounds 2 --before /path/to/older/checkout   # A B A B

Each size gets a fresh data directory under ``benchmarks/work/run/`` (not committed) holding the repo's
``toolchoice.yaml`` (models ``local/bm25-router`` and ``local/name-match``, judge ``local/catalog-judge`` × 3)
and a suite ``gen_<n>``: the demo suite's catalog and its tasks repeated under new ids (``<id>-r<k>``) up to
``n`` tasks. The command is ``toolchoice run --suite gen_<n>`` (the console script's entry point, run with the
checkout on ``PYTHONPATH``) under ``/usr/bin/time -v``: wall = elapsed, CPU = user + system, peak RSS = its
maximum resident set size. With ``--before DIR`` every run is repeated with that checkout, alternating
(A B A B ...); the table gives medians and the after/before ratios. Results go to
``benchmarks/results/run_growth.json`` (``--out`` to change), with ``uptime`` before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "data" / "suites" / "coding_agent"
WORK = REPO / "benchmarks" / "work" / "run"
RESULTS = REPO / "benchmarks" / "results" / "run_growth.json"
ENTRY = "from toolchoice_pipeline.cli import main; main()"


def make_data_dir(directory: Path, n_tasks: int) -> str:
    """A fresh data directory with the suite ``gen_<n_tasks>``; returns the suite name."""
    shutil.rmtree(directory, ignore_errors=True)
    suite = f"gen_{n_tasks}"
    target = directory / "suites" / suite
    target.mkdir(parents=True)
    shutil.copy(REPO / "data" / "toolchoice.yaml", directory / "toolchoice.yaml")
    shutil.copy(DEMO / "catalog.yaml", target / "catalog.yaml")
    (target / "suite.yaml").write_text(
        f"name: {suite}\ncatalog: catalog.yaml\ntasks: tasks.jsonl\nmatch_profile: key_args\n", encoding="utf-8"
    )
    lines = [json.loads(line) for line in (DEMO / "tasks.jsonl").read_text(encoding="utf-8").splitlines() if line]
    with (target / "tasks.jsonl").open("w", encoding="utf-8") as handle:
        for i in range(n_tasks):
            task = dict(lines[i % len(lines)])
            task["id"] = f"{task['id']}-r{i // len(lines)}"
            handle.write(json.dumps(task, ensure_ascii=False) + "\n")
    return suite


def _field(text: str, label: str) -> str:
    match = re.search(rf"^\s*{re.escape(label)}: (.+)$", text, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"/usr/bin/time gave no '{label}'")
    return match.group(1).strip()


def _seconds(clock: str) -> float:
    parts = [float(p) for p in clock.split(":")]
    return sum(p * 60**i for i, p in enumerate(reversed(parts)))


def run_once(code: Path, n_tasks: int, label: str, judge: bool) -> dict:
    data_dir = WORK / f"{label}-{n_tasks}"
    suite = make_data_dir(data_dir, n_tasks)
    command = [
        "/usr/bin/time",
        "-v",
        sys.executable,
        "-c",
        ENTRY,
        "run",
        "--suite",
        suite,
        "--release",
        "bench",
        "--data-dir",
        str(data_dir),
    ] + ([] if judge else ["--no-judge"])
    env = {**os.environ, "PYTHONPATH": str(code), "DAGSTER_HOME": str(data_dir / "dagster_home")}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=data_dir)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"toolchoice run exited {done.returncode}:\n{done.stderr[-3000:]}")
    scores = json.loads((data_dir / "releases" / "bench" / "scores.json").read_text(encoding="utf-8"))
    result = {
        "wall_s": round(_seconds(_field(done.stderr, "Elapsed (wall clock) time (h:mm:ss or m:ss)")), 2),
        "cpu_s": round(
            float(_field(done.stderr, "User time (seconds)")) + float(_field(done.stderr, "System time (seconds)")), 2
        ),
        "peak_rss_mb": round(int(_field(done.stderr, "Maximum resident set size (kbytes)")) / 1024, 1),
        "exit_code": done.returncode,
        "episodes": sum(m["n_tasks"] for m in scores["models"].values()),
    }
    shutil.rmtree(data_dir, ignore_errors=True)
    return result


def commit_of(code: Path) -> str:
    """The checkout's short commit (``+changes`` when its tracked files differ), else its path (e.g. a
    ``git archive`` of an older commit)."""
    done = subprocess.run(["git", "-C", str(code), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if done.returncode != 0:
        return str(code)
    dirty = subprocess.run(
        ["git", "-C", str(code), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    ).stdout.strip()
    return done.stdout.strip() + ("+changes" if dirty else "")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, nargs="+", default=[73, 730, 7300])
    parser.add_argument("--rounds", type=int, default=1, help="runs per size (and per checkout)")
    parser.add_argument("--before", type=Path, default=None, help="an older checkout to alternate with")
    parser.add_argument("--no-judge", action="store_true", help="run with --no-judge")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    codes = {"after": REPO} | ({"before": args.before.resolve()} if args.before else {})
    report = {
        "benchmark": "toolchoice_run_growth",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "command": "toolchoice run --suite gen_<n> --release bench" + (" --no-judge" if args.no_judge else ""),
        "models": ["local/bm25-router", "local/name-match"],
        "judge": not args.no_judge,
        "code": {label: commit_of(code) for label, code in codes.items()},
        "uptime_before": uptime(),
        "sizes": {},
    }
    for n_tasks in args.tasks:
        runs: dict[str, list[dict]] = {label: [] for label in codes}
        for _ in range(args.rounds):
            for label, code in codes.items():  # alternating: after, before, after, before ...
                runs[label].append(run_once(code, n_tasks, label, judge=not args.no_judge))
                print(n_tasks, label, runs[label][-1], flush=True)
        entry = {
            label: {
                "runs": items,
                **{
                    f"{key}_median": statistics.median(r[key] for r in items)
                    for key in ("wall_s", "cpu_s", "peak_rss_mb")
                },
            }
            for label, items in runs.items()
        }
        if "before" in entry:
            entry["ratio_after_over_before"] = {
                key: round(entry["after"][f"{key}_median"] / entry["before"][f"{key}_median"], 3)
                for key in ("wall_s", "cpu_s", "peak_rss_mb")
            }
        report["sizes"][str(n_tasks)] = entry
    report["uptime_after"] = uptime()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(
        json.dumps(
            {
                n: {k: v for k, v in e.items() if k != "after" and k != "before"}
                | {label: {k: v for k, v in e[label].items() if k != "runs"} for label in codes}
                for n, e in report["sizes"].items()
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
