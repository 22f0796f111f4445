"""Cold install from the lock, as the README's set-up commands do it, measured as whole processes.

Each round: a clean checkout (``git archive HEAD``), ``python3 -m venv .venv``, empty package caches (a new
``UV_CACHE_DIR``; ``pip --no-cache-dir``), then the README's command under ``/usr/bin/time``: the runtime
(``pip install uv && uv sync --locked --inexact``) or the developer's set-up (the same with ``--extra dev
--compile-bytecode``), then ``toolchoice --help`` to show it runs. Prints each round and the medians, and writes
them to ``benchmarks/results/cold_install.json``.

Usage: python benchmarks/setup/cold_install.py [--rounds 3] [--python python3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results" / "cold_install.json"
INSTALLS = {
    "runtime": "pip install --quiet --no-cache-dir uv && uv sync --locked --inexact --quiet",
    "dev": "pip install --quiet --no-cache-dir uv && uv sync --locked --inexact --quiet --extra dev --compile-bytecode",
}


def one_round(install: str, python: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as cache:
        checkout = Path(root) / "checkout"
        checkout.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", "HEAD"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(checkout)], input=archive, check=True)
        subprocess.run([python, "-m", "venv", ".venv"], cwd=checkout, check=True)
        env = {**os.environ, "UV_CACHE_DIR": cache, "VIRTUAL_ENV": str(checkout / ".venv")}
        env["PATH"] = f"{checkout / '.venv' / 'bin'}{os.pathsep}{env['PATH']}"
        env.pop("UV_PROJECT_ENVIRONMENT", None)
        timing = Path(root) / "time.txt"
        started = time.perf_counter()
        subprocess.run(
            ["/usr/bin/time", "-f", "%U %S", "-o", str(timing), "sh", "-c", INSTALLS[install]],
            cwd=checkout,
            env=env,
            check=True,
        )
        wall_s = time.perf_counter() - started
        user_s, sys_s = map(float, timing.read_text().split()[-2:])
        subprocess.run([str(checkout / ".venv" / "bin" / "toolchoice"), "--help"], capture_output=True, check=True)
        return {"wall_s": round(wall_s, 1), "cpu_s": round(user_s + sys_s, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--python", default="python3")
    args = parser.parse_args()
    results: dict[str, object] = {"rounds": args.rounds, "load_average_before": os.getloadavg()[0]}
    for install in INSTALLS:
        rounds = []
        for index in range(args.rounds):
            rounds.append(one_round(install, args.python))
            print(f"{install} round {index + 1}: {rounds[-1]}", flush=True)
        results[install] = {
            "rounds": rounds,
            "median_wall_s": statistics.median(r["wall_s"] for r in rounds),
            "median_cpu_s": statistics.median(r["cpu_s"] for r in rounds),
        }
    results["load_average_after"] = os.getloadavg()[0]
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    sys.exit(main())
