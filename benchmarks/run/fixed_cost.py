"""Where a 1-task ``toolchoice run`` spends its CPU: the whole command against the imports it makes.

One command from the repo root (run it alone: the machine has 2 shared cores)::

    python benchmarks/run/fixed_cost.py [--rounds 3]

Every step is a fresh process timed by ``/usr/bin/time -v`` (CPU = user + system, wall = elapsed), in rounds
that alternate the order of the steps (forwards, backwards, ...); the table gives medians:

- ``python``: an empty interpreter (``python -c pass``);
- ``cli``: ``import toolchoice_pipeline.cli`` (what every ``toolchoice`` command imports);
- ``cli+litellm``: and LiteLLM with our in-process providers registered (``register_providers``), then one
  ``litellm.acompletion`` to ``local/name-match`` (LiteLLM builds part of its machinery on the first call);
- ``cli+litellm+dagster``: and the Dagster ``Definitions`` (``toolchoice_pipeline.definitions``);
- ``all_imports``: and what a run imports later: matplotlib's pyplot (the trend chart), DuckDB, pyarrow;
- ``run_fresh``: ``toolchoice run --suite gen_1`` (benchmarks/run/growth.py's 1-task suite, repo
  ``toolchoice.yaml``: 2 local models, the local judge × 3 polls) on a fresh data directory;
- ``run_again``: a second release of the same suite in that data directory (the Dagster instance, the
  warehouse and the judge's canary exist; the trend has two releases).

The differences between consecutive steps attribute the run's CPU. Results:
``benchmarks/results/run_fixed_cost.json`` (``--out``), with ``uptime`` before and after every round.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks" / "run"))
sys.path.insert(0, str(REPO / "benchmarks" / "execution"))

from growth import ENTRY, WORK, commit_of, make_data_dir, uptime  # noqa: E402
from peers import timed  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "run_fixed_cost.json"
CALL = (
    "import asyncio, litellm\n"
    "from toolchoice_pipeline.providers import register_providers\n"
    "register_providers()\n"
    "asyncio.run(litellm.acompletion(model='local/name-match', messages=[{'role': 'user', 'content': 'read a.txt'}],"
    " tools=[{'type': 'function', 'function': {'name': 'read_file', 'parameters': {'type': 'object',"
    " 'properties': {'path': {'type': 'string'}}}}}]))\n"
)
IMPORTS = {
    "python": "pass",
    "cli": "import toolchoice_pipeline.cli",
    "cli+litellm": "import toolchoice_pipeline.cli\n" + CALL,
    "cli+litellm+dagster": "import toolchoice_pipeline.cli\n" + CALL + "import toolchoice_pipeline.definitions\n",
    "all_imports": "import toolchoice_pipeline.cli\n"
    + CALL
    + "import toolchoice_pipeline.definitions\nimport matplotlib\nmatplotlib.use('Agg')\n"
    + "import matplotlib.pyplot, duckdb, pyarrow.dataset, pyarrow.parquet\n",
}
STEPS = [*IMPORTS, "run_fresh", "run_again"]


def step(name: str, env: dict[str, str]) -> dict:
    data_dir = WORK / "fixed_cost"
    if name in IMPORTS:
        return timed([sys.executable, "-c", IMPORTS[name]], env, REPO)[0]
    if name == "run_fresh":
        make_data_dir(data_dir, 1)
    release = "b1" if name == "run_fresh" else "b2"
    command = [sys.executable, "-c", ENTRY, "run", "--suite", "gen_1", "--release", release]
    return timed(
        [*command, "--data-dir", str(data_dir)], env | {"DAGSTER_HOME": str(data_dir / "dagster_home")}, data_dir
    )[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "LITELLM_OFFLINE_MODE": "true",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    rounds = []
    for index in range(args.rounds):
        order = STEPS if index % 2 == 0 else [*reversed(IMPORTS), "run_fresh", "run_again"]  # run_again needs run_fresh
        entry: dict = {"uptime_before": uptime()}
        for name in order:
            entry[name] = step(name, env)
            print(index, name, entry[name], flush=True)
        entry["uptime_after"] = uptime()
        rounds.append(entry)
    shutil.rmtree(WORK / "fixed_cost", ignore_errors=True)
    medians = {
        name: {key: statistics.median(r[name][key] for r in rounds) for key in ("cpu_s", "wall_s", "peak_rss_mb")}
        for name in STEPS
    }
    added = {
        name: round(medians[name]["cpu_s"] - medians[previous]["cpu_s"], 2)
        for previous, name in zip(STEPS, STEPS[1:])
        if name != "run_again"
    }
    report = {
        "benchmark": "run_fixed_cost",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "code": commit_of(REPO),
        "rounds": rounds,
        "medians": medians,
        "cpu_added_by_step_s": added,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"medians": medians, "cpu_added_by_step_s": added}, indent=1))


if __name__ == "__main__":
    main()
