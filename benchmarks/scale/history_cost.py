"""A run's fixed cost against the releases already stored: 10, 100 and 1,000 releases in one data dir.

    python benchmarks/scale/history_cost.py                       # 10, 100, 1000 stored releases, 3 runs each
    python benchmarks/scale/history_cost.py --sizes 10 100 --repeats 2

The stored releases are written directly with the core, not by running the pipeline 1,000 times: the same
scored episodes under new release ids, each committed with ``Warehouse.write_release`` and given its
``scores.json`` (gated without a baseline; half of them ``release`` kind and promoted, so the baseline moves). To
keep the benchmark short the fill skips ``fsync`` and the DuckDB file's update per release; the file is brought
up to date once after the fill (untimed), so the measured runs start from what a run after them would see.
At each size, ``--repeats`` small releases are published the way the ``release_scores`` asset and
``toolchoice run`` do it, and each step whose cost could grow with history is timed (CPU and wall seconds):

- ``check``: what the run checks before it starts (the baseline's ``scores.json``, its commit record and files);
- ``publish``: score, commit the warehouse tables and bring the DuckDB file up to date, gate, ``scores.json``,
  promote;
- ``chart``: the trend of the suite's last releases and its PNG;
- ``query``: for readers, not part of a run: open the DuckDB views and count one table's rows (this one grows
  with history: it reads every release).

Writes ``benchmarks/results/scale_history_cost.json`` and prints it. Note ``uptime``'s load average with it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks" / "execution"))

from common import build_suite, machine, run_config, sim_models  # noqa: E402

from toolchoice_pipeline.releases.document import ReleaseDocument  # noqa: E402
from toolchoice_pipeline.releases.gate import check_gate  # noqa: E402
from toolchoice_pipeline.releases.lineage import Lineage  # noqa: E402
from toolchoice_pipeline.releases.publish import publish_release  # noqa: E402
from toolchoice_pipeline.releases.report import TREND_WINDOW, load_trend, render_chart  # noqa: E402
from toolchoice_pipeline.releases.store import ReleaseStore  # noqa: E402
from toolchoice_pipeline.releases.warehouse import Warehouse  # noqa: E402
from toolchoice_pipeline.releases.warehouse_tables import (  # noqa: E402
    agent_calls_table,
    judge_votes_table,
    release_scores_table,
    task_scores_table,
    tool_catalog_table,
)
from toolchoice_pipeline_tests.scoring_reference import score_episodes, summarise  # noqa: E402

RESULT = REPO / "benchmarks" / "results" / "scale_history_cost.json"


@contextlib.contextmanager
def fast_fill():
    """While filling: no fsync, and no DuckDB update per release (see the module docstring)."""
    saved = os.fsync, Warehouse._updated_views, Warehouse._install_views
    os.fsync = lambda fd: None
    Warehouse._updated_views = lambda self: None
    Warehouse._install_views = lambda self, tmp: None
    try:
        yield
    finally:
        os.fsync, Warehouse._updated_views, Warehouse._install_views = saved


def timed(step) -> dict[str, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    step()
    return {"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall}


def publish(data_dir: Path, suite, episodes, release_id: str, kind: str):
    lineage = Lineage(
        release_id=release_id, suite=suite.name, catalog_version=suite.catalog_version, run_id=f"run-{release_id}"
    )
    return publish_release(data_dir, suite, lineage, kind, episodes, (), judge=None)


def store_release(data_dir: Path, suite, episodes, scores, release_id: str, kind: str) -> None:
    """A stored release as publishing leaves it (warehouse tables, ``scores.json``, the baseline), without
    scoring and gating it again."""
    lineage = Lineage(
        release_id=release_id, suite=suite.name, catalog_version=suite.catalog_version, run_id=f"run-{release_id}"
    )
    models = summarise(scores)
    tables = {
        "task_scores": task_scores_table(scores, lineage),
        "release_scores": release_scores_table(models, lineage),
        "agent_calls": agent_calls_table(episodes, lineage, suite),
        "judge_votes": judge_votes_table([], lineage),
        "tool_catalog": tool_catalog_table(suite, lineage),
    }
    Warehouse(data_dir).write_release(lineage, tables, kind=kind)
    store = ReleaseStore(data_dir)
    store.write_scores(
        ReleaseDocument(
            release_id=release_id,
            kind=kind,
            suite=suite.name,
            catalog_version=suite.catalog_version,
            fixture_version=suite.fixture_version,
            judge=None,
            baseline_release_id=None,
            run_id=lineage.run_id,
            evaluated_at=datetime.now(UTC).isoformat(timespec="seconds"),
            match_profile=suite.match_profile,
            models=models,
            gate=check_gate(release_id, models).to_json(),
        )
    )
    if kind == "release":
        store.promote(release_id)


def one_run(data_dir: Path, suite, episodes, release_id: str) -> dict[str, dict[str, float]]:
    """The history-dependent steps of one small run, timed."""
    store, warehouse = ReleaseStore(data_dir), Warehouse(data_dir)

    def check() -> None:  # as cli.run._check_stored
        baseline = store.baseline(suite.name)
        if baseline is not None:
            store.read_scores(baseline)
        warehouse.check([baseline] if baseline is not None else [])

    published = {}

    def run_publish() -> None:
        published["path"] = publish(data_dir, suite, episodes, release_id, "nightly").scores_path

    def chart() -> None:  # as the release_scores asset
        render_chart(load_trend(data_dir, suite.name, last=TREND_WINDOW), published["path"].parent / "trend.png")

    def query() -> None:
        with warehouse.connect() as con:
            con.execute("SELECT count(*) FROM task_scores").fetchone()

    steps = {"check": timed(check), "publish": timed(run_publish), "chart": timed(chart), "query": timed(query)}
    steps["run_total"] = {
        unit: sum(steps[s][unit] for s in ("check", "publish", "chart")) for unit in ("cpu_s", "wall_s")
    }
    return steps


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=20)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="history_cost_") as tmp:
        data_dir = Path(tmp)
        suite = build_suite(data_dir, args.tasks)
        episodes = asyncio.run(_episodes(suite, data_dir))
        scores = score_episodes(suite, episodes, [])
        stored, rows, fill = 0, [], []
        for size in sorted(args.sizes):
            started = time.perf_counter()
            with fast_fill():
                while stored < size:
                    store_release(
                        data_dir, suite, episodes, scores, f"s{stored:05d}", "release" if stored % 2 == 0 else "nightly"
                    )
                    stored += 1
            Warehouse(data_dir).connect().close()  # the DuckDB file shows every stored release
            fill.append({"stored": size, "fill_wall_s": round(time.perf_counter() - started, 2)})
            runs = [one_run(data_dir, suite, episodes, f"m{size:05d}-{i}") for i in range(args.repeats)]
            stored_after = stored + args.repeats
            rows.append(
                {
                    "stored_releases": size,
                    "runs": args.repeats,
                    **{
                        f"{step}_{unit}": round(median([r[step][unit] for r in runs]), 4)
                        for step in ("check", "publish", "chart", "query", "run_total")
                        for unit in ("cpu_s", "wall_s")
                    },
                }
            )
            stored = stored_after
            print(json.dumps(rows[-1]), flush=True)
    result = {
        "benchmark": "scale_history_cost",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(),
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        "setup": {
            "tasks": args.tasks,
            "models": 2,
            "repeats": args.repeats,
            "trend_window": TREND_WINDOW,
            "statistic": "median of the repeats",
        },
        "fill": fill,
        "rows": rows,
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


async def _episodes(suite, data_dir: Path):
    """One real run of two sim models over the suite (no latency): the episodes every stored release reuses."""
    from toolchoice_pipeline.execution.runner import run_suite

    return await run_suite(suite, run_config(8), data_dir=data_dir / "run", models=sim_models(2, latency_ms=0.0))


if __name__ == "__main__":
    main()
