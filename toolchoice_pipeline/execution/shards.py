"""Shards: the unit of work a release fans out over, one model × one block of consecutive tasks.

A release of M models × T tasks × k samples is cut into shards of at most ``concurrency.shard_episodes``
episodes (tasks × samples); each model's tasks are cut into equal blocks, so shards of a model differ by at
most one task. Each shard is one Dagster step of ``agent_runs`` and one of ``judge_votes``; the run's executor
decides where steps run (in the run's process by default, in worker processes with ``--workers N``).
"""

from __future__ import annotations

import math
import re

from pydantic import BaseModel, Field

from toolchoice_pipeline.suites.config import RunConfig


class Shard(BaseModel):
    """One model × the block of tasks ``tasks[task_start:task_stop]`` (suite order), all its samples."""

    key: str = Field(description="a name unique in the release, usable as a Dagster mapping key and file name")
    model: str
    model_index: int = Field(ge=0, description="the model's position in the release's models")
    task_start: int = Field(ge=0)
    task_stop: int = Field(ge=0)
    episodes: int = Field(ge=0, description="tasks in the block × the model's repeats")


def _slug(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", model)


def plan_shards(config: RunConfig, models: list, n_tasks: int) -> list[Shard]:
    """The shards of ``models`` (``ModelSpec`` list, in order) × ``n_tasks`` tasks: per model, the fewest
    blocks of near-equal task counts with at most ``shard_episodes`` episodes each (a task's k samples stay in
    one shard, so a shard holds at least one task). A suite with no tasks gets one empty
    shard per model (the step still runs, so every model is accounted for)."""
    shards = []
    for index, spec in enumerate(models):
        k = config.repeats_for(spec)
        tasks_per_shard = max(1, config.concurrency.shard_episodes // k)  # a task's samples stay together
        blocks = max(1, math.ceil(n_tasks / tasks_per_shard))
        bounds = [round(i * n_tasks / blocks) for i in range(blocks + 1)]
        for block in range(blocks):
            start, stop = bounds[block], bounds[block + 1]
            shards.append(
                Shard(
                    key=f"m{index}_{_slug(spec.model)[:40]}_{block}",
                    model=spec.model,
                    model_index=index,
                    task_start=start,
                    task_stop=stop,
                    episodes=(stop - start) * k,
                )
            )
    return shards
