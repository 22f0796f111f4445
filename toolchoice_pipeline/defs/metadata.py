"""Numbers for Dagster metadata: counts, costs, latency and Markdown tables. Nothing secret goes in here:
only model names, counts, figures and catalog diffs (tool names)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import dagster as dg

from toolchoice_pipeline.records.episodes import Episode, JudgeVote
from toolchoice_pipeline.releases.document import ReleaseDocument
from toolchoice_pipeline.releases.report import SCORE_COLUMNS, score_cells
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.suites.catalog import ToolDefinition, diff_catalogs
from toolchoice_pipeline.suites.suite import Suite


def episode_metadata(episodes: list[Episode]) -> dict[str, Any]:
    """Per-model episodes, infrastructure errors, model calls, cache hits and agent cost (USD)."""
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
    return {
        "n_episodes": len(episodes),
        "n_infrastructure_errors": sum(1 for e in episodes if e.error),
        "model_calls": sum(len(e.steps) for e in episodes),
        "cache_hits": sum(1 for e in episodes for s in e.steps if s.cache_hit),
        "agent_cost_usd": round(sum(e.cost_usd for e in episodes), 6),
        "per_model": dg.MetadataValue.md("\n".join(table)),
    }


def judge_metadata(votes: list[JudgeVote]) -> dict[str, Any]:
    """Votes, valid share (fraction), judge tokens and cost (USD)."""
    valid = sum(1 for v in votes if v.valid)
    return {
        "n_votes": len(votes),
        "valid_vote_rate": round(valid / len(votes), 4) if votes else 0.0,
        "judge_prompt_tokens": sum(v.prompt_tokens for v in votes),
        "judge_completion_tokens": sum(v.completion_tokens for v in votes),
        "judge_cost_usd": round(sum(v.cost_usd for v in votes), 6),
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
