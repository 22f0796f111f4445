"""OTel producers: tasks ingested / expected and TSQ of the recorded choices, per real-library fixture.

One command from the repo root (run it alone: the machine has 2 shared cores; each `toolchoice run` takes 10-100 s depending
on the load, so name a few fixtures at a time)::

    python benchmarks/ingest/otel_producers.py [FIXTURE...]   # only these (the other rows are kept)
    python benchmarks/ingest/otel_producers.py --hallucinated # each run with one hallucinated call (see hallucinated())

For every fixture in ``toolchoice_pipeline_tests/data/otel/`` made with content capture on: ``toolchoice
ingest otel`` (the trace's own catalog; traces that record none get the agent's tools as a live dump,
``ops_agent_tools.json``), then ``toolchoice run --suite <it> --models replay/...`` with the offline judge
(``local/catalog-judge``). One trace without definitions is also graded against the curated demo catalog
(``--catalog-from curated``) to show what a catalog the agent never had does to TSQ. Results go to
``benchmarks/results/otel_producers.json``; data directories to ``benchmarks/work/otel/`` (not committed).
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FIXTURES = REPO / "toolchoice_pipeline_tests" / "data" / "otel"
WORK = REPO / "benchmarks" / "work" / "otel"
RESULTS = REPO / "benchmarks" / "results" / "otel_producers.json"
EXPECTED_TASKS = 8  # the prompts of scripts/otel_fixtures/ops_agent.py
VARIANTS = ("-no-content", "-truncated")
CURATED_SHOWN = "openai-v2-2.4b0"  # graded against the curated demo catalog too (one is enough to show it)


def toolchoice(*args: str) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("toolchoice")
    return subprocess.run([str(script), *args], capture_output=True, text=True, timeout=600)


def measure(fixture: Path, catalog_args: list[str], label: str) -> dict:
    data = WORK / label
    shutil.rmtree(data, ignore_errors=True)
    (data / "suites").mkdir(parents=True)
    shutil.copytree(REPO / "data" / "suites" / "coding_agent", data / "suites" / "coding_agent")
    shutil.copy(REPO / "data" / "toolchoice.yaml", data / "toolchoice.yaml")  # offline: local judge
    files = [str(p) for p in sorted(fixture.glob("*.jsonl"))]
    started = time.perf_counter()
    ingest = toolchoice("ingest", "otel", *files, "--suite", "otel", "--data-dir", str(data), *catalog_args)
    row = {
        "fixture": fixture.name,
        "catalog": " ".join(catalog_args) or "the trace's",
        "expected": EXPECTED_TASKS,
        "ingest_exit": ingest.returncode,
    }
    if ingest.returncode != 0:
        row["error"] = ingest.stderr.strip()
        return row
    manifest = json.loads((data / "suites" / "otel" / "ingest.json").read_text())
    row["tasks"] = manifest["tasks"]
    row["task_catalog_sources"] = manifest["catalog"]["task_catalog_sources"]
    replay = "replay/suites/otel/replay.jsonl"
    run = toolchoice(
        "run", "--suite", "otel", "--release", "r1", "--kind", "release", "--models", replay, "--data-dir", str(data)
    )
    row["run_exit"] = run.returncode
    if run.returncode == 0:
        scores = json.loads((data / "releases" / "r1" / "scores.json").read_text())["models"][replay]
        row["tsq"] = scores["tsq_mean"]
    else:
        row["error"] = (run.stdout + run.stderr).strip()[-500:]
    row["catalog"] = row["catalog"].replace(str(REPO) + "/", "")
    row["wall_s"] = round(time.perf_counter() - started, 2)
    return row


def hallucinated() -> None:
    """``--hallucinated``: each producer's run with one call renamed to a tool outside the trace's definitions
    (``toolchoice_pipeline_tests/hallucinated.py``): tasks kept, tasks flagged, the flagged task's first tool
    and TSQ. Results go to ``benchmarks/results/otel_producers_hallucinated.json``."""
    sys.path.insert(0, str(REPO))
    from toolchoice_pipeline_tests.hallucinated import otel_variant

    rows = []
    for fixture in sorted(p for p in FIXTURES.iterdir() if p.is_dir() and not p.name.endswith(VARIANTS)):
        variant = WORK / "variants" / fixture.name
        shutil.rmtree(variant, ignore_errors=True)
        otel_variant(fixture, variant)
        row = measure(variant, [], fixture.name + "-hallucinated")
        if row["ingest_exit"] == 2 and "cannot be known" in row.get("error", ""):  # no definitions: the dump
            row = measure(
                variant, ["--catalog-dump", str(FIXTURES / "ops_agent_tools.json")], fixture.name + "-hallucinated"
            )
        row["fixture"] = fixture.name
        data = WORK / (fixture.name + "-hallucinated")
        if row["ingest_exit"] == 0:
            manifest = json.loads((data / "suites" / "otel" / "ingest.json").read_text())
            row["hallucinated"] = manifest["hallucinated"]
        if row.get("run_exit") == 0:
            import duckdb

            with duckdb.connect(str(data / "warehouse" / "toolchoice.duckdb"), read_only=True) as con:
                row["flagged_scores"] = con.execute(
                    "SELECT first_tool, tsq FROM task_scores WHERE list_contains(flags, 'hallucinated_tool')"
                ).fetchall()
        rows.append(row)
        print(json.dumps(row), flush=True)
    out = REPO / "benchmarks" / "results" / "otel_producers_hallucinated.json"
    out.write_text(
        json.dumps({"command": "python benchmarks/ingest/otel_producers.py --hallucinated", "rows": rows}, indent=2)
        + "\n"
    )


def main() -> None:
    if sys.argv[1:] == ["--hallucinated"]:
        hallucinated()
        return
    only = set(sys.argv[1:])  # fixture names; the others keep their rows from the last results
    old = json.loads(RESULTS.read_text()) if only and RESULTS.exists() else {"rows": []}
    rows = [row for row in old["rows"] if row["fixture"] not in only]
    started = time.perf_counter()
    dump = ["--catalog-dump", str(FIXTURES / "ops_agent_tools.json")]
    for fixture in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        if fixture.name.endswith(VARIANTS) or (only and fixture.name not in only):
            continue
        row = measure(fixture, [], fixture.name)
        if row["ingest_exit"] == 2 and "cannot be known" in row.get("error", ""):
            rows.append({**row, "error": row["error"][:160] + "..."})
            rows.append(measure(fixture, dump, fixture.name + "-dump"))
            if fixture.name == CURATED_SHOWN:
                rows.append(measure(fixture, ["--catalog-from", "curated"], fixture.name + "-curated"))
        else:
            rows.append(row)
        print(json.dumps(rows[-1]), flush=True)
        rows.sort(key=lambda row: (row["fixture"], row["catalog"]))
        result = {
            "machine": {"python": platform.python_version(), "platform": platform.platform()},
            "command": "python benchmarks/ingest/otel_producers.py [FIXTURE...]",
            "wall_s_this_invocation": round(time.perf_counter() - started, 2),
            "rows": rows,
        }
        RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")  # after each fixture
    for row in rows:
        print(
            f"{row['fixture']:<24} {row['catalog'][:40]:<40} tasks {row.get('tasks', '-')}/{row['expected']} "
            f"TSQ {row.get('tsq', '-')}"
        )


if __name__ == "__main__":
    main()
