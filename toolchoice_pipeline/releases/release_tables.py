"""The warehouse tables of one release, built from its records where they are scored: ``agent_calls`` and
``judge_votes`` from the episodes and votes (each record converted to Arrow once), ``task_scores`` and the
per-model ``release_scores`` from the columnar scorer, ``tool_catalog`` from the suite."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

import pyarrow as pa

from toolchoice_pipeline.records.episodes import Episode, JudgeVote, TaskScore
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.warehouse_tables import (
    agent_calls_table,
    judge_votes_table,
    release_scores_table,
    task_scores_table,
    tool_catalog_table,
    with_lineage,
)
from toolchoice_pipeline.scoring.columnar import score_release, summarise_columnar
from toolchoice_pipeline.scoring.summary import ModelScores, mark_unpriced
from toolchoice_pipeline.suites.suite import Suite


@dataclass
class ReleaseTables:
    """Every warehouse table of a release (``tables``, keyed by table name) and its per-model scores."""

    tables: dict[str, pa.Table]
    models: dict[str, ModelScores]


def release_tables(
    suite: Suite,
    lineage: Lineage,
    episodes: Iterable[Episode],
    votes: Iterable[JudgeVote] = (),
    *,
    scores: Iterable[TaskScore] | None = None,
    unpriced_agents: Collection[str] = (),
    judge_unpriced: bool = False,
) -> ReleaseTables:
    """The release's five warehouse tables and per-model scores. ``scores``: the task scores when already computed
    (the Dagster ``task_scores`` asset), else they are scored here on the columnar path
    (:func:`~toolchoice_pipeline.scoring.columnar.score_release`: DuckDB over ``agent_calls`` and
    ``judge_votes``). ``unpriced_agents``/``judge_unpriced`` mark costs counted at 0 for want of a price
    (:func:`~toolchoice_pipeline.scoring.summary.mark_unpriced`). Raises :class:`InputError` naming the suite's
    tasks file when an episode's task is not in the suite."""
    agent_calls = agent_calls_table(episodes, lineage, suite)
    judge_votes = judge_votes_table(votes, lineage)
    if scores is None:
        columnar = score_release(suite, agent_calls, judge_votes)
        task_scores, models = with_lineage("task_scores", columnar.task_scores, lineage), columnar.models
    else:
        task_scores = task_scores_table(scores, lineage)
        models = summarise_columnar(task_scores)
    models = mark_unpriced(models, agents=unpriced_agents, judge=judge_unpriced)
    tables = {
        "task_scores": task_scores,
        "release_scores": release_scores_table(models, lineage),
        "agent_calls": agent_calls,
        "judge_votes": judge_votes,
        "tool_catalog": tool_catalog_table(suite, lineage),
    }
    return ReleaseTables(tables=tables, models=models)


def score_records(
    suite: Suite, lineage: Lineage, episodes: Iterable[Episode], votes: Iterable[JudgeVote] = ()
) -> list[TaskScore]:
    """The task scores of a release's episodes and votes, computed on the columnar path publishing uses
    (:func:`~toolchoice_pipeline.scoring.columnar.score_release`), one per episode. Raises :class:`InputError`
    naming the suite's tasks file when an episode's task is not in the suite."""
    columnar = score_release(suite, agent_calls_table(episodes, lineage, suite), judge_votes_table(votes, lineage))
    return [TaskScore.model_validate(row) for row in columnar.task_scores.to_pylist()]
