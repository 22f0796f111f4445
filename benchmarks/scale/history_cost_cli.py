"""``toolchoice run`` end to end against the releases already stored: CPU and wall of the whole command (a cold
process: Dagster, the agents, publishing, the chart) with 10 and 1,000 releases in one data dir.

    python benchmarks/scale/history_cost_cli.py                      # 10 then 1000 stored, 2 runs each
    python benchmarks/scale/history_cost_cli.py --sizes 10 100 --repeats 1

A copy of ``data/`` (the demo suite, its two local models) makes one real release with ``toolchoice run
--no-judge``; the stored releases are that release's warehouse tables and ``scores.json`` under new ids
(``Warehouse.write_release``, ``ReleaseStore.write_scores``; every other one promoted), each also added to the
Dagster instance's ``release`` partitions, as runs would have left them. Then ``--repeats`` nightly runs of the
command are timed at each size (the child process's CPU seconds from ``getrusage``). The fill skips ``fsync``
and the per-release DuckDB update, which is brought up to date once after it (untimed). Writes
``benchmarks/results/scale_history_cost_cli.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyarrow as pa  # noqa: E402
from history_cost import fast_fill, median  # noqa: E402

from toolchoice_pipeline.releases.lineage import LINEAGE_COLUMNS, Lineage  # noqa: E402
from toolchoice_pipeline.releases.store import ReleaseStore  # noqa: E402
from toolchoice_pipeline.releases.warehouse import Warehouse  # noqa: E402
from toolchoice_pipeline.releases.warehouse_tables import TABLE_NAMES  # noqa: E402

RESULT = REPO / "benchmarks" / "results" / "scale_history_cost_cli.json"
TOOLCHOICE = Path(sys.executable).parent / "toolchoice"
RUN_OUTPUTS = ("releases", "warehouse", "cache", "reports")


def toolchoice(data_dir: Path, release_id: str) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    done = subprocess.run(
        [
            str(TOOLCHOICE),
            "run",
            "--data-dir",
            str(data_dir),
            "--release",
            release_id,
            "--kind",
            "nightly",
            "--no-judge",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "LITELLM_OFFLINE_MODE": "true", "COLUMNS": "200"},
    )
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"toolchoice run {release_id} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return {"cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), "wall_s": wall}


def with_lineage(table: pa.Table, lineage: Lineage) -> pa.Table:
    for column, value in lineage.columns().items():
        if column in LINEAGE_COLUMNS:
            index = table.schema.get_field_index(column)
            table = table.set_column(index, column, pa.array([value] * table.num_rows, table.schema.field(column).type))
    return table


def store_copies(data_dir: Path, source_id: str, release_ids: list[str]) -> None:
    """``release_ids`` as copies of release ``source_id`` (tables, ``scores.json``, partitions)."""
    import dagster as dg

    warehouse, store = Warehouse(data_dir), ReleaseStore(data_dir)
    tables = {name: warehouse.read_table(name, source_id) for name in TABLE_NAMES}
    document = store.read_scores(source_id)
    for index, release_id in enumerate(release_ids):
        lineage = Lineage(
            release_id=release_id,
            suite=document.suite,
            catalog_version=document.catalog_version,
            run_id=f"run-{release_id}",
        )
        kind = "release" if index % 2 == 0 else "nightly"
        warehouse.write_release(lineage, {n: with_lineage(t, lineage) for n, t in tables.items()}, kind=kind)
        store.write_scores(
            document.model_copy(update={"release_id": release_id, "kind": kind, "run_id": lineage.run_id})
        )
        if kind == "release":
            store.promote(release_id)
    with dg.DagsterInstance.from_config(str(data_dir / "dagster_home")) as instance:
        instance.add_dynamic_partitions("release", release_ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 1000])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory(prefix="history_cost_cli_") as tmp:
        data_dir = Path(tmp) / "data"
        shutil.copytree(
            REPO / "data",
            data_dir,
            ignore=lambda d, names: [
                n
                for n in names
                if (Path(d) == REPO / "data" and n in RUN_OUTPUTS)
                or (Path(d) == REPO / "data" / "dagster_home" and n != "dagster.yaml")
            ],
        )
        first = toolchoice(data_dir, "r0")
        stored = 1
        for size in sorted(args.sizes):
            with fast_fill():
                store_copies(data_dir, "r0", [f"s{i:05d}" for i in range(stored, size)])
            Warehouse(data_dir).connect().close()
            stored = size
            runs = [toolchoice(data_dir, f"m{size:05d}-{i}") for i in range(args.repeats)]
            stored += args.repeats
            rows.append(
                {
                    "stored_releases": size,
                    "runs": args.repeats,
                    "cpu_s": round(median([r["cpu_s"] for r in runs]), 2),
                    "wall_s": round(median([r["wall_s"] for r in runs]), 2),
                    "load_average_1m": round(os.getloadavg()[0], 2),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    result = {
        "benchmark": "scale_history_cost_cli",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "setup": {
            "suite": "coding_agent (demo)",
            "judge": False,
            "repeats": args.repeats,
            "statistic": "median of the repeats",
            "first_run": {k: round(v, 2) for k, v in first.items()},
        },
        "rows": rows,
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
