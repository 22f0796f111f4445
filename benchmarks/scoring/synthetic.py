"""Synthetic release data for the scoring benchmark, written as warehouse-shaped Parquet.

3 models × 333,334 tasks = 1,000,002 episodes. Each task takes its expectation from one of ``n_templates``
templates (40 tools; string, integer and boolean key arguments; ``regex`` and ``any_of`` matchers; 3% "no
call expected"; 2% unlabelled), or, with ``unique=True``, an expectation of its own (the worst case for the
matcher cache). Each episode's first step is one of ten reply variants (exact call, call with whitespace/NFD
/40.0-style differences and an extra argument, wrong arguments, wrong tool, no call, call written in text,
truncated JSON arguments, a hallucinated tool, two calls right-first, two calls wrong-first), drawn with a
per-model quality against a per-task skill that is the same in every release (so a release differs from its
baseline only on the tasks where a model's quality moved); 15% of episodes have a second step; 1.5% are
infrastructure errors; 3 judge polls per episode. Replies go through the project's own normalisation
(:func:`make_call`, :func:`flag_hallucinated`, :func:`calls_json`), so the rows are what a real run would store.
"""

from __future__ import annotations

import json
import random
import unicodedata
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from toolchoice_pipeline.records.calls import FLAG_INVALID_CALL, Reply, ToolCall, flag_hallucinated, make_call
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.warehouse_tables import SCHEMAS, calls_json
from toolchoice_pipeline.scoring.columnar import TASKS_SCHEMA
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.util.canonical import canonical_json

MODELS = ("sim/model-a", "sim/model-b", "sim/model-c")
VERBS = ["search", "read", "write", "list", "delete", "move", "copy", "fetch", "send", "create"]
NOUNS = ["file", "issue", "email", "event"]
TOOLS = [f"{verb}_{noun}" for verb in VERBS for noun in NOUNS]  # 40 tools
RIGHT_VARIANTS = (0, 1, 8)
WRONG_VARIANTS = (2, 3, 4, 5, 6, 7, 9)


def catalog() -> list[ToolDefinition]:
    return [
        ToolDefinition(
            name=name,
            description=f"{name.replace('_', ' ')} by name.",
            parameters={
                "type": "object",
                "properties": {
                    "target": {"type": "string"},
                    "limit": {"type": "integer"},
                    "recursive": {"type": "boolean"},
                    "verbose": {"type": "boolean"},
                },
                "required": ["target"],
            },
        )
        for name in TOOLS
    ]


def expectation(index: int) -> dict | None:
    """Expectation number ``index``: a tool and key arguments, no call (tool null), or None (unlabelled)."""
    if index % 50 == 49:
        return None
    if index % 33 == 32:
        return {"tool": None, "arguments": {}}
    tool = TOOLS[index % len(TOOLS)]
    target = f"item-{index:06d}"
    arguments: dict = {"target": target}
    if index % 3 == 0:
        arguments["limit"] = 10 + index % 90
    if index % 7 == 0:
        arguments["recursive"] = bool(index % 2)
    if index % 11 == 0:
        arguments["target"] = {"regex": f"^item-{index:06d}$"}
    elif index % 13 == 0:
        arguments["target"] = {"any_of": [target, target.upper()]}
    return {"tool": tool, "arguments": arguments}


def _plain(value):
    if isinstance(value, dict) and "regex" in value:
        return value["regex"].strip("^$")
    if isinstance(value, dict) and "any_of" in value:
        return value["any_of"][-1]
    return value


def reply_for(expected: dict | None, variant: int) -> Reply:
    """Reply ``variant`` (0-9, see the module docstring) to a task with ``expected``."""
    tool = (expected or {}).get("tool") or TOOLS[0]
    arguments = {k: _plain(v) for k, v in ((expected or {}).get("arguments") or {"target": "x"}).items()}
    other_tool = TOOLS[(TOOLS.index(tool) + 1) % len(TOOLS)]
    if variant == 0:
        calls = [make_call(tool, arguments)]
    elif variant == 1:
        varied = {
            k: (
                f"  {unicodedata.normalize('NFD', v)} "
                if isinstance(v, str)
                else float(v)
                if isinstance(v, int) and not isinstance(v, bool)
                else v
            )
            for k, v in arguments.items()
        }
        calls = [make_call(tool, json.dumps({**varied, "verbose": True}))]
    elif variant == 2:
        calls = [make_call(tool, {**arguments, "target": "somewhere-else"})]
    elif variant == 3:
        calls = [make_call(other_tool, arguments)]
    elif variant == 4:
        return Reply(text="I can answer that without a tool.")
    elif variant == 5:
        text = f'<tool_call>{{"name": "{tool}", "arguments": {{"target": "'
        return Reply(
            text=text, calls=[ToolCall(name=tool, arguments=None, raw_arguments=text[11:], flags=[FLAG_INVALID_CALL])]
        )
    elif variant == 6:
        calls = [make_call(tool, json.dumps(arguments)[:-3])]
    elif variant == 7:
        calls = [make_call(tool.replace("_", "-") + "-v2", arguments)]
    elif variant == 8:
        calls = [make_call(tool, arguments), make_call(other_tool, arguments)]
    else:
        calls = [make_call(other_tool, arguments), make_call(tool, arguments)]
    if expected is not None and expected.get("tool") is None and variant in RIGHT_VARIANTS:
        return Reply(text="No tool needed.")
    return Reply(calls=calls)


