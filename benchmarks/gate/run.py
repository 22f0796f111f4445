"""How often the gate fails unchanged releases and catches true 5-point regressions, with and without noise.

Run from the repo root: ``python benchmarks/gate/run.py [--pairs 200] [--flip 0.05] [--no-e2e]``.

**Simulated part** (the gate's own functions on simulated per-sample outcomes, for speed): a stochastic model
whose per-task right probability is drawn once per suite (a share ``--skill`` of the tasks is right with
probability ``1 − flip``, the others with probability ``flip``, the model the ``sim/`` provider's
``sim_flip_rate`` follows) and whose outcome is drawn per sample. For each suite size (73, 400 tasks) and k (1,
3, 5): ``--pairs`` pairs of an unchanged release (baseline and now from the same probabilities) and as many
pairs with a true 5-point regression (every task's probability 5 points lower, so the expected share drops by
exactly 5 points). Each pair is gated by :func:`toolchoice_pipeline.releases.gate.check_gate` with the paired
tasks of both releases (:class:`~toolchoice_pipeline.releases.pairing.Paired`, as
:func:`~toolchoice_pipeline.releases.pairing.paired_tasks` builds them) under ``gate.noise: require``; the
``report`` verdict is the 2-point rule over the same comparisons (a drop of more than 2 points on a metric).
Right arguments follow right tool (a flipped sample calls another tool), so both metrics agree. The table
also gives the false-fail rate the gate's advice predicts for the 2-point rule (:func:`~toolchoice_pipeline.
releases.noise.false_fail_rate`) at the flip rate.

**End-to-end confirmation** (``--no-e2e`` skips it): in a temporary copy of ``data/``, ``toolchoice run`` of
the demo suite with one ``sim/`` model (``sim_flip_rate`` = ``--flip``, ``--repeats 5``, no judge) as a
``release`` (the baseline), then again with another ``sim_seed`` (the same model, new samples): the second
run's gate object (comparisons, warnings, advice) and exit code are recorded.

Writes ``benchmarks/results/gate_noise.json`` and prints the whole table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from toolchoice_pipeline.releases.gate import MAX_DROP_POINTS, check_gate  # noqa: E402
from toolchoice_pipeline.releases.noise import false_fail_rate  # noqa: E402
from toolchoice_pipeline.releases.pairing import Paired  # noqa: E402

MODEL = "sim/stochastic"
SIZES = (73, 400)
REPEATS = (1, 3, 5)
REGRESSION_POINTS = 5.0


def release(p: np.ndarray, k: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Right counts per task of one release: k samples per task, each right with the task's probability."""
    right = rng.binomial(k, p).astype(float)
    return {"scored": np.full(p.size, float(k)), "right_tool": right, "right_args": right}


def figures(counts: dict[str, np.ndarray]) -> dict[str, float]:
    share = round(100.0 * counts["right_tool"].sum() / counts["scored"].sum(), 2)
    n = int(counts["scored"].size)
    return {
        "n_tasks": n,
        "n_samples": int(counts["scored"].sum()),
        "errors": 0,
        "right_tool_pct": share,
        "right_args_pct": share,
    }


def gate_pair(baseline: dict[str, np.ndarray], now: dict[str, np.ndarray]) -> tuple[bool, bool]:
    """(fails under report, fails under require) for one pair of releases."""
    paired = Paired(tasks=[f"t{i}" for i in range(baseline["scored"].size)], baseline=baseline, now=now)
    result = check_gate(
        "now",
        {MODEL: figures(now)},
        "base",
        {MODEL: figures(baseline)},
        paired={MODEL: paired},
        noise="require",
        advise=False,
    )
    report_fails = any(c.drop > MAX_DROP_POINTS for c in result.comparisons)
    return report_fails, not result.passed


