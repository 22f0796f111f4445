"""The warehouse tables of one release, built from its records where they are scored: ``agent_calls`` and
``judge_votes`` from the episodes and votes (each record converted to Arrow once), ``task_scores`` and the
per-model ``release_scores`` from the columnar scorer, ``tool_catalog`` from the suite.

In a Dagster run the ``task_scores`` asset scores shard by shard with :func:`score_shard` and writes the first three
tables as it goes (:mod:`.staged_tables`); publishing then builds only ``release_scores`` and ``tool_catalog`` and
commits the staged files as they are (:func:`release_tables` with ``staged``)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

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
    """A release's warehouse tables built here (``tables``, keyed by table name), the files of those staged where
    their rows were made (``files``) and its per-model scores."""

    tables: dict[str, pa.Table]
    models: dict[str, ModelScores]
    files: dict[str, Path] = field(default_factory=dict)


def release_tables(
    suite: Suite,
    lineage: Lineage,
    episodes: Iterable[Episode],
    votes: Iterable[JudgeVote] = (),
    *,
    scores: Iterable[TaskScore] | None = None,
    staged: Mapping[str, Path] | None = None,
    unpriced_agents: Collection[str] = (),
    judge_unpriced: bool = False,
) -> ReleaseTables:
    """The release's five warehouse tables and per-model scores. ``scores``: the task scores when already computed
    (the Dagster ``task_scores`` asset), else they are scored here on the columnar path
    (:func:`~toolchoice_pipeline.scoring.columnar.score_release`: DuckDB over ``agent_calls`` and
    ``judge_votes``). ``staged``: the files of :data:`~.staged_tables.STAGED_TABLES` already written for
    ``lineage`` (:func:`~.staged_tables.staged_table_files`): then ``episodes``, ``votes`` and ``scores`` are not
    read, and the per-model scores come from the staged ``task_scores`` file. ``unpriced_agents``/``judge_unpriced``
    mark costs counted at 0 for want of a price (:func:`~toolchoice_pipeline.scoring.summary.mark_unpriced`).
    Raises :class:`InputError` naming the suite's tasks file when an episode's task is not in the suite."""
    tables: dict[str, pa.Table] = {}
    files = dict(staged or {})
    if files:
        import pyarrow.parquet as pq

        models = summarise_columnar(pq.read_table(files["task_scores"]))
    else:
        agent_calls = agent_calls_table(episodes, lineage, suite)
        judge_votes = judge_votes_table(votes, lineage)
        if scores is None:
            columnar = score_release(suite, agent_calls, judge_votes)
            task_scores, models = with_lineage("task_scores", columnar.task_scores, lineage), columnar.models
        else:
            task_scores = task_scores_table(scores, lineage)
            models = summarise_columnar(task_scores)
        tables.update(task_scores=task_scores, agent_calls=agent_calls, judge_votes=judge_votes)
    models = mark_unpriced(models, agents=unpriced_agents, judge=judge_unpriced)
    tables["release_scores"] = release_scores_table(models, lineage)
    tables["tool_catalog"] = tool_catalog_table(suite, lineage)
    return ReleaseTables(tables=tables, models=models, files=files)


def score_shard(
    suite: Suite, lineage: Lineage, episodes: Iterable[Episode], votes: Iterable[JudgeVote] = ()
) -> tuple[list[TaskScore], dict[str, pa.Table]]:
    """Score one shard's episodes and votes on the columnar path: its task scores (one per episode) and its rows
    of the ``agent_calls``, ``judge_votes`` and ``task_scores`` tables carrying ``lineage`` (each episode and vote
    converted to Arrow once, for scoring and for the warehouse). Raises :class:`InputError` naming the suite's
    tasks file when an episode's task is not in the suite."""
    agent_calls = agent_calls_table(episodes, lineage, suite)
    judge_votes = judge_votes_table(votes, lineage)
    columnar = score_release(suite, agent_calls, judge_votes)
    scores = [TaskScore.model_validate(row) for row in columnar.task_scores.to_pylist()]
    tables = {
        "agent_calls": agent_calls,
        "judge_votes": judge_votes,
        "task_scores": with_lineage("task_scores", columnar.task_scores, lineage),
    }
    return scores, tables


def score_records(
    suite: Suite, lineage: Lineage, episodes: Iterable[Episode], votes: Iterable[JudgeVote] = ()
) -> list[TaskScore]:
    """The task scores of a release's episodes and votes, computed on the columnar path publishing uses
    (:func:`~toolchoice_pipeline.scoring.columnar.score_release`), one per episode. Raises :class:`InputError`
    naming the suite's tasks file when an episode's task is not in the suite."""
    return score_shard(suite, lineage, episodes, votes)[0]
