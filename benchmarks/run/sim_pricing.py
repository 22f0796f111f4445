"""What LiteLLM's pricing costs a ``sim/`` call with and without the model in its price table at 0 USD.

    python benchmarks/run/sim_pricing.py [--calls 300] [--rounds 2]

Each side is a fresh process making ``--calls`` sequential ``litellm.acompletion`` calls to ``sim/model-a``
(latency 0) under cProfile after 20 warm-up calls: ``missing`` with only ``register_providers()`` (as a model
unknown to the table), ``registered`` after ``register_free_models(["sim/model-a"])`` (what the runner does for
the in-process models it calls). Reported per side: the share of profiled time under LiteLLM's cost
calculation (``response_cost_calculator``) and under its model-info lookups (``_cost_map_model_info``), and the
CPU per call without the profiler (a second timed loop). Sides alternate; results go to
``benchmarks/results/sim_pricing.json``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results" / "sim_pricing.json"
PROBE = """
import asyncio, cProfile, pstats, sys, time
import litellm
from toolchoice_pipeline.providers import register_free_models, register_providers
register_providers()
if sys.argv[1] == "registered":
    register_free_models(["sim/model-a"])
calls = int(sys.argv[2])
tools = [{"type": "function", "function": {"name": "read_file", "description": "Read a file", "parameters":
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
async def loop(n):
    for i in range(n):
        await litellm.acompletion(model="sim/model-a", messages=[{"role": "user", "content": f"read_file 'a{i}.txt'"}],
                                  tools=tools, sim_latency_ms=0)
asyncio.run(loop(20))
profile = cProfile.Profile()
profile.enable()
asyncio.run(loop(calls))
profile.disable()
stats = pstats.Stats(profile)
under = lambda name: sum(v[3] for k, v in stats.stats.items() if k[2] == name) / stats.total_tt
started = time.process_time()
asyncio.run(loop(calls))
cpu_ms = (time.process_time() - started) / calls * 1000
print({"pricing_share": round(under("response_cost_calculator"), 3),
       "model_info_share": round(under("_cost_map_model_info"), 3), "cpu_ms_per_call": round(cpu_ms, 2)})
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "LITELLM_OFFLINE_MODE": "true",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    runs: dict[str, list[dict]] = {"missing": [], "registered": []}
    for index in range(args.rounds):
        order = ["missing", "registered"] if index % 2 == 0 else ["registered", "missing"]
        for side in order:
            done = subprocess.run(
                [sys.executable, "-c", PROBE, side, str(args.calls)],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
            runs[side].append(ast.literal_eval(done.stdout.strip().splitlines()[-1]))
            print(side, runs[side][-1], flush=True)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    result = {"benchmark": "sim_pricing", "calls": args.calls, "runs": runs, "uptime_after": uptime}
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
