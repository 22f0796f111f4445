"""Scoring large releases straight from the warehouse tables (Parquet or Arrow) with DuckDB.

Gives the same task scores and per-model numbers as the tests' row-by-row reference
(``toolchoice_pipeline_tests/scoring_reference.py``: ``score_episodes`` then ``summarise``; tests check that they
agree), from ``agent_calls`` and ``judge_votes`` rows
(the warehouse schemas) and a tasks table (:func:`tasks_table`). Everything that is arithmetic runs in DuckDB;
the Python matcher runs once per distinct (expectation, catalog, first-step calls) combination, which is
exact because a match depends on nothing else.

Episodes are grouped by ``(model, task_id, sample)`` (a missing ``sample`` is 0); the first step is step 0, which every episode has exactly once
(:func:`~toolchoice_pipeline.releases.warehouse_tables.agent_calls_table` writes a step-0 row even for an episode
that failed before any model call). An episode is an infrastructure
error when it has ``episode_error`` or its step 0 returned no reply (``calls_json`` null), as in the pure path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from toolchoice_pipeline.records.calls import Reply
from toolchoice_pipeline.scoring.confusion import AnyCallCounts, Pair
from toolchoice_pipeline.scoring.matching import match_reply, profile_named
from toolchoice_pipeline.scoring.samples import figures_from_counts
from toolchoice_pipeline.scoring.summary import ModelScores, Tally, build_model_scores
from toolchoice_pipeline.scoring.task_scores import (
    FLAG_BUDGET_EXHAUSTED,
    FLAG_INFRA_ERROR,
    FLAG_JUDGE_FAILED,
    FLAG_ORDER,
    NO_FIRST_REPLY,
)
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.suite import Suite
from toolchoice_pipeline.suites.tasks import Expected
from toolchoice_pipeline.util.canonical import canonical_json
from toolchoice_pipeline.util.duckdb_memory import memory_connection
from toolchoice_pipeline.util.errors import InputError, Problem, display_path

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

Source: TypeAlias = pa.Table | str | Path | Sequence[str | Path]
SUITE_CATALOG = ""
TASKS_SCHEMA = pa.schema(
    [
        pa.field("task_id", pa.string()),
        pa.field("expected_json", pa.string()),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("catalog_key", pa.string()),
    ]
)
CALL_FLAGS = [flag for flag in FLAG_ORDER if flag not in (FLAG_INFRA_ERROR, FLAG_JUDGE_FAILED, FLAG_BUDGET_EXHAUSTED)]


@dataclass
class ColumnarScores:
    """``task_scores`` rows (the warehouse columns without lineage) and the per-model scores."""

    task_scores: pa.Table
    models: dict[str, ModelScores]
    distinct_matches: int


def tasks_table(suite: Suite) -> pa.Table:
    """One row per task: ``task_id``, ``expected_json`` (canonical JSON; null = unlabelled), ``tags``, and
    ``catalog_key`` (the task id for a task with an inline catalog, ``""`` for the suite catalog)."""
    return pa.table(
        {
            "task_id": [t.id for t in suite.tasks],
            "expected_json": [
                None if t.expected is None else canonical_json(t.expected.model_dump(mode="json")) for t in suite.tasks
            ],
            "tags": [list(t.tags) for t in suite.tasks],
            "catalog_key": [t.id if t.tools is not None else SUITE_CATALOG for t in suite.tasks],
        },
        schema=TASKS_SCHEMA,
    )


def suite_catalogs(suite: Suite) -> dict[str, list[ToolDefinition]]:
    """``{catalog_key: catalog}`` for :func:`score_columnar`."""
    catalogs = {SUITE_CATALOG: suite.catalog}
    catalogs.update({t.id: t.tools for t in suite.tasks if t.tools is not None})
    return catalogs


def _relation(con: DuckDBPyConnection, name: str, source: Source) -> None:
    if isinstance(source, pa.Table):
        con.register(f"{name}_arrow", source)
        con.execute(f"CREATE TEMP VIEW {name} AS SELECT * FROM {name}_arrow")
        return
    paths = [source] if isinstance(source, (str, Path)) else list(source)
    listing = ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths)
    con.execute(f"CREATE TEMP VIEW {name} AS SELECT * FROM read_parquet([{listing}], hive_partitioning = false)")


def _reply(calls_json: str) -> Reply:
    """The first step's reply from its ``calls_json`` (parsed and validated in one pydantic-core call)."""
    return Reply.model_validate_json('{"calls": ' + calls_json + "}")


