"""Helpers for the execution tests: small suites written to a temp data dir, and a scripted in-process model.

The scripted model is a real LiteLLM custom provider (``scripted/<name>``), registered through
``providers.register_providers(extra=...)``: every call still goes through ``litellm.acompletion``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from litellm import CustomLLM

from toolchoice_pipeline.providers import register_providers
from toolchoice_pipeline.providers.response import fill_response
from toolchoice_pipeline.suites.suite import Suite, load_suite

CATALOG = [
    {
        "name": "Read",
        "description": "Read a file from the local filesystem.",
        "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
    },
    {
        "name": "Grep",
        "description": "Search file contents with a regular expression.",
        "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]},
    },
    {
        "name": "Glob",
        "description": "Find files by name pattern.",
        "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]},
    },
]


def task_line(task_id: str, text: str, tool: str | None, **extra: Any) -> dict[str, Any]:
    line = {
        "id": task_id,
        "messages": [{"role": "user", "content": text}],
        "expected": {"tool": tool, "arguments": {}},
        "tools": None,
        "tool_results": None,
        "tags": [],
    }
    line.update(extra)
    return line


def write_suite(
    data_dir: Path,
    tasks: list[dict[str, Any]],
    *,
    catalog: list[dict[str, Any]] | None = None,
    name: str = "demo",
    models: list[str] | None = None,
) -> Suite:
    """Write ``data_dir/suites/<name>`` with the given task lines and load it (without semantic checks)."""
    directory = data_dir / "suites" / name
    directory.mkdir(parents=True, exist_ok=True)
    spec: dict[str, Any] = {"name": name, "catalog": "catalog.yaml", "tasks": "tasks.jsonl"}
    if models:
        spec["models"] = models
    (directory / "suite.yaml").write_text(yaml.safe_dump(spec))
    (directory / "catalog.yaml").write_text(yaml.safe_dump(catalog or CATALOG, sort_keys=False))
    (directory / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return load_suite(data_dir, name, check=False)


def numbered_tasks(n: int, tool: str = "Read") -> list[dict[str, Any]]:
    return [task_line(f"t{i:03d}", f"Please use {tool} on file{i}.txt", tool) for i in range(n)]


def call(name: str, arguments: dict[str, Any] | str | None = None, call_id: str = "call_1") -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


# script(model_name, messages, tools, metadata) -> assistant message dict, or raises
Script = Callable[[str, list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]], dict[str, Any]]


class ScriptedProvider(CustomLLM):
    """Answers with ``script``; records every request and the highest number of calls in flight at once
    (overall and per model). ``delay_s`` keeps each call in flight that long."""

    def __init__(self, script: Script, *, delay_s: float = 0.0):
        super().__init__()
        self.script = script
        self.delay_s = delay_s
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.in_flight_by_model: dict[str, int] = {}
        self.max_in_flight = 0
        self.max_in_flight_by_model: dict[str, int] = {}
        self.started: list[tuple[float, str]] = []

    async def acompletion(
        self,
        model,
        messages,
        api_base,
        custom_prompt_dict,
        model_response,
        print_verbose,
        encoding,
        api_key,
        logging_obj,
        optional_params,
        *args,
        **kwargs,
    ):
        params = dict(optional_params)
        tools = params.pop("tools", None) or []
        metadata = (kwargs.get("litellm_params") or {}).get("metadata") or {}
        self.requests.append(
            {"model": model, "messages": messages, "tools": tools, "metadata": dict(metadata), "params": params}
        )
        self.started.append((time.perf_counter(), model))
        self.in_flight += 1
        self.in_flight_by_model[model] = self.in_flight_by_model.get(model, 0) + 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.max_in_flight_by_model[model] = max(
            self.max_in_flight_by_model.get(model, 0), self.in_flight_by_model[model]
        )
        try:
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            message = self.script(model, messages, tools, metadata)
        finally:
            self.in_flight -= 1
            self.in_flight_by_model[model] -= 1
        return fill_response(model_response, message, model=f"scripted/{model}", prompt=[messages, tools])


def register_scripted(script: Script, *, delay_s: float = 0.0, name: str = "scripted") -> ScriptedProvider:
    handler = ScriptedProvider(script, delay_s=delay_s)
    register_providers(extra={name: handler})
    return handler
