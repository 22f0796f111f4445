"""Loading a 10,000-tool catalog: ``load_catalog_file`` (what validate, every run and every stage use) and
``load_suite`` of a suite with that catalog, each timed cold in a fresh process and warm (a second load in the
same process, as a run's later stages do), for the catalog written as JSON (the strict JSON reader) and as block YAML
(rapidyaml, util/yaml_fast.py).
Every tool's schema differs (no check is served from a cache). Writes ``benchmarks/results/catalog_10k.json``.

    python benchmarks/catalog/run.py [--tools 10000] [--repeats 3] [--formats json,yaml]

Goal (issue 13): a 10,000-tool catalog loads in <= 2 s, once per run. Median of ``--repeats`` fresh processes;
the process CPU time of the cold load is recorded too, since wall time on a shared machine mostly measures the
other jobs (the load average before and after is in the results file). Exits 1 when a format's median cold CPU
time is over the goal.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "benchmarks" / "results" / "catalog_10k.json"

PROBE = """
import sys, time
from pathlib import Path
from toolchoice_pipeline.suites.catalog_files import load_catalog_file
from toolchoice_pipeline.suites.suite import load_suite
path, data_dir = Path(sys.argv[1]), Path(sys.argv[2])
t, c = time.perf_counter(), time.process_time(); tools = load_catalog_file(path)
cold, cold_cpu = time.perf_counter() - t, time.process_time() - c
t = time.perf_counter(); load_catalog_file(path); warm = time.perf_counter() - t
t = time.perf_counter(); suite = load_suite(data_dir, "big"); suite_s = time.perf_counter() - t
print(len(tools), cold, warm, suite_s, len(suite.catalog), cold_cpu)
"""


def catalog(n: int) -> list[dict]:
    """``n`` tools shaped like real ones: a description and 4 typed parameters, one with an enum and a pattern."""
    return [
        {
            "name": f"tool_{i:05d}",
            "description": f"Tool number {i}: reads and updates record kind {i % 97}. "
            "It cannot delete anything and it does not search across records.",
            "parameters": {
                "type": "object",
                "properties": {
                    "record_id": {
                        "type": "string",
                        "pattern": "^[a-z0-9-]{1,40}$",
                        "description": f"Id of the kind-{i} record.",
                    },
                    "limit": {"type": "integer", "minimum": 1, "maximum": 500},
                    "mode": {"type": "string", "enum": ["fast", "full", "dry_run"]},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["record_id"],
                "additionalProperties": False,
            },
        }
        for i in range(n)
    ]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--formats", default="json,yaml")
    args = parser.parse_args()
    result: dict = {
        "tools": args.tools,
        "repeats": args.repeats,
        "goal_s": 2.0,
        "formats": {},
        "load_average_before": [round(x, 1) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    for fmt in args.formats.split(","):
        result["formats"][fmt] = measure(args.tools, args.repeats, fmt)
    result["load_average_after"] = [round(x, 1) for x in os.getloadavg()]
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(
        json.dumps({fmt: {k: v for k, v in r.items() if k != "runs"} for fmt, r in result["formats"].items()}),
        "load average",
        result["load_average_before"],
        "->",
        result["load_average_after"],
    )
    return 0 if all(r["cold_cpu_s_median"] <= result["goal_s"] for r in result["formats"].values()) else 1


def measure(n_tools: int, repeats: int, fmt: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        suite = data_dir / "suites" / "big"
        suite.mkdir(parents=True)
        path = suite / "catalog.yaml"
        tools = catalog(n_tools)
        text = json.dumps(tools, indent=1) if fmt == "json" else yaml.safe_dump(tools, sort_keys=False)
        path.write_text(text, encoding="utf-8")
        (suite / "suite.yaml").write_text("name: big\n", encoding="utf-8")
        (suite / "tasks.jsonl").write_text(
            json.dumps({"id": "t1", "messages": [{"role": "user", "content": "x"}], "expected": {"tool": "tool_00001"}})
            + "\n"
        )
        runs = []
        for _ in range(repeats):
            done = subprocess.run(
                [sys.executable, "-c", PROBE, str(path), str(data_dir)],
                capture_output=True,
                text=True,
                check=True,
                cwd=ROOT,
            )
            n, cold, warm, suite_s, merged, cold_cpu = done.stdout.split()
            runs.append(
                {
                    "tools": int(n),
                    "cold_s": float(cold),
                    "cold_cpu_s": float(cold_cpu),
                    "warm_s": float(warm),
                    "load_suite_s": float(suite_s),
                    "suite_tools": int(merged),
                }
            )
        size = path.stat().st_size
    return {
        "file_bytes": size,
        "cold_s_median": round(statistics.median(r["cold_s"] for r in runs), 3),
        "cold_cpu_s_median": round(statistics.median(r["cold_cpu_s"] for r in runs), 3),
        "warm_s_median": round(statistics.median(r["warm_s"] for r in runs), 4),
        "load_suite_s_median": round(statistics.median(r["load_suite_s"] for r in runs), 3),
        "runs": runs,
    }


if __name__ == "__main__":
    sys.exit(main())