def score_release(suite: Suite, agent_calls: Source, judge_votes: Source) -> ColumnarScores:
    """Score a release of ``suite`` from its ``agent_calls`` and ``judge_votes`` rows: the path ``toolchoice run``
    and the Dagster assets take, for every release size. Raises :class:`InputError` naming the suite's tasks
    file when an episode's task is not in the suite."""
    return score_columnar(
        agent_calls,
        judge_votes,
        tasks_table(suite),
        profile=suite.match_profile,
        catalogs=suite_catalogs(suite),
        tasks_file=display_path(suite.tasks_file),
        suite_name=suite.name,
    )


def score_columnar(
    agent_calls: Source,
    judge_votes: Source,
    tasks: Source,
    *,
    profile: str,
    catalogs: dict[str, list[ToolDefinition]],
    threads: int | None = None,
    memory_limit: str | None = None,
    tasks_file: str = "<tasks>",
    suite_name: str | None = None,
) -> ColumnarScores:
    """Score a release from its ``agent_calls`` and ``judge_votes`` rows (Arrow tables or Parquet files).

    ``tasks`` is :func:`tasks_table`'s shape; ``catalogs`` maps its ``catalog_key`` values to catalogs
    (:func:`suite_catalogs`). Raises :class:`InputError` naming ``tasks_file`` when an episode names a task not
    in ``tasks``.
    """
    con = memory_connection(own=bool(threads or memory_limit))
    try:
        if threads:
            con.execute(f"SET threads = {int(threads)}")
        if memory_limit:
            con.execute(f"SET memory_limit = '{memory_limit}'")
        _relation(con, "agent_calls", agent_calls)
        _relation(con, "judge_votes", judge_votes)
        _relation(con, "tasks", tasks)
        key_catalog = "t.catalog_key" if profile_named(profile).uses_catalog else f"'{SUITE_CATALOG}'"
        # Step 0 is one row per episode; only the few multi-step episodes need aggregating.
        con.execute(f"""
            CREATE TEMP VIEW first_steps AS
            SELECT f.model, f.task_id, coalesce(f.sample, 0) AS sample, f.n_calls, f.latency_ms,
                   coalesce(f.provider_ms, f.latency_ms) AS provider_ms, f.cost_usd, f.flags,
                   f.calls_json AS first_calls_json, f.tool_name AS first_tool,
                   t.expected_json, t.tags, {key_catalog} AS catalog_key,
                   CASE WHEN f.episode_error IS NOT NULL THEN f.episode_error
                        WHEN f.calls_json IS NULL THEN coalesce(f.error, '{NO_FIRST_REPLY}')
                   END AS error,
                   t.task_id IS NULL AS unknown_task
            FROM agent_calls f LEFT JOIN tasks t ON t.task_id = f.task_id WHERE f.step = 0""")
        later_flags = ", ".join(f"bool_or(list_contains(flags, '{flag}')) AS has_{flag}" for flag in CALL_FLAGS)
        con.execute(f"""
            CREATE TEMP VIEW later_steps AS
            SELECT model, task_id, coalesce(sample, 0) AS sample, sum(n_calls) AS calls,
                   sum(latency_ms) AS latency_ms, sum(coalesce(provider_ms, latency_ms)) AS provider_ms,
                   sum(cost_usd) AS cost_usd, {later_flags}
            FROM agent_calls WHERE step > 0 GROUP BY ALL""")
        keys = con.sql(
            "SELECT DISTINCT expected_json, catalog_key, first_calls_json FROM first_steps "
            "WHERE error IS NULL AND expected_json IS NOT NULL"
        ).to_arrow_table()
        expected_cache: dict[str, Expected] = {}
        right_tool, right_args = [], []
        for expected_json, catalog_key, calls_json in zip(
            keys.column(0).to_pylist(), keys.column(1).to_pylist(), keys.column(2).to_pylist()
        ):
            expected = expected_cache.get(expected_json)
            if expected is None:
                expected = expected_cache[expected_json] = Expected.model_validate_json(expected_json)
            result = match_reply(expected, _reply(calls_json), catalogs[catalog_key], profile)
            right_tool.append(result.right_tool)
            right_args.append(result.right_args)
        matches = keys.append_column("right_tool", pa.array(right_tool, pa.bool_())).append_column(
            "right_args", pa.array(right_args, pa.bool_())
        )
        con.register("matches", matches)
        flags = ", ".join(
            [f"CASE WHEN list_contains(s.flags, '{flag}') OR l.has_{flag} THEN '{flag}' END" for flag in CALL_FLAGS]
            + [
                f"CASE WHEN s.error IS NOT NULL THEN '{FLAG_INFRA_ERROR}' END",
                f"CASE WHEN v.n_votes > 0 AND v.n_valid = 0 THEN '{FLAG_JUDGE_FAILED}' END",
                f"CASE WHEN v.n_budget > 0 THEN '{FLAG_BUDGET_EXHAUSTED}' END",
            ]
        )
        task_scores = con.sql(f"""
            WITH votes AS (
                SELECT model, task_id, coalesce(sample, 0) AS sample, count(*) AS n_votes,
                       count(*) FILTER (WHERE valid AND verdict IS NOT NULL) AS n_valid,
                       count(*) FILTER (WHERE valid AND verdict = 'correct') AS n_yes,
                       sum(cost_usd) AS judge_cost_usd,
                       sum(coalesce(prompt_tokens, 0) + coalesce(completion_tokens, 0)) AS judge_tokens,
                       count(*) FILTER (WHERE starts_with(error, '{FLAG_BUDGET_EXHAUSTED}')) AS n_budget
                FROM judge_votes GROUP BY ALL)
            SELECT s.model, s.task_id, s.sample,
                   CASE WHEN s.error IS NULL THEN m.right_tool END AS right_tool,
                   CASE WHEN s.error IS NULL THEN m.right_args END AS right_args,
                   CAST(s.n_calls + coalesce(l.calls, 0) AS INTEGER) AS calls, s.first_tool,
                   CASE WHEN v.n_valid > 0 THEN v.n_yes / v.n_valid END AS tsq,
                   s.error,
                   list_filter([{flags}], lambda f: f IS NOT NULL) AS flags,
                   s.tags, s.latency_ms + coalesce(l.latency_ms, 0.0) AS latency_ms,
                   s.cost_usd + coalesce(l.cost_usd, 0.0) AS agent_cost_usd,
                   coalesce(v.judge_cost_usd, 0.0) AS judge_cost_usd,
                   CAST(coalesce(v.judge_tokens, 0) AS BIGINT) AS judge_tokens,
                   s.provider_ms + coalesce(l.provider_ms, 0.0) AS provider_ms,
                   CASE WHEN NOT coalesce(json_extract(s.expected_json, '$.any_call')::BOOLEAN, false)
                        THEN coalesce(json_extract_string(s.expected_json, '$.tool'),
                                      json_extract_string(s.expected_json, '$.calls[0].tool')) END AS expected_tool,
                   CASE WHEN s.expected_json IS NOT NULL
                        THEN coalesce(json_extract(s.expected_json, '$.any_call')::BOOLEAN, false) END
                        AS expected_any_call,
                   s.unknown_task
            FROM first_steps s
            LEFT JOIN later_steps l ON l.model = s.model AND l.task_id = s.task_id AND l.sample = s.sample
            LEFT JOIN matches m ON m.expected_json = s.expected_json AND m.catalog_key = s.catalog_key
                               AND m.first_calls_json = s.first_calls_json
            LEFT JOIN votes v ON v.model = s.model AND v.task_id = s.task_id AND v.sample = s.sample
            """).to_arrow_table()
        unknown = task_scores.column("unknown_task")
        if pc.any(unknown).as_py():
            row = task_scores.slice(pc.index(unknown, True).as_py(), 1).to_pylist()[0]
            where = f"suite '{suite_name}'" if suite_name else "the suite"
            raise InputError(
                Problem(
                    file=tasks_file,
                    field="id",
                    message=f"episode of model '{row['model']}' names task '{row['task_id']}', which is not in {where}",
                )
            )
        task_scores = task_scores.drop_columns(["unknown_task"])
        models = _summarise(con, task_scores)
        return ColumnarScores(task_scores=task_scores, models=models, distinct_matches=keys.num_rows)
    finally:
        con.close()