def simulate(n: int, k: int, pairs: int, flip: float, skill: float, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    p = np.where(rng.random(n) < skill, 1.0 - flip, flip)  # drawn once per suite
    regressed = np.clip(p - REGRESSION_POINTS / 100.0, 0.0, 1.0)
    out = {"tasks": n, "k": k}
    for kind, p_now in (("unchanged", p), ("regressed", regressed)):
        verdicts = [gate_pair(release(p, k, rng), release(p_now, k, rng)) for _ in range(pairs)]
        out[f"{kind}_fail_report_pct"] = round(100.0 * sum(r for r, _ in verdicts) / pairs, 1)
        out[f"{kind}_fail_require_pct"] = round(100.0 * sum(q for _, q in verdicts) / pairs, 1)
    out["predicted_false_fail_report_pct"] = round(100.0 * false_fail_rate(n, k, flip), 1)
    out["true_drop_points"] = round(100.0 * float((p - regressed).mean()), 2)
    return out


def end_to_end(flip: float, repeats: int) -> dict:
    """Two ``toolchoice run`` releases of the demo suite with one sim model (module docstring)."""
    work = Path(tempfile.mkdtemp(prefix="gate-bench-"))
    try:
        data = work / "data"
        shutil.copytree(
            REPO / "data", data, ignore=shutil.ignore_patterns("dagster_home", "releases", "warehouse", "cache")
        )
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "LITELLM_OFFLINE_MODE": "true",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        runs = []
        for index, seed in enumerate((1, 2)):
            (data / "toolchoice.yaml").write_text(
                f"models:\n  - model: {MODEL}\n    params: {{sim_latency_ms: 0, sim_flip_rate: {flip}, "
                f"sim_seed: {seed}}}\ngate:\n  noise: require\n"
            )
            release_id = f"release-e2e-{index}"
            started = time.perf_counter()
            done = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "from toolchoice_pipeline.cli import main; main()",
                    "run",
                    "--suite",
                    "coding_agent",
                    "--release",
                    release_id,
                    "--kind",
                    "release",
                    "--repeats",
                    str(repeats),
                    "--no-judge",
                    "--data-dir",
                    str(data),
                ],
                env=env,
                capture_output=True,
                text=True,
            )
            scores = json.loads((data / "releases" / release_id / "scores.json").read_text())
            model = scores["models"][MODEL]
            runs.append(
                {
                    "release": release_id,
                    "sim_seed": seed,
                    "exit": done.returncode,
                    "wall_s": round(time.perf_counter() - started, 1),
                    "scores": {
                        key: model[key]
                        for key in (
                            "n_tasks",
                            "n_samples",
                            "repeats",
                            "right_tool_pct",
                            "pass_k_pct",
                            "pass_at_k_pct",
                            "flip_rate",
                        )
                    },
                    "flaky_tasks": len(model["flaky_tasks"]),
                    "gate": {
                        key: scores["gate"][key]
                        for key in ("passed", "noise", "comparisons", "warnings", "advice", "failures")
                    },
                }
            )
        return {"flip_rate": flip, "repeats": repeats, "runs": runs}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--flip", type=float, default=0.05, help="flip rate of the simulated model")
    parser.add_argument("--skill", type=float, default=0.75, help="share of tasks the model usually gets right")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-e2e", action="store_true")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/gate_noise.json")
    args = parser.parse_args()
    started = time.perf_counter()
    rows = [simulate(n, k, args.pairs, args.flip, args.skill, args.seed + 10 * n + k) for n in SIZES for k in REPEATS]
    simulated_s = round(time.perf_counter() - started, 1)
    header = (
        "tasks",
        "k",
        "unchanged fail: report",
        "require",
        "predicted (report)",
        "5-pt regression caught: report",
        "require",
    )
    print(" | ".join(header))
    for r in rows:
        print(
            f"{r['tasks']} | {r['k']} | {r['unchanged_fail_report_pct']}% | {r['unchanged_fail_require_pct']}% | "
            f"{r['predicted_false_fail_report_pct']}% | {r['regressed_fail_report_pct']}% | "
            f"{r['regressed_fail_require_pct']}%"
        )
    goal = next(r for r in rows if r["tasks"] == 400 and r["k"] == 5)
    goals = {
        "require_k5_400_false_fails_pct_max": 5.0,
        "require_k5_400_caught_pct_min": 90.0,
        "met": goal["unchanged_fail_require_pct"] <= 5.0 and goal["regressed_fail_require_pct"] >= 90.0,
    }
    print(
        f"goal (require, k=5, 400 tasks): {goal['unchanged_fail_require_pct']}% false fails (<= 5%), "
        f"{goal['regressed_fail_require_pct']}% caught (>= 90%): {'met' if goals['met'] else 'MISSED'}"
    )
    e2e = None if args.no_e2e else end_to_end(args.flip, 5)
    if e2e:
        for run in e2e["runs"]:
            print(
                f"e2e {run['release']}: exit {run['exit']}, {run['wall_s']} s, {run['scores']}, "
                f"gate passed {run['gate']['passed']}, advice {run['gate']['advice']}"
            )
    result = {
        "command": "python benchmarks/gate/run.py " + " ".join(sys.argv[1:]),
        "setup": {
            "pairs": args.pairs,
            "flip_rate": args.flip,
            "skill": args.skill,
            "seed": args.seed,
            "regression_points": REGRESSION_POINTS,
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average_1m": round(os.getloadavg()[0], 2),
        },
        "simulated_wall_s": simulated_s,
        "rows": rows,
        "goals": goals,
        "end_to_end": e2e,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if goals["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
