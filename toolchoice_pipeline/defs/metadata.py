"""Numbers for Dagster metadata: counts, costs, latency and Markdown tables. Nothing secret goes in here:
only model names, counts, figures and catalog diffs (tool names)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import dagster as dg

from toolchoice_pipeline.records.episodes import Episode, JudgeVote
from toolchoice_pipeline.releases.document import ReleaseDocument
from toolchoice_pipeline.releases.report import SCORE_COLUMNS, score_cells
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.suites.catalog import ToolDefinition, diff_catalogs
from toolchoice_pipeline.suites.suite import Suite


def episode_metadata(episodes: Iterable[Episode]) -> dict[str, Any]:
    """Per-model episodes, infrastructure errors, model calls, cache hits and agent cost (USD), in one pass."""
    rows: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for episode in episodes:
        row = rows[episode.model]
        row["episodes"] += 1
        row["errors"] += 1 if episode.error else 0
        row["model_calls"] += len(episode.steps)
        row["cache_hits"] += sum(1 for s in episode.steps if s.cache_hit)
        row["tool_calls"] += episode.calls
        row["agent_cost_usd"] += episode.cost_usd
    table = [
        "| model | episodes | infra errors | model calls | cache hits | tool calls | agent cost (USD) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for model, row in rows.items():
        table.append(
            f"| {model} | {row['episodes']:.0f} | {row['errors']:.0f} | {row['model_calls']:.0f} | "
            f"{row['cache_hits']:.0f} | {row['tool_calls']:.0f} | {row['agent_cost_usd']:.6f} |"
        )

    def total(column: str) -> float:
        return sum(row[column] for row in rows.values())

    return {
        "n_episodes": int(total("episodes")),
        "n_infrastructure_errors": int(total("errors")),
        "model_calls": int(total("model_calls")),
        "cache_hits": int(total("cache_hits")),
        "agent_cost_usd": round(total("agent_cost_usd"), 6),
        "per_model": dg.MetadataValue.md("\n".join(table)),
    }


def judge_metadata(votes: Iterable[JudgeVote]) -> dict[str, Any]:
    """Votes, valid share (fraction), judge tokens and cost (USD), in one pass."""
    n = valid = prompt_tokens = completion_tokens = 0
    cost = 0.0
    for vote in votes:
        n += 1
        valid += 1 if vote.valid else 0
        prompt_tokens += vote.prompt_tokens
        completion_tokens += vote.completion_tokens
        cost += vote.cost_usd
    return {
        "n_votes": n,
        "valid_vote_rate": round(valid / n, 4) if n else 0.0,
        "judge_prompt_tokens": prompt_tokens,
        "judge_completion_tokens": completion_tokens,
        "judge_cost_usd": round(cost, 6),
    }


def scores_markdown(scores: ReleaseDocument) -> str:
    """The per-model scores of a release document as a Markdown table (shares in points; a cost the document
    marks unpriced, ``agent_cost_unpriced``/``judge_cost_unpriced``, shows "unpriced", never 0.0000)."""
    lines = ["| model | " + " | ".join(SCORE_COLUMNS) + " |", "|---|" + "---:|" * len(SCORE_COLUMNS)]
    for model, figures in scores.models.items():
        lines.append(f"| {model} | " + " | ".join(score_cells(figures)) + " |")
    return "\n".join(lines)


def catalog_diff_against_baseline(data_dir: Path, suite: Suite, tools: list[ToolDefinition]) -> tuple[str, str | None]:
    """Markdown of the catalog diff against the suite baseline's stored catalog, and the baseline id."""
    from toolchoice_pipeline.releases.warehouse import Warehouse

    baseline_id = ReleaseStore(data_dir).baseline(suite.name)
    if baseline_id is None:
        return "No baseline yet for this suite: nothing to compare with.", None
    warehouse = Warehouse(data_dir)
    if warehouse.commit(baseline_id) is None:
        return f"The baseline {baseline_id} has no stored catalog.", baseline_id
    table = warehouse.read_table("tool_catalog", baseline_id, ["tool_name", "description", "parameters_json"])
    import json

    old = [
        ToolDefinition(
            name=row["tool_name"],
            description=row["description"] or "",
            parameters=json.loads(row["parameters_json"] or "{}"),
        )
        for row in table.to_pylist()
    ]
    return f"Against baseline **{baseline_id}**:\n\n" + diff_catalogs(old, tools).to_markdown(), baseline_id


#: The DuckDB catalog of ``warehouse/toolchoice.duckdb`` (its views are in schema ``main``).
WAREHOUSE_CATALOG = "toolchoice"
#: The warehouse table each asset's rows are committed to by ``release_scores`` (DESIGN §3).
ASSET_TABLES = {
    "tool_catalog": "tool_catalog",
    "agent_runs": "agent_calls",
    "judge_votes": "judge_votes",
    "task_scores": "task_scores",
    "release_scores": "release_scores",
}
#: The per-model figures of ``release_scores`` given as numeric metadata, ``<model>/<figure>`` (the Plots tab).
PLOTTED_FIGURES = ("right_tool_pct", "right_args_pct", "tsq_mean", "agent_cost_usd")


def table_schema(table: str) -> dg.TableSchema:
    """The warehouse table ``table``'s columns (names, Arrow types, nullability) as a Dagster ``TableSchema``."""
    from toolchoice_pipeline.releases.warehouse_tables import SCHEMAS

    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                name=field.name,
                type=str(field.type),
                constraints=dg.TableColumnConstraints(nullable=field.nullable),
            )
            for field in SCHEMAS[table]
        ]
    )


def warehouse_table_metadata(asset: str) -> dict[str, Any]:
    """Definition metadata of an asset whose rows land in a warehouse table: ``dagster/table_name`` (the DuckDB
    view, ``toolchoice.main.<table>``) and ``dagster/column_schema`` (the Columns tab); empty for other assets."""
    table = ASSET_TABLES.get(asset)
    if table is None:
        return {}
    return {
        "dagster/table_name": f"{WAREHOUSE_CATALOG}.main.{table}",
        "dagster/column_schema": table_schema(table),
    }


def per_model_figures(scores: ReleaseDocument) -> dict[str, float]:
    """``{"<model>/<figure>": value}`` for :data:`PLOTTED_FIGURES` (floats: shares in points, TSQ a fraction,
    cost in USD); a figure the release has no value for (TSQ without the judge, shares with no scored task) is
    left out rather than given as 0."""
    figures: dict[str, float] = {}
    for model, row in scores.models.items():
        for name in PLOTTED_FIGURES:
            value = getattr(row, name)
            if value is not None:
                figures[f"{model}/{name}"] = float(value)
    return figures
