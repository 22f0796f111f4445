"""Scoring: episodes and judge votes → task scores → per-model release scores (DESIGN §2, §3). Pure functions.

- :mod:`.task_scores`: what one :class:`~toolchoice_pipeline.records.episodes.TaskScore` per episode holds
  (matching, TSQ, flags) and the flags' order.
- :mod:`.summary`: per-model shares in points with 95% Wilson intervals, per-tag breakdown, flag counts,
  cost and latency percentiles (the ``models`` entries of ``scores.json``).
- :mod:`.columnar`: both, for a release, straight from Parquet/Arrow (DuckDB), running the Python matcher once
  per distinct (expectation, first call) pair. (The row-by-row reference implementation the tests check it
  against is the tests' own: ``toolchoice_pipeline_tests/scoring_reference.py``.)
"""

from typing import TYPE_CHECKING

from toolchoice_pipeline.util.lazy import lazy_exports

if TYPE_CHECKING:
    from toolchoice_pipeline.records.episodes import FLAG_INFRA_ERROR, FLAG_JUDGE_FAILED, tsq_of
    from toolchoice_pipeline.scoring.summary import ModelScores, TagScores, percentile, wilson_interval
    from toolchoice_pipeline.scoring.task_scores import FLAG_ORDER

# Re-exported on first use (util/lazy.py): importing one light module of the package imports nothing else.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ModelScores": ".summary",
        "TagScores": ".summary",
        "percentile": ".summary",
        "wilson_interval": ".summary",
        "FLAG_INFRA_ERROR": ".task_scores",
        "FLAG_JUDGE_FAILED": ".task_scores",
        "FLAG_ORDER": ".task_scores",
        "tsq_of": "toolchoice_pipeline.records.episodes",
    },
)

__all__ = [
    "FLAG_INFRA_ERROR",
    "FLAG_JUDGE_FAILED",
    "FLAG_ORDER",
    "ModelScores",
    "TagScores",
    "percentile",
    "tsq_of",
    "wilson_interval",
]
