"""The demo-suite walk-through on the real model (``needle/needle-3``): the figures of finished releases, read
from a data directory, and the whole run's wall and CPU time from ``/usr/bin/time -v`` reports.

The runs themselves are the README's commands (docs/real_model.md gives them with this script's use); each was
started as ``/usr/bin/time -v -o <release>.time nice -n 5 toolchoice run ... --data-dir DIR``. Then::

    python benchmarks/real_model/demo_figures.py --data-dir DIR --release needle-r1 --time needle-r1=r1.time \\
        [--release ...] --out benchmarks/results/real_model_demo.json

Per release: the model's scores (right tool, right args, TSQ, calls per task, flip rate with repeats), the
confusion pairs, the gate's verdict (and its confusion changes), and per call from ``agent_calls``: the model's
own time ``provider_ms`` and the wait for the engine ``queued_ms`` (median, p90, max; ms), the confidence, and the
number of calls; with a time report also the run's wall seconds, CPU seconds (user + sys) and CPU seconds per
model call (the run's CPU over its calls: the engine is the only heavy work, the rest of a run costs a few CPU
seconds, docs/real_model.md).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path
from typing import Any

MODEL = "needle/needle-3"
SCORE_FIELDS = (
    *("n_tasks", "n_samples", "n_scored", "errors", "right_tool_pct", "right_args_pct", "right_tool_ci95_pct"),
    *("tsq_mean", "calls_per_task", "repeats", "pass_k_pct", "pass_at_k_pct", "flaky_tasks", "flip_rate"),
)


def time_report(path: Path) -> dict[str, float]:
    """``{"wall_s", "user_s", "sys_s", "cpu_s", "max_rss_mb", "exit"}`` from a ``/usr/bin/time -v`` report."""
    text = path.read_text(encoding="utf-8")

    def field(label: str) -> str:
        found = re.search(rf"^\s*{re.escape(label)}: (.+)$", text, re.M)
        if not found:
            raise SystemExit(f"{path}: no '{label}' line (not a /usr/bin/time -v report?)")
        return found.group(1).strip()

    wall = 0.0
    for part in field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":"):
        wall = wall * 60 + float(part)
    user, system = float(field("User time (seconds)")), float(field("System time (seconds)"))
    return {
        "wall_s": round(wall, 1),
        "user_s": user,
        "sys_s": system,
        "cpu_s": round(user + system, 1),
        "max_rss_mb": round(int(field("Maximum resident set size (kbytes)")) / 1024, 1),
        "exit": int(field("Exit status")),
    }


def quantiles(values: list[float], digits: int = 1) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p90": None, "max": None}
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), digits),
        "p90": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], digits),
        "max": round(ordered[-1], digits),
    }


def release_figures(data_dir: Path, release: str, time_file: Path | None) -> dict[str, Any]:
    import duckdb

    scores = json.loads((data_dir / "releases" / release / "scores.json").read_text(encoding="utf-8"))
    model = scores["models"][MODEL]
    with duckdb.connect(str(data_dir / "warehouse" / "toolchoice.duckdb"), read_only=True) as con:
        calls = con.execute(
            "SELECT provider_ms, queued_ms, confidence, step, cache_hit FROM agent_calls "
            "WHERE release_id = ? AND model = ?",
            [release, MODEL],
        ).fetchall()
    fresh = [c for c in calls if not c[4]]  # a call served from the journal made no engine call in this run
    out: dict[str, Any] = {
        "release": release,
        "kind": scores["kind"],
        "catalog_version": scores["catalog_version"],
        "baseline_release_id": scores.get("baseline_release_id"),
        "scores": {key: model.get(key) for key in SCORE_FIELDS},
        "confusion": model.get("confusion", []),
        "gate": {
            key: scores["gate"].get(key)
            for key in ("passed", "failures", "comparisons", "notes", "confusion_changes", "catalog_changes")
        },
        "calls": {
            "n": len(calls),
            "engine_calls": len(fresh),
            "first_steps": sum(1 for c in calls if c[3] == 0),
            "provider_ms": quantiles([c[0] for c in fresh if c[0] is not None]),
            "queued_ms": quantiles([c[1] for c in fresh if c[1] is not None]),
            "confidence": quantiles([c[2] for c in calls if c[2] is not None], digits=3),
        },
    }
    if time_file is not None:
        measured = time_report(time_file)
        out["run"] = {
            **measured,
            "cpu_s_per_engine_call": round(measured["cpu_s"] / len(fresh), 1) if fresh else None,
            "wall_s_per_engine_call": round(measured["wall_s"] / len(fresh), 1) if fresh else None,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, action="append", required=True, help="one per --release, or one")
    parser.add_argument("--release", action="append", required=True)
    parser.add_argument("--time", action="append", default=[], metavar="RELEASE=FILE")
    parser.add_argument("--note", default=None, help="the conditions of the runs (load, machine)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    times = dict(item.split("=", 1) for item in args.time)
    dirs = args.data_dir if len(args.data_dir) == len(args.release) else args.data_dir[:1] * len(args.release)
    releases = [
        release_figures(d, r, Path(times[r]) if r in times else None) for d, r in zip(dirs, args.release, strict=True)
    ]
    document = {"model": MODEL, "suite": "coding_agent", "note": args.note, "releases": releases}
    args.out.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
