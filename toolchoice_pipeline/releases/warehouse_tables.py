"""The warehouse tables (DESIGN §3): their Arrow schemas and builders from the pipeline's records.

Every table starts with the lineage columns ``release_id``, ``suite``, ``catalog_version``, ``run_id``
(:class:`~toolchoice_pipeline.releases.lineage.Lineage`). Units are in the names: ``_ms`` milliseconds, ``_usd`` US
dollars, ``_pct`` points (0–100), ``tsq`` a fraction (0–1).

- ``task_scores``: one row per episode (model × task × sample; ``sample`` 0..k-1 with repeats); ``expected_tool``
  and ``expected_any_call`` say what the task expected first (:class:`~toolchoice_pipeline.records.episodes.TaskScore`;
  null in releases written before issue 25), the basis of the ``tool_confusion`` and ``tool_scores`` views.
- ``release_scores``: one row per model (the ``models`` entries of ``scores.json``; the per-tag breakdown
  as JSON text in ``tags_json``, flag counts as ``n_<flag>`` columns).
- ``agent_calls``: one row per model call (episode step); ``latency_ms`` as our client timed the call,
  ``provider_ms`` the provider's part (null when not reported), ``queued_ms`` our client's part, ``confidence`` the
  model's own confidence in the reply (0-1; null unless the provider reports one: ``needle/``). ``tool_name`` / ``arguments_json`` /
  ``arguments_valid`` describe the step's *first* call; ``n_calls`` and ``calls_json`` hold all of them
  with their flags (:func:`calls_json`), so a step's cost and tokens are stored once; ``calls_json`` is null
  when the model call returned no reply; ``sample`` is the episode's sample. An episode that failed before any model
  call gets one step-0 row with no reply; ``episode_error`` repeats the episode's infrastructure error on
  each of its rows.
- ``judge_votes``: one row per judge poll of one sample, with its reasoning.
- ``tool_catalog``: one row per tool definition the release ran with; ``task_id`` is null for the suite
  catalog and names the task for a task's inline catalog (BFCL-style suites).
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from toolchoice_pipeline.records.calls import ToolCall, flag_hallucinated
from toolchoice_pipeline.records.episodes import Episode, JudgeVote, TaskScore
from toolchoice_pipeline.releases.lineage import LINEAGE_COLUMNS, Lineage
from toolchoice_pipeline.scoring.summary import NOT_RELEASE_SCORES_COLUMNS, ModelScores
from toolchoice_pipeline.scoring.task_scores import FLAG_ORDER
from toolchoice_pipeline.suites.argument_schema import ArgumentChecker, by_name
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.suite import Suite
from toolchoice_pipeline.util.canonical import canonical_json

_LINEAGE_FIELDS = [pa.field(name, pa.string(), nullable=False) for name in LINEAGE_COLUMNS]
_STRINGS = pa.list_(pa.string())


def _interval_columns(name: str) -> tuple[str, str]:
    """``right_tool_ci95_pct`` → (``right_tool_ci95_low_pct``, ``right_tool_ci95_high_pct``)."""
    stem = name.removesuffix("_pct")
    return f"{stem}_low_pct", f"{stem}_high_pct"


def _model_score_fields() -> list[pa.Field]:
    """The ``release_scores`` columns of :class:`ModelScores`' fields, in their order (see its docstring)."""
    fields: list[pa.Field] = []
    for name, info in ModelScores.model_fields.items():
        if name in NOT_RELEASE_SCORES_COLUMNS:
            continue
        kind = typing.get_origin(info.annotation)
        args = typing.get_args(info.annotation)
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        declared = extra.get("column_type")
        if declared:
            fields.append(pa.field(name, pa.type_for_alias(declared)))
        elif name == "flags":
            fields += [pa.field(f"n_{flag}", pa.int32()) for flag in FLAG_ORDER]
        elif name == "tags":
            fields.append(pa.field("tags_json", pa.string()))
        elif typing.get_origin(info.annotation) is list:  # a list of names (flaky_tasks)
            fields.append(pa.field(name, _STRINGS))
        elif info.annotation is bool:
            fields.append(pa.field(name, pa.bool_()))
        elif info.annotation is int:
            fields.append(pa.field(name, pa.int32()))
        elif info.annotation is float or (kind in (types.UnionType, typing.Union) and float in args):
            fields.append(pa.field(name, pa.float64()))
        elif any(typing.get_origin(arg) is list for arg in args):
            fields += [pa.field(column, pa.float64()) for column in _interval_columns(name)]
        else:
            raise TypeError(f"ModelScores.{name}: no release_scores column type for {info.annotation!r}")
    return fields


