"""The inspect-ai side of ``benchmarks/run/peers.py``; runs inside the benchmark's own inspect-ai virtual
environment (never imports this project).

The same tasks and tools as the ``toolchoice run`` side: one sample per task (the task's user message), the
suite's catalog as inspect tools, ``generate(tool_calls="none")`` (one model call per sample, the tool call
is not executed: the same one-step episode), and a scorer checking the first tool call's name (right tool).
Models are ``openai-api/sim/<name>`` (inspect's OpenAI-compatible provider, ``SIM_BASE_URL`` set by the
caller) served by the fake server ``peers.py`` starts on 127.0.0.1. Prints one JSON line: samples scored,
right-tool count, errors, and the in-process CPU/wall of ``eval``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import yaml
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import TaskState, generate, use_tools
from inspect_ai.tool import ToolDef, ToolParam, ToolParams


def catalog_tools(catalog: list[dict]) -> list[ToolDef]:
    tools = []
    for entry in catalog:

        async def never_called(**kwargs) -> str:  # generate(tool_calls="none") never runs tools; one function
            return "ok"  # per tool: inspect keeps a tool's name on its function

        schema = entry["parameters"]
        params = ToolParams(
            properties={name: ToolParam(**spec) for name, spec in schema["properties"].items()},
            required=list(schema.get("required", [])),
        )
        tools.append(ToolDef(never_called, name=entry["name"], description=entry["description"], parameters=params))
    return tools


@scorer(metrics=[accuracy()])
def right_tool():
    async def score(state: TaskState, target: Target) -> Score:
        calls = state.output.message.tool_calls or []
        name = calls[0].function if calls else None
        return Score(value=CORRECT if name == target.text else INCORRECT, answer=name)

    return score


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--suite-dir", type=Path, required=True)
    parser.add_argument("--models", nargs="+", required=True)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--log-dir", type=Path, required=True)
    args = parser.parse_args()
    catalog = yaml.safe_load((args.suite_dir / "catalog.yaml").read_text(encoding="utf-8"))
    samples = []
    for line in (args.suite_dir / "tasks.jsonl").read_text(encoding="utf-8").splitlines():
        task = json.loads(line)
        samples.append(Sample(id=task["id"], input=task["messages"][0]["content"], target=task["expected"]["tool"]))
    task = Task(
        dataset=samples, solver=[use_tools(catalog_tools(catalog)), generate(tool_calls="none")], scorer=right_tool()
    )
    started_wall, started_cpu = time.perf_counter(), time.process_time()
    # One model after another at `concurrency` calls in flight: the same overall limit as the toolchoice side.
    logs = eval(
        task,
        model=[f"openai-api/{m}" for m in args.models],
        max_connections=args.concurrency,
        max_samples=args.concurrency,
        max_tasks=1,
        log_dir=str(args.log_dir),
        display="none",
    )
    wall, cpu = time.perf_counter() - started_wall, time.process_time() - started_cpu
    scored = right = errors = 0
    for log in logs:
        errors += log.status != "success"
        for sample in log.samples or []:
            for value in (sample.scores or {}).values():
                scored += 1
                right += value.value == CORRECT
    print(
        json.dumps(
            {
                "samples_scored": scored,
                "right_tool": right,
                "failed_logs": errors,
                "eval_cpu_s": round(cpu, 3),
                "eval_wall_s": round(wall, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
