"""The HTML release report (``toolchoice report --html``): its size and the time to build it at 73 and 7,300 tasks.

One command from the repo root (run it alone: the machine has 2 shared cores)::

    python benchmarks/report/html_report.py --tasks 73 7300            # prepare the releases, then measure
    python benchmarks/report/html_report.py --tasks 73 7300 --reuse    # measure again on the prepared releases

For each size a data directory under ``benchmarks/work/report/<n>/`` (not committed) gets the suite ``gen_<n>``
(the demo suite's catalog and its tasks repeated under new ids up to ``n``, as benchmarks/run/growth.py makes
it) and two releases run with ``--no-judge`` (models ``local/bm25-router`` and ``local/name-match``): ``r1``
(``--kind release``, the baseline) and ``r2`` after a harmful edit (Bash's description set to "A utility.", the
README's walk-through), whose gate fails. Then ``toolchoice report --html <file> --release r2`` runs ``--rounds``
times as a whole process (the console script's entry point, the checkout on ``PYTHONPATH``) under
``/usr/bin/time -v``: wall, CPU (user + system) and peak RSS; the build alone (``build_html_report``, in
process, after one warm-up) is timed with ``time.perf_counter`` (wall) and ``time.process_time`` (CPU), with the
pictures and without them (what drawing the trend and the heatmaps costs). Medians go to
``benchmarks/results/html_report.json`` (``--out`` to change) with the file's size in bytes and what it holds.
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
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks" / "run"))
sys.path.insert(0, str(REPO))

from growth import _field, _seconds, commit_of, make_data_dir, uptime  # noqa: E402

WORK = REPO / "benchmarks" / "work" / "report"
RESULTS = REPO / "benchmarks" / "results" / "html_report.json"
ENTRY = "from toolchoice_pipeline.cli import main; main()"
HARMFUL = "A utility."


def _toolchoice(data_dir: Path, *args: str, timed: bool = False) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", ENTRY, *args, "--data-dir", str(data_dir)]
    if timed:
        command = ["/usr/bin/time", "-v", *command]
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "DAGSTER_HOME": str(data_dir / "dagster_home"),
        "LITELLM_OFFLINE_MODE": "true",
    }
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=data_dir)


def degrade_bash(catalog: Path) -> None:
    """Bash's description replaced by :data:`HARMFUL` (the folded block under ``- name: Bash``)."""
    text = catalog.read_text(encoding="utf-8")
    edited, n = re.subn(r"(- name: Bash\n  description: )>-\n(?:    .*\n)+", rf'\1"{HARMFUL}"\n', text, count=1)
    if n != 1:
        raise RuntimeError(f"{catalog}: no folded description of Bash to degrade")
    catalog.write_text(edited, encoding="utf-8")


def prepare(n_tasks: int) -> Path:
    """The data directory of ``n_tasks`` with releases r1 (baseline) and r2 (harmful edit), both --no-judge."""
    data_dir = WORK / str(n_tasks)
    suite = make_data_dir(data_dir, n_tasks)
    (data_dir / "dagster_home").mkdir()
    shutil.copy(REPO / "data" / "dagster_home" / "dagster.yaml", data_dir / "dagster_home" / "dagster.yaml")
    for release, kind in (("r1", "release"), ("r2", "release")):
        if release == "r2":
            degrade_bash(data_dir / "suites" / suite / "catalog.yaml")
        started = time.perf_counter()
        done = _toolchoice(data_dir, "run", "--suite", suite, "--release", release, "--kind", kind, "--no-judge")
        if done.returncode not in (0, 1):
            raise RuntimeError(f"toolchoice run {release} exited {done.returncode}:\n{done.stderr[-3000:]}")
        print(f"{n_tasks} tasks: {release} exit {done.returncode} in {time.perf_counter() - started:.0f} s", flush=True)
    return data_dir


def build_time(data_dir: Path, rounds: int, pictures: bool = True) -> dict[str, list[float]]:
    """Wall and CPU seconds per in-process build of r2's report (after one warm-up build: matplotlib imported);
    without ``pictures`` the page has no trend and no heatmaps (what it costs apart from drawing)."""
    from toolchoice_pipeline.releases.html_report import build_html_report

    times: dict[str, list[float]] = {"wall_s": [], "cpu_s": []}
    for i in range(rounds + 1):
        wall, cpu = time.perf_counter(), time.process_time()
        build_html_report(data_dir, "r2", pictures=pictures)
        if i:
            times["wall_s"].append(round(time.perf_counter() - wall, 3))
            times["cpu_s"].append(round(time.process_time() - cpu, 3))
    return times


def command_run(data_dir: Path, out: Path) -> dict:
    done = _toolchoice(data_dir, "report", "--release", "r2", "--html", str(out), timed=True)
    if done.returncode != 0:
        raise RuntimeError(f"toolchoice report exited {done.returncode}:\n{done.stderr[-3000:]}")
    return {
        "wall_s": round(_seconds(_field(done.stderr, "Elapsed (wall clock) time (h:mm:ss or m:ss)")), 2),
        "cpu_s": round(
            float(_field(done.stderr, "User time (seconds)")) + float(_field(done.stderr, "System time (seconds)")), 2
        ),
        "peak_rss_mb": round(int(_field(done.stderr, "Maximum resident set size (kbytes)")) / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, nargs="+", default=[73, 7300])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reuse", action="store_true", help="measure on the releases already prepared")
    parser.add_argument("--prepare-only", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    report = {
        "benchmark": "html_report",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "command": "toolchoice report --release r2 --html <file> (r2: Bash's description 'A utility.', gate failed)",
        "models": ["local/bm25-router", "local/name-match"],
        "code": commit_of(REPO),
        "uptime_before": uptime(),
        "sizes": {},
    }
    for n_tasks in args.tasks:
        data_dir = WORK / str(n_tasks)
        if not (args.reuse and (data_dir / "releases" / "r2" / "scores.json").is_file()):
            prepare(n_tasks)
        if args.prepare_only:
            continue
        out = data_dir / "report.html"
        runs = [command_run(data_dir, out) for _ in range(args.rounds)]
        builds = build_time(data_dir, args.rounds)
        bare = build_time(data_dir, args.rounds, pictures=False)
        html = out.read_text(encoding="utf-8")
        entry = {
            "bytes": out.stat().st_size,
            "images": html.count("data:image/png;base64,"),
            "flipped_task_rows": html.count('class="flip"'),
            "build": builds,
            "build_wall_s_median": statistics.median(builds["wall_s"]),
            "build_cpu_s_median": statistics.median(builds["cpu_s"]),
            "build_without_pictures": bare,
            "build_without_pictures_cpu_s_median": statistics.median(bare["cpu_s"]),
            "command_runs": runs,
            **{
                f"command_{key}_median": statistics.median(r[key] for r in runs)
                for key in ("wall_s", "cpu_s", "peak_rss_mb")
            },
        }
        report["sizes"][str(n_tasks)] = entry
        print(
            n_tasks,
            {k: v for k, v in entry.items() if k not in ("command_runs", "build", "build_without_pictures")},
            flush=True,
        )
    report["uptime_after"] = uptime()
    if not args.prepare_only:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
