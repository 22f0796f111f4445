"""Shared pieces of the execution benchmarks: a synthetic suite in a temp dir, sim models, a bare asyncio loop
making the same ``litellm.acompletion`` calls, and the results file.

Run each benchmark with one command from the repo root, one at a time (the machine has 2 shared cores):

    python benchmarks/execution/bench_throughput.py     # 1: runner vs bare loop
    python benchmarks/execution/bench_faults.py         # 2: 20% transient errors
    python benchmarks/execution/bench_rerun.py          # 3: re-run with unchanged inputs
    python benchmarks/execution/bench_resume.py         # 4: SIGKILL at half-way, then resume
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"
SUITE = "synthetic"

TOOL_WORDS = [
    "search",
    "read",
    "write",
    "list",
    "delete",
    "move",
    "copy",
    "fetch",
    "send",
    "create",
    "update",
    "schedule",
]
TOOL_OBJECTS = ["file", "issue", "email", "event", "record", "page"]


def argument_parser(doc: str) -> argparse.ArgumentParser:
    """The options of benchmark 1's run, which every benchmark takes: ``--tasks``, ``--models``, ``--latency-ms``
    (the sim models' latency) and ``--concurrency`` (calls in flight, overall and per model)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=64)
    return parser


def setup(args: argparse.Namespace, **extra: Any) -> dict[str, Any]:
    """The ``setup`` of a result: the options of :func:`argument_parser`, then ``extra``."""
    return {
        "tasks": args.tasks,
        "models": args.models,
        "latency_ms": args.latency_ms,
        "concurrency": args.concurrency,
        **extra,
    }


def synthetic_catalog() -> list[dict[str, Any]]:
    """12 tools, each with a required string and an optional integer parameter."""
    tools = []
    for index, verb in enumerate(TOOL_WORDS):
        noun = TOOL_OBJECTS[index % len(TOOL_OBJECTS)]
        tools.append(
            {
                "name": f"{verb}_{noun}",
                "description": f"{verb.capitalize()} a {noun} by its name or identifier.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "target": {"type": "string", "description": f"The {noun} to {verb}."},
                        "limit": {"type": "integer", "description": "At most this many."},
                    },
                    "required": ["target"],
                },
            }
        )
    return tools


def build_suite(data_dir: Path, n_tasks: int):
    """Write a synthetic suite of ``n_tasks`` tasks under ``data_dir`` and load it. Each task names the tool
    it expects, so the sim model calls it in the first step (one-step episodes)."""
    import yaml

    from toolchoice_pipeline.suites.suite import load_suite

    directory = data_dir / "suites" / SUITE
    directory.mkdir(parents=True, exist_ok=True)
    catalog = synthetic_catalog()
    (directory / "suite.yaml").write_text(
        yaml.safe_dump({"name": SUITE, "catalog": "catalog.yaml", "tasks": "tasks.jsonl", "match_profile": "key_args"})
    )
    (directory / "catalog.yaml").write_text(yaml.safe_dump(catalog, sort_keys=False))
    with (directory / "tasks.jsonl").open("w") as handle:
        for index in range(n_tasks):
            tool = catalog[index % len(catalog)]["name"]
            target = f"item-{index:05d}"
            handle.write(
                json.dumps(
                    {
                        "id": f"t{index:05d}",
                        "messages": [{"role": "user", "content": f"Please {tool} '{target}' now."}],
                        "expected": {"tool": tool, "arguments": {"target": target}},
                        "tools": None,
                        "tool_results": None,
                        "tags": [tool.split("_")[0]],
                    }
                )
                + "\n"
            )
    return load_suite(data_dir, SUITE, check=False)


def sim_models(n: int, *, latency_ms: float, error_rate: float = 0.0, retry_after_s: float = 0.05, seed: int = 7):
    from toolchoice_pipeline.suites.config import ModelSpec

    return [
        ModelSpec(
            model=f"sim/model-{chr(ord('a') + i)}",
            params={
                "sim_latency_ms": latency_ms,
                "sim_error_rate": error_rate,
                "sim_retry_after_s": retry_after_s,
                "sim_seed": seed + i,
            },
        )
        for i in range(n)
    ]


def run_config(concurrency: int, *, max_attempts: int = 6):
    from toolchoice_pipeline.suites.config import RunConfig

    return RunConfig.model_validate(
        {
            "models": ["sim/placeholder"],
            "concurrency": {"max_in_flight": concurrency, "per_model": concurrency},
            "retries": {"max_attempts": max_attempts, "initial_wait_s": 0.05, "max_wait_s": 0.5, "timeout_s": 30},
        }
    )


async def bare_loop(suite, specs, concurrency: int) -> int:
    """``concurrency`` workers making one ``litellm.acompletion`` per (model, task), with the same messages,
    tools, parameters and metadata as the runner's first step; no retries, no journal. Returns calls made."""
    import litellm

    from toolchoice_pipeline.providers import register_providers

    register_providers()
    tools = [tool.to_openai_tool() for tool in suite.catalog]
    jobs = iter([(spec, task) for task in suite.tasks for spec in specs])
    made = 0

    async def worker() -> None:
        nonlocal made
        for spec, task in jobs:
            await litellm.acompletion(
                model=spec.model,
                messages=task.message_dicts(),
                tools=tools,
                timeout=30,
                num_retries=0,
                max_retries=0,
                metadata={"task_id": task.id, "step": 0},
                **spec.params,
            )
            made += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return made


def row_view(episodes) -> list[dict[str, Any]]:
    """Episodes as comparable rows: everything but timings and the cache-hit flag."""
    rows = []
    for episode in episodes:
        rows.append(
            {
                "model": episode.model,
                "task_id": episode.task_id,
                "error": episode.error,
                "steps": [
                    {
                        "step": s.step,
                        "reply": None if s.reply is None else s.reply.model_dump(),
                        "prompt_tokens": s.prompt_tokens,
                        "completion_tokens": s.completion_tokens,
                        "cost_usd": s.cost_usd,
                        "error": s.error,
                        "request_key": s.request_key,
                    }
                    for s in episode.steps
                ],
            }
        )
    return rows


def machine() -> dict[str, Any]:
    return {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count()}


def write_result(name: str, result: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"execution_{name}.json"
    result = {
        "benchmark": name,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(),
        **result,
    }
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return path
