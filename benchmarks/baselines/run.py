"""Benchmark of the ``local/...`` baseline agents: scores on the demo suite and time per call.

Run: ``python benchmarks/baselines/run.py [--data-dir data] [--suite coding_agent] [--repeat 20]``.
Writes ``benchmarks/results/baselines.json``:

- per agent, on the suite's labelled tasks, graded by the suite's matching profile on the first step:
  ``right_tool_pct`` and ``right_args_pct`` (points, 0-100) and the number of tasks;
- per agent, the time of one call of the agent function (ms: p50, p95, max over ``repeat`` passes over all
  tasks, catalog index warm) and the first, cold call that builds the catalog index (ms);
- per agent, the time of one ``litellm.acompletion`` round trip to ``local/<agent>`` (ms: p50, p95), which adds
  LiteLLM's own overhead to the agent's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time
from pathlib import Path

os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from toolchoice_pipeline.providers import local_agents  # noqa: E402
from toolchoice_pipeline.records.calls import flag_hallucinated, from_openai_message  # noqa: E402
from toolchoice_pipeline.scoring.matching import match_reply  # noqa: E402
from toolchoice_pipeline.suites.suite import load_suite  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results" / "baselines.json"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def scores(suite, agent) -> dict:
    graded = [task for task in suite.tasks if task.expected is not None]
    right_tool = right_args = 0
    for task in graded:
        catalog = suite.task_catalog(task)
        message = agent(task.message_dicts(), [tool.to_openai_tool() for tool in catalog], {})
        reply = flag_hallucinated(from_openai_message(message), [tool.name for tool in catalog])
        result = match_reply(task.expected, reply, catalog, suite.match_profile)
        right_tool += result.right_tool
        right_args += result.right_args
    return {
        "n_tasks": len(graded),
        "right_tool_pct": round(100 * right_tool / len(graded), 2),
        "right_args_pct": round(100 * right_args / len(graded), 2),
    }


def agent_timing(suite, agent, repeat: int) -> dict:
    inputs = [(task.message_dicts(), [t.to_openai_tool() for t in suite.task_catalog(task)]) for task in suite.tasks]
    local_agents._INDEX_CACHE.clear()
    started = time.perf_counter()
    agent(*inputs[0], {})
    cold_ms = (time.perf_counter() - started) * 1000
    samples = []
    for _ in range(repeat):
        for messages, tools in inputs:
            started = time.perf_counter()
            agent(messages, tools, {})
            samples.append((time.perf_counter() - started) * 1000)
    return {
        "calls": len(samples),
        "cold_first_call_ms": round(cold_ms, 3),
        "p50_ms": round(percentile(samples, 0.5), 3),
        "p95_ms": round(percentile(samples, 0.95), 3),
        "max_ms": round(max(samples), 3),
        "mean_ms": round(statistics.fmean(samples), 3),
    }


def litellm_timing(suite, model: str) -> dict:
    import litellm

    from toolchoice_pipeline.providers import register_providers

    register_providers()

    async def run() -> list[float]:
        samples = []
        for task in suite.tasks:
            tools = [t.to_openai_tool() for t in suite.task_catalog(task)]
            started = time.perf_counter()
            await litellm.acompletion(
                model=model, messages=task.message_dicts(), tools=tools, num_retries=0, max_retries=0
            )
            samples.append((time.perf_counter() - started) * 1000)
        return samples

    asyncio.run(run())  # warm-up pass
    samples = asyncio.run(run())
    return {
        "calls": len(samples),
        "p50_ms": round(percentile(samples, 0.5), 3),
        "p95_ms": round(percentile(samples, 0.95), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("TOOLCHOICE_DATA_DIR", "data")))
    parser.add_argument("--suite", default="coding_agent")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    suite = load_suite(args.data_dir, args.suite)
    result = {
        "suite": suite.name,
        "catalog_version": suite.catalog_version,
        "n_tools": len(suite.catalog),
        "python": platform.python_version(),
        "agents": {},
    }
    for name, agent in local_agents.MODELS.items():
        result["agents"][f"local/{name}"] = {
            "scores": scores(suite, agent),
            "agent_call": agent_timing(suite, agent, args.repeat),
            "litellm_round_trip": litellm_timing(suite, f"local/{name}"),
        }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