SCHEMAS: dict[str, pa.Schema] = {
    "task_scores": pa.schema(
        _LINEAGE_FIELDS
        + [
            pa.field("model", pa.string()),
            pa.field("task_id", pa.string()),
            pa.field("sample", pa.int32()),
            pa.field("right_tool", pa.bool_()),
            pa.field("right_args", pa.bool_()),
            pa.field("calls", pa.int32()),
            pa.field("first_tool", pa.string()),
            pa.field("tsq", pa.float64()),
            pa.field("error", pa.string()),
            pa.field("flags", _STRINGS),
            pa.field("tags", _STRINGS),
            pa.field("latency_ms", pa.float64()),
            pa.field("agent_cost_usd", pa.float64()),
            pa.field("judge_cost_usd", pa.float64()),
            pa.field("judge_tokens", pa.int64()),
            pa.field("provider_ms", pa.float64()),
            pa.field("expected_tool", pa.string()),
            pa.field("expected_any_call", pa.bool_()),
        ]
    ),
    "release_scores": pa.schema(_LINEAGE_FIELDS + [pa.field("model", pa.string()), *_model_score_fields()]),
    "agent_calls": pa.schema(
        _LINEAGE_FIELDS
        + [
            pa.field("model", pa.string()),
            pa.field("task_id", pa.string()),
            pa.field("sample", pa.int32()),
            pa.field("step", pa.int32()),
            pa.field("tool_name", pa.string()),
            pa.field("arguments_json", pa.string()),
            pa.field("arguments_valid", pa.bool_()),
            pa.field("n_calls", pa.int32()),
            pa.field("calls_json", pa.string()),
            pa.field("flags", _STRINGS),
            pa.field("content", pa.string()),
            pa.field("latency_ms", pa.float64()),
            pa.field("prompt_tokens", pa.int64()),
            pa.field("completion_tokens", pa.int64()),
            pa.field("cost_usd", pa.float64()),
            pa.field("error", pa.string()),
            pa.field("cache_hit", pa.bool_()),
            pa.field("request_key", pa.string()),
            pa.field("episode_error", pa.string()),
            pa.field("provider_ms", pa.float64()),
            pa.field("queued_ms", pa.float64()),
            pa.field("confidence", pa.float64()),
        ]
    ),
    "judge_votes": pa.schema(
        _LINEAGE_FIELDS
        + [
            pa.field("model", pa.string()),
            pa.field("task_id", pa.string()),
            pa.field("sample", pa.int32()),
            pa.field("poll", pa.int32()),
            pa.field("verdict", pa.string()),
            pa.field("reasoning", pa.string()),
            pa.field("valid", pa.bool_()),
            pa.field("attempts", pa.int32()),
            pa.field("judge_model", pa.string()),
            pa.field("rubric_version", pa.string()),
            pa.field("prompt_tokens", pa.int64()),
            pa.field("completion_tokens", pa.int64()),
            pa.field("cost_usd", pa.float64()),
            pa.field("error", pa.string()),
        ]
    ),
    "tool_catalog": pa.schema(
        _LINEAGE_FIELDS
        + [
            pa.field("task_id", pa.string()),
            pa.field("tool_name", pa.string()),
            pa.field("description", pa.string()),
            pa.field("parameters_json", pa.string()),
            pa.field("definition_hash", pa.string()),
        ]
    ),
}
TABLE_NAMES = tuple(SCHEMAS)


