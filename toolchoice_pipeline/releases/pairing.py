"""What a release and its baseline share, per model: the tasks both scored and the samples both ran.

Two releases compare only on what they share (DESIGN §3 "Repeats and the noise-aware gate"): the tasks scored
in both, and the samples 0..m−1 with m the smaller of the two releases' repeats. :func:`paired_tasks` reads
both ``task_scores`` tables (a missing ``sample`` column, from a release written before repeats, is sample 0)
and gives per model the right counts of each shared task in each release, and a sentence saying what was
left out when anything was.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from toolchoice_pipeline.util.duckdb_memory import memory_connection

PAIRED_COLUMNS = ["model", "task_id", "sample", "right_tool", "right_args"]


@dataclass
class Paired:
    """One model's shared tasks: per task the scored samples and right counts in the baseline and now."""

    tasks: list[str] = field(default_factory=list)
    baseline: dict[str, np.ndarray] = field(default_factory=dict)  # scored, right_tool, right_args
    now: dict[str, np.ndarray] = field(default_factory=dict)
    shared_note: str | None = None

    def rates(self, side: str, metric: str) -> np.ndarray:
        """Per shared task the right rate (fraction) of ``metric`` (``right_tool``/``right_args``) on ``side``."""
        counts = getattr(self, side)
        return counts[metric] / counts["scored"]

    def share_pct(self, side: str, metric: str) -> float:
        """The pooled share over the shared tasks and samples, in points (2 decimals)."""
        counts = getattr(self, side)
        return round(100.0 * float(counts[metric].sum()) / float(counts["scored"].sum()), 2)


def _with_sample(table: pa.Table) -> pa.Table:
    if "sample" not in table.column_names:
        table = table.append_column("sample", pa.array([0] * table.num_rows, pa.int32()))
    return table.select(PAIRED_COLUMNS)


def paired_tasks(now: pa.Table, baseline: pa.Table) -> dict[str, Paired]:
    """Per model in both tables, its :class:`Paired` tasks (``task_scores`` rows; unscored samples ignored)."""
    con = memory_connection()
    try:
        con.register("now_scores", _with_sample(now))
        con.register("baseline_scores", _with_sample(baseline))
        rows = con.sql("""
            WITH k_now AS (SELECT model, max(coalesce(sample, 0)) + 1 AS k FROM now_scores GROUP BY model),
                 k_base AS (SELECT model, max(coalesce(sample, 0)) + 1 AS k FROM baseline_scores GROUP BY model),
                 shared AS (SELECT model, k_now.k AS k_now, k_base.k AS k_base, least(k_now.k, k_base.k) AS m
                            FROM k_now JOIN k_base USING (model)),
                 n AS (SELECT s.model, task_id, count(*) AS scored, sum(right_tool::INT) AS tool,
                              sum(right_args::INT) AS args
                       FROM now_scores JOIN shared s USING (model)
                       WHERE right_tool IS NOT NULL AND coalesce(sample, 0) < s.m GROUP BY ALL),
                 b AS (SELECT s.model, task_id, count(*) AS scored, sum(right_tool::INT) AS tool,
                              sum(right_args::INT) AS args
                       FROM baseline_scores JOIN shared s USING (model)
                       WHERE right_tool IS NOT NULL AND coalesce(sample, 0) < s.m GROUP BY ALL)
            SELECT model, coalesce(n.task_id, b.task_id) AS task_id, n.scored, n.tool, n.args,
                   b.scored, b.tool, b.args, s.k_now, s.k_base, s.m
            FROM n FULL OUTER JOIN b USING (model, task_id) JOIN shared s USING (model)
            ORDER BY model, task_id""").fetchall()
    finally:
        con.close()
    by_model: dict[str, list[tuple]] = {}
    for row in rows:
        by_model.setdefault(row[0], []).append(row)
    return {model: _paired(model_rows) for model, model_rows in by_model.items()}


def _paired(rows: list[tuple]) -> Paired:
    both = [r for r in rows if r[2] is not None and r[5] is not None]
    only_now = sum(r[5] is None for r in rows)
    only_baseline = sum(r[2] is None for r in rows)
    k_now, k_base, m = rows[0][8], rows[0][9], rows[0][10]
    paired = Paired(tasks=[r[1] for r in both])
    for side, offset in (("now", 2), ("baseline", 5)):
        setattr(
            paired,
            side,
            {
                name: np.array([r[offset + i] for r in both], dtype=float)
                for i, name in enumerate(("scored", "right_tool", "right_args"))
            },
        )
    parts = []
    if only_now or only_baseline:
        parts.append(
            f"{len(both)} tasks scored in both ({only_baseline} only in the baseline, {only_now} only in this release)"
        )
    if k_now != k_base:
        parts.append(f"samples 0..{m - 1} (baseline repeats {k_base}, this release {k_now})")
    if parts:
        paired.shared_note = "compared only on what both releases share: " + " and ".join(parts)
    return paired
