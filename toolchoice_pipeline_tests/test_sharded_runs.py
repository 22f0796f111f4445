"""A release run in shards on worker processes stores the same rows as one run in one process.

Both are real ``toolchoice run`` commands on private copies of the demo data (5 tasks, the offline agents and
judge): one in this process with the default shard size (one shard per model), one as the console script with
``--workers 2`` and ``concurrency.shard_episodes: 3`` (two shards per model, of 2 and 3 tasks, on Dagster's
multiprocess executor: each step a worker process)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from toolchoice_pipeline.defs.staging import manifest_path
from toolchoice_pipeline_tests.pipeline_helpers import (
    DEMO_MODELS,
    copy_data,
    query,
    read_scores,
    toolchoice,
    toolchoice_in_process,
    trim_tasks,
)

N_TASKS = 5
SHARD_EPISODES = 3
SHARDS_PER_MODEL = 2  # ceil(N_TASKS / SHARD_EPISODES) blocks of near-equal size
RELEASE = "shards-1"
# Timing differs run to run; the run id differs by design; everything else must be equal.
TIMING = {"latency_ms", "provider_ms", "queued_ms", "run_id"}
ORDER = {
    "task_scores": "model, task_id, sample",
    "agent_calls": "model, task_id, sample, step",
    "judge_votes": "model, task_id, sample, poll",
    "tool_catalog": "task_id NULLS FIRST, tool_name, definition_hash",
}


def small_data(target: Path, shard_episodes: int | None = None) -> Path:
    data_dir = copy_data(target)
    trim_tasks(data_dir, N_TASKS)
    if shard_episodes is not None:
        path = data_dir / "toolchoice.yaml"
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
        config.setdefault("concurrency", {})["shard_episodes"] = shard_episodes
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return data_dir


def rows(data_dir: Path, table: str) -> list[dict]:
    columns = [c for (c,) in query(data_dir, f"SELECT column_name FROM (DESCRIBE {table})") if c not in TIMING]
    found = query(
        data_dir, f"SELECT {', '.join(columns)} FROM {table} WHERE release_id = ? ORDER BY {ORDER[table]}", [RELEASE]
    )
    return [dict(zip(columns, row)) for row in found]


def without_timing(figures: dict) -> dict:
    return {k: v for k, v in figures.items() if "_ms" not in k and "latency" not in k}


@pytest.mark.slow
def test_a_sharded_multiprocess_run_stores_the_rows_of_an_in_process_run(tmp_path):
    one = small_data(tmp_path / "one")
    many = small_data(tmp_path / "many", shard_episodes=SHARD_EPISODES)
    assert toolchoice_in_process("run", "--release", RELEASE, data_dir=one) == 0
    sharded = toolchoice("run", "--release", RELEASE, "--workers", "2", "--data-dir", str(many), timeout=900)
    assert sharded.returncode == 0, sharded.stderr
    assert "executor multiprocess · up to 2 worker processes" in sharded.stdout
    assert "Traceback" not in sharded.stderr and "DEBUG" not in sharded.stderr

    # the shards of each model ran (and were judged) apart, then the canary; the judge's preflight call last
    staged = json.loads(manifest_path(many, RELEASE, "judge_votes").read_text(encoding="utf-8"))["files"]
    assert len(staged) == len(DEMO_MODELS) * SHARDS_PER_MODEL + 2
    assert staged[-2].endswith("canary.parquet") and staged[-1].endswith("preflight.parquet")
    assert len(json.loads(manifest_path(one, RELEASE, "agent_runs").read_text(encoding="utf-8"))["files"]) == len(
        DEMO_MODELS
    )

    for table in ORDER:
        expected, got = rows(one, table), rows(many, table)
        assert got == expected, table
        assert got, table
    first, second = read_scores(one, RELEASE), read_scores(many, RELEASE)
    assert {m: without_timing(f) for m, f in second["models"].items()} == {
        m: without_timing(f) for m, f in first["models"].items()
    }
    assert second["gate"]["passed"] == first["gate"]["passed"]
