"""Scoring: episodes and judge votes → task scores → per-model release scores (DESIGN §2, §3). Pure functions.

- :mod:`.task_scores`: one :class:`~toolchoice_pipeline.records.episodes.TaskScore` per episode (matching, TSQ, flags).
- :mod:`.summary`: per-model shares in points with 95% Wilson intervals, per-tag breakdown, flag counts,
  cost and latency percentiles (the ``models`` entries of ``scores.json``).
- :mod:`.columnar`: the same numbers for large releases straight from Parquet/Arrow (DuckDB), running the
  Python matcher once per distinct (expectation, first call) pair.
"""

from toolchoice_pipeline.scoring.summary import ModelScores, TagScores, percentile, summarise, wilson_interval
from toolchoice_pipeline.scoring.task_scores import (
    FLAG_INFRA_ERROR,
    FLAG_JUDGE_FAILED,
    FLAG_ORDER,
    score_episode,
    score_episodes,
    tsq_of,
)

__all__ = [
    "FLAG_INFRA_ERROR",
    "FLAG_JUDGE_FAILED",
    "FLAG_ORDER",
    "ModelScores",
    "TagScores",
    "percentile",
    "score_episode",
    "score_episodes",
    "summarise",
    "tsq_of",
    "wilson_interval",
]