CHUNK_ROWS = 4096  # rows built as Python dicts at a time: the builders hold one chunk of dicts, the rest as Arrow


def build_chunked(name: str, rows: Iterable[dict[str, Any]], lineage: Lineage) -> pa.Table:
    """:func:`build_table` over an iterable of rows, :data:`CHUNK_ROWS` at a time (one Arrow chunk each)."""
    chunks, chunk = [], []
    for row in rows:
        chunk.append(row)
        if len(chunk) == CHUNK_ROWS:
            chunks.append(build_table(name, chunk, lineage))
            chunk = []
    if chunk or not chunks:
        chunks.append(build_table(name, chunk, lineage))
    return pa.concat_tables(chunks)


def build_table(name: str, rows: list[dict[str, Any]], lineage: Lineage) -> pa.Table:
    """An Arrow table of table ``name`` from row dicts (without lineage); lineage columns are filled in."""
    schema = SCHEMAS[name]
    columns: dict[str, list[Any]] = {field.name: [] for field in schema}
    for column, value in lineage.columns().items():
        columns[column] = [value] * len(rows)
    for field in schema:
        if field.name in LINEAGE_COLUMNS:
            continue
        columns[field.name] = [row.get(field.name) for row in rows]
    return pa.table(columns, schema=schema)


def with_lineage(name: str, table: pa.Table, lineage: Lineage) -> pa.Table:
    """Rows of table ``name`` without lineage columns (e.g. the columnar scorer's ``task_scores``) with
    ``lineage`` filled in, in the declared schema."""
    for column, value in lineage.columns().items():
        table = table.append_column(column, pa.array([value] * table.num_rows, pa.string()))
    return conform(name, table, lineage)


def conform(name: str, table: pa.Table, lineage: Lineage) -> pa.Table:
    """``table`` cast to the declared schema of ``name``, checked to carry exactly ``lineage``.

    Raises ``ValueError`` for an unknown table, missing columns, or rows of another release.
    """
    if name not in SCHEMAS:
        raise ValueError(f"unknown warehouse table {name!r} (tables: {', '.join(TABLE_NAMES)})")
    schema = SCHEMAS[name]
    missing = [f.name for f in schema if f.name not in table.column_names]
    if missing:
        raise ValueError(f"table {name} lacks columns {missing}")
    table = table.select(schema.names).cast(schema)
    for column, value in lineage.columns().items():
        distinct = table.column(column).unique().to_pylist()
        if distinct and distinct != [value]:
            raise ValueError(f"table {name}: column {column} holds {distinct[:3]}, expected only {value!r}")
    return table


def task_scores_table(scores: Iterable[TaskScore], lineage: Lineage) -> pa.Table:
    """``task_scores`` rows, one per episode."""
    return build_chunked("task_scores", (s.model_dump() for s in scores), lineage)


def release_scores_table(models: dict[str, ModelScores], lineage: Lineage) -> pa.Table:
    """``release_scores`` rows, one per model."""
    rows = []
    for model, scores in models.items():
        row = scores.model_dump(exclude=set(NOT_RELEASE_SCORES_COLUMNS))
        for name in [name for name in row if name.endswith("_ci95_pct")]:
            row[_interval_columns(name)[0]], row[_interval_columns(name)[1]] = row.pop(name) or [None, None]
        for flag, count in row.pop("flags").items():
            row[f"n_{flag}"] = count
        row["tags_json"] = json.dumps(row.pop("tags"), sort_keys=True)
        rows.append({"model": model, **row})
    return build_table("release_scores", rows, lineage)


