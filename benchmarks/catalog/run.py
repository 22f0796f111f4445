"""Loading a 10,000-tool catalog: ``load_catalog_file`` (what validate, every run and every stage use) and
``load_suite`` of a suite with that catalog, each timed cold in a fresh process and warm (a second load in the
same process, as a run's later stages do). Writes ``benchmarks/results/catalog_10k.json``.

    python benchmarks/catalog/run.py [--tools 10000] [--repeats 3]

Goal (issue 13): a 10,000-tool catalog loads in <= 2 s, once per run. Median of ``--repeats`` fresh processes.
"""

from __future__ import annotations

import argparse
import json
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
from toolchoice_pipeline.catalog_files import load_catalog_file
from toolchoice_pipeline.suite import load_suite
path, data_dir = Path(sys.argv[1]), Path(sys.argv[2])
t = time.perf_counter(); tools = load_catalog_file(path); cold = time.perf_counter() - t
t = time.perf_counter(); load_catalog_file(path); warm = time.perf_counter() - t
t = time.perf_counter(); suite = load_suite(data_dir, "big"); suite_s = time.perf_counter() - t
print(len(tools), cold, warm, suite_s, len(suite.catalog))
"""


def catalog(n: int) -> list[dict]:
    """``n`` tools shaped like real ones: a description and 4 typed parameters, one with an enum and a pattern."""
    return [{"name": f"tool_{i:05d}", "description": f"Tool number {i}: reads and updates record kind {i % 97}. "
             "It cannot delete anything and it does not search across records.",
             "parameters": {"type": "object", "properties": {
                 "record_id": {"type": "string", "pattern": "^[a-z0-9-]{1,40}$", "description": "Record id."},
                 "limit": {"type": "integer", "minimum": 1, "maximum": 500},
                 "mode": {"type": "string", "enum": ["fast", "full", "dry_run"]},
                 "tags": {"type": "array", "items": {"type": "string"}}},
                 "required": ["record_id"], "additionalProperties": False}} for i in range(n)]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        suite = data_dir / "suites" / "big"
        suite.mkdir(parents=True)
        path = suite / "catalog.yaml"
        path.write_text(yaml.safe_dump(catalog(args.tools), sort_keys=False), encoding="utf-8")
        (suite / "suite.yaml").write_text("name: big\n", encoding="utf-8")
        (suite / "tasks.jsonl").write_text(json.dumps({"id": "t1", "messages": [{"role": "user", "content": "x"}],
                                                        "expected": {"tool": "tool_00001"}}) + "\n")
        runs = []
        for _ in range(args.repeats):
            done = subprocess.run([sys.executable, "-c", PROBE, str(path), str(data_dir)], capture_output=True,
                                  text=True, check=True, cwd=ROOT)
            n, cold, warm, suite_s, merged = done.stdout.split()
            runs.append({"tools": int(n), "cold_s": float(cold), "warm_s": float(warm), "load_suite_s": float(suite_s),
                         "suite_tools": int(merged)})
        size = path.stat().st_size
    result = {"tools": args.tools, "file_bytes": size, "repeats": args.repeats,
              "cold_s_median": round(statistics.median(r["cold_s"] for r in runs), 3),
              "warm_s_median": round(statistics.median(r["warm_s"] for r in runs), 4),
              "load_suite_s_median": round(statistics.median(r["load_suite_s"] for r in runs), 3),
              "goal_s": 2.0, "runs": runs}
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}))
    return 0 if result["cold_s_median"] <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())
