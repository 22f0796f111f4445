"""Scoring: episodes and judge votes → task scores → per-model release scores (DESIGN §2, §3). Pure functions.

- :mod:`.task_scores`: one :class:`~toolchoice_pipeline.records.episodes.TaskScore` per episode (matching, TSQ, flags).
- :mod:`.summary`: per-model shares in points with 95% Wilson intervals, per-tag breakdown, flag counts,
  cost and latency percentiles (the ``models`` entries of ``scores.json``).
- :mod:`.columnar`: the same numbers for large releases straight from Parquet/Arrow (DuckDB), running the
  Python matcher once per distinct (expectation, first call) pair.
"""

from typing import TYPE_CHECKING

from toolchoice_pipeline.util.lazy import lazy_exports

if TYPE_CHECKING:
    from toolchoice_pipeline.scoring.summary import ModelScores, TagScores, percentile, summarise, wilson_interval
    from toolchoice_pipeline.scoring.task_scores import (
        FLAG_INFRA_ERROR,
        FLAG_JUDGE_FAILED,
        FLAG_ORDER,
        score_episode,
        score_episodes,
        tsq_of,
    )

# Re-exported on first use (util/lazy.py): importing one light module of the package imports nothing else.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ModelScores": ".summary",
        "TagScores": ".summary",
        "percentile": ".summary",
        "summarise": ".summary",
        "wilson_interval": ".summary",
        "FLAG_INFRA_ERROR": ".task_scores",
        "FLAG_JUDGE_FAILED": ".task_scores",
        "FLAG_ORDER": ".task_scores",
        "score_episode": ".task_scores",
        "score_episodes": ".task_scores",
        "tsq_of": ".task_scores",
    },
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