def agent_calls_table(episodes: Iterable[Episode], lineage: Lineage, suite: Suite | None = None) -> pa.Table:
    """``agent_calls`` rows, one per model call; with ``suite``, calls outside a task's catalog are flagged
    ``hallucinated_tool`` and decoded arguments that break their tool's schema carry the flags of
    :mod:`~toolchoice_pipeline.suites.argument_schema` (as scoring flags them), so ``arguments_valid`` means
    schema-valid."""
    catalogs: dict[str, dict[str, ToolDefinition]] = {}
    if suite is not None:
        suite_tools = by_name(suite.catalog)
        for task in suite.tasks:
            catalogs[task.id] = by_name(task.tools) if task.tools is not None else suite_tools
    return build_chunked("agent_calls", _agent_call_rows(episodes, catalogs), lineage)


def _agent_call_rows(
    episodes: Iterable[Episode], catalogs: dict[str, dict[str, ToolDefinition]]
) -> Iterator[dict[str, Any]]:
    checker = ArgumentChecker()
    for episode in episodes:
        steps = episode.steps or []
        if not steps:
            yield (
                {
                    "model": episode.model,
                    "task_id": episode.task_id,
                    "sample": episode.sample,
                    "step": 0,
                    "n_calls": 0,
                    "flags": [],
                    "latency_ms": 0.0,
                    "prompt_tokens": 0,
                    "completion_tokens": 0,
                    "cost_usd": 0.0,
                    "error": episode.error,
                    "cache_hit": False,
                    "episode_error": episode.error,
                    "queued_ms": 0.0,
                }
            )
            continue
        for step in steps:
            reply = step.reply
            if reply is not None and episode.task_id in catalogs:
                tools = catalogs[episode.task_id]
                reply = checker.flag(flag_hallucinated(reply, tools), tools)
            first = reply.first_call if reply is not None else None
            yield (
                {
                    "model": episode.model,
                    "task_id": episode.task_id,
                    "sample": episode.sample,
                    "step": step.step,
                    "tool_name": first.name if first else None,
                    "arguments_json": first.arguments_json() if first else None,
                    "arguments_valid": first.arguments_valid if first else None,
                    "n_calls": len(reply.calls) if reply is not None else 0,
                    "calls_json": calls_json(reply.calls) if reply is not None else None,
                    "flags": reply.flags if reply is not None else [],
                    "content": reply.text if reply is not None else None,
                    "latency_ms": step.latency_ms,
                    "prompt_tokens": step.prompt_tokens,
                    "completion_tokens": step.completion_tokens,
                    "cost_usd": step.cost_usd,
                    "error": step.error,
                    "cache_hit": step.cache_hit,
                    "request_key": step.request_key or None,
                    "episode_error": episode.error,
                    "provider_ms": step.provider_ms,
                    "queued_ms": step.queued_ms,
                    "confidence": step.confidence,
                }
            )


def calls_json(calls: list[ToolCall]) -> str:
    """All calls of a step as JSON: name, decoded ``arguments``, ``raw_arguments`` and ``flags`` of each.

    Provider call ids are left out: they are unique per call, carry no information about the choice, and
    would make every row distinct (the columnar scorer matches each distinct value once).
    """
    return json.dumps([call.model_dump(exclude={"id"}) for call in calls], ensure_ascii=False, sort_keys=True)


def judge_votes_table(votes: Iterable[JudgeVote], lineage: Lineage) -> pa.Table:
    """``judge_votes`` rows, one per poll."""
    return build_chunked("judge_votes", (v.model_dump() for v in votes), lineage)


def tool_catalog_table(suite: Suite, lineage: Lineage) -> pa.Table:
    """``tool_catalog`` rows: the suite's merged catalog (``task_id`` null), then every inline task catalog."""
    rows = [_tool_row(tool, None) for tool in suite.catalog]
    for task in suite.tasks:
        rows.extend(_tool_row(tool, task.id) for tool in task.tools or [])
    return build_table("tool_catalog", rows, lineage)


def _tool_row(tool: ToolDefinition, task_id: str | None) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "tool_name": tool.name,
        "description": tool.description,
        "parameters_json": canonical_json(tool.parameters),
        "definition_hash": tool.definition_hash,
    }