def _step_row(reply: Reply, names: set[str]) -> dict:
    reply = flag_hallucinated(reply, names)
    first = reply.first_call
    return {
        "tool_name": first.name if first else None,
        "arguments_json": first.arguments_json() if first else None,
        "arguments_valid": first.arguments_valid if first else None,
        "n_calls": len(reply.calls),
        "calls_json": calls_json(reply.calls),
        "flags": reply.flags,
        "content": reply.text,
    }


def generate(
    out: Path,
    *,
    n_tasks: int = 333_334,
    n_templates: int = 5_000,
    unique: bool = False,
    quality: dict[str, float] | None = None,
    seed: int = 1,
    release_id: str = "bench",
    write_tasks: bool = True,
) -> dict:
    """Write ``tasks.parquet``, ``agent_calls.parquet`` and ``judge_votes.parquet`` under ``out``."""
    rng = random.Random(seed)
    task_rng = random.Random(12345)  # the same tasks for every release
    quality = quality or {"sim/model-a": 0.88, "sim/model-b": 0.80, "sim/model-c": 0.70}
    names = {tool.name for tool in catalog()}
    lineage = Lineage(release_id=release_id, suite="synthetic", catalog_version="0123456789ab", run_id=f"run-{seed}")
    out.mkdir(parents=True, exist_ok=True)
    templates = [(i if unique else task_rng.randrange(n_templates)) for i in range(n_tasks)]
    task_ids = [f"t{i:06d}" for i in range(n_tasks)]
    expectations = {}
    if write_tasks:
        rows = {"task_id": task_ids, "expected_json": [], "tags": [], "catalog_key": [""] * n_tasks}
        for i, template in enumerate(templates):
            expected = expectations.setdefault(template, expectation(template))
            rows["expected_json"].append(None if expected is None else canonical_json(expected))
            tool = (expected or {}).get("tool") or "none"
            rows["tags"].append([tool.split("_")[0]] + (["hard"] if i % 5 == 0 else []))
        pq.write_table(pa.table(rows, schema=TASKS_SCHEMA), out / "tasks.parquet")
    cache: dict[tuple[int, int], dict] = {}
    calls = {field.name: [] for field in SCHEMAS["agent_calls"]}
    votes = {field.name: [] for field in SCHEMAS["judge_votes"]}
    second_step = _step_row(Reply(calls=[make_call(TOOLS[1], {"target": "next"})]), names)
    for model_index, model in enumerate(MODELS):
        # A model's skill on a task is the same in every release, so releases differ only where quality moved.
        skill_rng = random.Random(1000 + model_index)
        for i, template in enumerate(templates):
            task_id = task_ids[i]
            skill, pick = skill_rng.random(), skill_rng.random()
            if rng.random() < 0.015:
                _append(
                    calls,
                    lineage,
                    model=model,
                    task_id=task_id,
                    step=0,
                    n_calls=0,
                    flags=[],
                    latency_ms=0.0,
                    prompt_tokens=0,
                    completion_tokens=0,
                    cost_usd=0.0,
                    error="RateLimitError: 429",
                    cache_hit=False,
                    episode_error="RateLimitError: 429",
                )
                continue
            variant = (
                RIGHT_VARIANTS[int(pick * len(RIGHT_VARIANTS))]
                if skill < quality[model]
                else WRONG_VARIANTS[int(pick * len(WRONG_VARIANTS))]
            )
            key = (template, variant)
            row = cache.get(key)
            if row is None:
                row = _step_row(reply_for(expectations.setdefault(template, expectation(template)), variant), names)
                if not unique:
                    cache[key] = row
            latency = rng.lognormvariate(6.0, 0.5)
            _append(
                calls,
                lineage,
                model=model,
                task_id=task_id,
                step=0,
                latency_ms=latency,
                prompt_tokens=900,
                completion_tokens=40,
                cost_usd=0.00031,
                error=None,
                cache_hit=False,
                episode_error=None,
                **row,
            )
            if rng.random() < 0.15:
                _append(
                    calls,
                    lineage,
                    model=model,
                    task_id=task_id,
                    step=1,
                    latency_ms=latency / 2,
                    prompt_tokens=1000,
                    completion_tokens=30,
                    cost_usd=0.00033,
                    error=None,
                    cache_hit=False,
                    episode_error=None,
                    **second_step,
                )
            for poll in range(3):
                valid = rng.random() < 0.98
                verdict = ("correct" if rng.random() < 0.75 else "incorrect") if valid else None
                _append(
                    votes,
                    lineage,
                    model=model,
                    task_id=task_id,
                    poll=poll,
                    verdict=verdict,
                    reasoning="The request names the target directly, so this tool fits best.",
                    valid=valid,
                    attempts=1,
                    judge_model="local/judge",
                    rubric_version="rv1",
                    prompt_tokens=1500,
                    completion_tokens=60,
                    cost_usd=0.00002,
                    error=None,
                )
    pq.write_table(
        pa.table(calls, schema=SCHEMAS["agent_calls"]),
        out / "agent_calls.parquet",
        compression="zstd",
        row_group_size=128 * 1024,
    )
    pq.write_table(
        pa.table(votes, schema=SCHEMAS["judge_votes"]),
        out / "judge_votes.parquet",
        compression="zstd",
        row_group_size=128 * 1024,
    )
    return {
        "tasks": n_tasks,
        "episodes": n_tasks * len(MODELS),
        "agent_calls_rows": len(calls["model"]),
        "judge_votes_rows": len(votes["model"]),
        "distinct_expectations": len(set(templates)),
    }


def _append(columns: dict[str, list], lineage: Lineage, **values) -> None:
    values.update(lineage.columns())
    for name, column in columns.items():
        column.append(values.get(name))
