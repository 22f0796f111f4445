"""Shard planning, the shared spend ledger (a SQLite file on one host, Redis across machines), and staged records read back as a stream."""

from __future__ import annotations

import multiprocessing

import pytest

from toolchoice_pipeline.defs.staging import StagedRecords, write_records
from toolchoice_pipeline.execution.rate_limits import RATE_LIMITS_URL_ENV
from toolchoice_pipeline.execution.runner import AgentBudget
from toolchoice_pipeline.execution.shards import plan_shards
from toolchoice_pipeline.execution.spend import (
    REDIS_TTL_S,
    SPEND_URL_ENV,
    RedisSpendLedger,
    SpendLedger,
    open_spend_ledger,
    spend_url,
)
from toolchoice_pipeline.judge import JudgeBudget
from toolchoice_pipeline.records.episodes import Episode
from toolchoice_pipeline.suites.config import ModelSpec, RunConfig
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline_tests import spend_workers, test_rate_limits

redis_url = test_rate_limits.redis_url  # the fixture: a real Redis server on 127.0.0.1


def config(shard_episodes: int, repeats: int = 1) -> RunConfig:
    return RunConfig.model_validate(
        {
            "models": [{"model": "local/bm25-router"}, {"model": "local/name-match", "repeats": 3}],
            "repeats": repeats,
            "concurrency": {"shard_episodes": shard_episodes},
        }
    )


@pytest.mark.parametrize(("n_tasks", "shard_episodes"), [(73, 2000), (73, 10), (7, 1), (1000, 333), (5, 7)])
def test_every_model_covers_every_task_once_in_near_equal_blocks(n_tasks, shard_episodes):
    run_config = config(shard_episodes)
    shards = plan_shards(run_config, run_config.models, n_tasks)
    for index, spec in enumerate(run_config.models):
        mine = [s for s in shards if s.model_index == index]
        assert all(s.model == spec.model for s in mine)
        covered = [task for s in mine for task in range(s.task_start, s.task_stop)]
        assert covered == list(range(n_tasks))  # each task once, in suite order
        k = run_config.repeats_for(spec)
        assert all(s.episodes == (s.task_stop - s.task_start) * k for s in mine)
        # at most shard_episodes each, unless one task's samples alone exceed it
        assert all(s.episodes <= max(shard_episodes, k) for s in mine)
        sizes = [s.task_stop - s.task_start for s in mine]
        assert max(sizes) - min(sizes) <= 1
    assert len({s.key for s in shards}) == len(shards)


def test_a_suite_with_no_tasks_gets_one_empty_shard_per_model():
    run_config = config(100)
    shards = plan_shards(run_config, run_config.models, 0)
    assert [(s.model, s.episodes) for s in shards] == [(m.model, 0) for m in run_config.models]


def test_shard_keys_are_safe_names_for_any_model_string():
    run_config = RunConfig(models=[ModelSpec(model="openai/gpt-4o-mini:2024 / x"), ModelSpec(model="a.b")])
    for shard in plan_shards(run_config, run_config.models, 3):
        assert shard.key.replace("_", "").isalnum(), shard.key


def test_the_ledger_adds_up_spend_from_several_processes(tmp_path):
    path = tmp_path / "spend.sqlite"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=spend_workers.spend, args=(path, 50, 0.01)) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(600)  # a bound for a hung worker, not a speed goal
        assert worker.exitcode == 0
    assert SpendLedger(path).total("agent") == pytest.approx(1.5)
    assert SpendLedger(path).total("judge") == 0.0


def test_a_budget_with_a_ledger_is_exhausted_by_another_shards_spend(tmp_path):
    ledger = SpendLedger(tmp_path / "spend.sqlite")
    mine, other = JudgeBudget(1.0, ledger), JudgeBudget(1.0, SpendLedger(tmp_path / "spend.sqlite"))
    other.add(1.0)
    assert mine.exhausted and mine.spent_here_usd == 0.0
    agent = AgentBudget(1.0, ledger)
    assert not agent.exhausted  # agent and judge spend are kept apart


def test_a_budget_without_a_limit_keeps_its_spend_in_memory(tmp_path):
    budget = AgentBudget(None, SpendLedger(tmp_path / "spend.sqlite"))
    budget.add(5.0)
    assert budget.spent_usd == 5.0 and not budget.exhausted
    assert not (tmp_path / "spend.sqlite").exists()


def test_staged_records_stream_their_files_in_order(tmp_path):
    files = []
    for shard in range(3):
        path = tmp_path / f"s{shard}.parquet"
        write_records(path, [Episode(model="m", task_id=f"t{shard}-{i}") for i in range(shard + 2)], Episode)
        files.append(path)
    staged = StagedRecords(files)
    assert len(staged) == 2 + 3 + 4
    assert [e.task_id for e in staged][:3] == ["t0-0", "t0-1", "t1-0"]
    assert [len(part) for part in staged.parts()] == [2, 3, 4]
    assert staged[-1].task_id == "t2-3" and staged == list(staged)
    assert StagedRecords(files[:1]) != list(staged)


@pytest.mark.slow  # starts a Redis server
def test_the_redis_ledger_adds_up_spend_from_several_processes_as_machines_would(redis_url):
    context = multiprocessing.get_context("spawn")
    key = "toolchoice:spend:r1:run-1"
    workers = [context.Process(target=spend_workers.spend_in_redis, args=(redis_url, key, 50, 0.01)) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(600)  # a bound for a hung worker, not a speed goal
        assert worker.exitcode == 0
    ledger = RedisSpendLedger(redis_url, key)
    assert ledger.total("agent") == pytest.approx(1.5)
    assert ledger.total("judge") == 0.0
    mine = AgentBudget(1.5, ledger)
    assert mine.exhausted and mine.spent_here_usd == 0.0  # exhausted by the other processes' spend
    from redis import Redis

    assert 0 < Redis.from_url(redis_url).ttl(key) <= REDIS_TTL_S  # the run's spend does not stay forever
    ledger.close()


def test_the_spend_store_is_redis_when_named_or_shared_with_the_rate_limits_else_the_local_file(tmp_path, monkeypatch):
    monkeypatch.delenv(SPEND_URL_ENV, raising=False)
    monkeypatch.delenv(RATE_LIMITS_URL_ENV, raising=False)
    assert spend_url() is None
    assert isinstance(open_spend_ledger(tmp_path / "spend.sqlite", "r1", "run-1"), SpendLedger)
    monkeypatch.setenv(RATE_LIMITS_URL_ENV, str(tmp_path / "limits.sqlite"))  # a local rate-limit store: not shared
    assert spend_url() is None
    monkeypatch.setenv(RATE_LIMITS_URL_ENV, "redis://limits.internal:6379/0")
    assert spend_url() == "redis://limits.internal:6379/0"
    monkeypatch.setenv(SPEND_URL_ENV, "redis://spend.internal:6379/1")
    assert spend_url() == "redis://spend.internal:6379/1"
    ledger = open_spend_ledger(tmp_path / "spend.sqlite", "r1", "run-1")
    assert isinstance(ledger, RedisSpendLedger) and ledger.key == "toolchoice:spend:r1:run-1"
    monkeypatch.setenv(SPEND_URL_ENV, "s3://bucket/spend")
    with pytest.raises(InputError, match=f"{SPEND_URL_ENV}: s3 is not a spend store"):
        spend_url()