_TALLY_SQL = """
    count(*) AS n_tasks,
    count(*) FILTER (WHERE error IS NOT NULL) AS errors,
    count(*) FILTER (WHERE error IS NULL AND right_tool IS NOT NULL) AS n_scored,
    count(*) FILTER (WHERE error IS NULL AND right_tool) AS right_tool,
    count(*) FILTER (WHERE error IS NULL AND right_args) AS right_args,
    coalesce(sum(tsq) FILTER (WHERE error IS NULL), 0.0) AS tsq_sum,
    count(tsq) FILTER (WHERE error IS NULL) AS tsq_n"""


def _tally(row: dict) -> Tally:
    return Tally(**{name: row[name] for name in Tally.__dataclass_fields__})


def summarise_columnar(task_scores: Source) -> dict[str, ModelScores]:
    """Per-model scores (as :func:`~.summary.summarise`) from ``task_scores`` rows (Arrow or Parquet)."""
    con = memory_connection()
    try:
        if isinstance(task_scores, pa.Table):
            return _summarise(con, task_scores)
        _relation(con, "staged_task_scores", task_scores)
        return _summarise(con, con.sql("SELECT * FROM staged_task_scores").to_arrow_table())
    finally:
        con.close()


def _summarise(con: DuckDBPyConnection, task_scores: pa.Table) -> dict[str, ModelScores]:
    con.register("task_scores", task_scores)
    flag_counts = ", ".join(f"count(*) FILTER (WHERE list_contains(flags, '{f}')) AS n_{f}" for f in FLAG_ORDER)
    rows = con.execute(f"""
        SELECT model, {_TALLY_SQL},
               count(*) FILTER (WHERE error IS NULL) AS n_ran,
               coalesce(sum(calls) FILTER (WHERE error IS NULL), 0) AS calls_sum,
               sum(agent_cost_usd) AS agent_cost_usd, sum(judge_cost_usd) AS judge_cost_usd,
               coalesce(sum(judge_tokens), 0) AS judge_tokens,
               count(*) FILTER (WHERE error IS NULL AND list_contains(flags, '{FLAG_JUDGE_FAILED}')) AS n_unjudged,
               quantile_cont(latency_ms, 0.5) FILTER (WHERE error IS NULL) AS p50,
               quantile_cont(latency_ms, 0.95) FILTER (WHERE error IS NULL) AS p95,
               quantile_cont(provider_ms, 0.5) FILTER (WHERE error IS NULL) AS provider_p50,
               quantile_cont(provider_ms, 0.95) FILTER (WHERE error IS NULL) AS provider_p95,
               count(*) FILTER (WHERE error IS NULL AND right_tool IS NULL) AS n_unlabelled,
               {flag_counts}
        FROM task_scores GROUP BY model ORDER BY model""").fetchall()
    columns = [d[0] for d in con.description]
    tag_rows = con.execute(f"""
        SELECT model, tag, {_TALLY_SQL}
        FROM (SELECT *, unnest(list_distinct(tags)) AS tag FROM task_scores)
        GROUP BY model, tag""").fetchall()
    tag_columns = [d[0] for d in con.description]
    tags: dict[str, dict[str, Tally]] = {}
    for values in tag_rows:
        row = dict(zip(tag_columns, values))
        tags.setdefault(row["model"], {})[row["tag"]] = _tally(row)
    pairs, any_call = _confusion_counts(con, task_scores)
    per_task: dict[str, dict[str, tuple[int, int, int]]] = {}
    for model, task_id, samples, scored, right in con.execute("""
            SELECT model, task_id, count(*), count(*) FILTER (WHERE error IS NULL AND right_tool IS NOT NULL),
                   count(*) FILTER (WHERE error IS NULL AND right_tool)
            FROM task_scores GROUP BY model, task_id""").fetchall():
        per_task.setdefault(model, {})[task_id] = (samples, scored, right)
    models = {}
    for values in rows:
        row = dict(zip(columns, values))
        flags = {flag: row[f"n_{flag}"] for flag in FLAG_ORDER if row[f"n_{flag}"]}
        models[row["model"]] = build_model_scores(
            _tally(row),
            n_ran=row["n_ran"],
            calls_sum=int(row["calls_sum"]),
            agent_cost_usd=row["agent_cost_usd"] or 0.0,
            judge_cost_usd=row["judge_cost_usd"] or 0.0,
            latency_ms_p50=row["p50"],
            latency_ms_p95=row["p95"],
            n_unlabelled=row["n_unlabelled"],
            provider_ms_p50=row["provider_p50"],
            provider_ms_p95=row["provider_p95"],
            flags=flags,
            tags=tags.get(row["model"], {}),
            judge_tokens=row["judge_tokens"],
            n_unjudged=row["n_unjudged"],
            samples=figures_from_counts(per_task.get(row["model"], {})),
            n_distinct_tasks=len(per_task.get(row["model"], {})),
            pairs=pairs.get(row["model"], {}),
            any_call=any_call.get(row["model"]),
        )
    return models


def _confusion_counts(
    con: DuckDBPyConnection, task_scores: pa.Table
) -> tuple[dict[str, dict[Pair, int]], dict[str, AnyCallCounts]]:
    """Per model, the ``(expected tool, first tool)`` counts of scored episodes (:mod:`.confusion`) and the
    ``any_call`` tasks' counts; none for ``task_scores`` rows written before ``expected_tool`` existed."""
    pairs: dict[str, dict[Pair, int]] = {}
    any_call: dict[str, AnyCallCounts] = {}
    if "expected_any_call" not in task_scores.column_names:
        return pairs, any_call
    for model, is_any_call, expected, chosen, n in con.execute("""
            SELECT model, expected_any_call, expected_tool, first_tool, count(*)
            FROM task_scores
            WHERE error IS NULL AND right_tool IS NOT NULL AND expected_any_call IS NOT NULL
            GROUP BY ALL""").fetchall():
        if is_any_call:
            counts = any_call.setdefault(model, AnyCallCounts())
            counts.episodes += n
            counts.no_call += n if chosen is None else 0
        else:
            pairs.setdefault(model, {})[(expected, chosen)] = n
    return pairs, any_call
