"""``toolchoice run`` against a bare LiteLLM loop and against inspect-ai on one workload: CPU and wall time.

One command from the repo root (run it alone: the machine has 2 shared cores)::

    python benchmarks/run/peers.py                     # 2,000 tasks × 3 models, 50 ms, 64 in flight, 3 rounds
    python benchmarks/run/peers.py --rounds 1 --tasks 500      # a quick look

The workload is the execution benchmarks' synthetic suite (``benchmarks/execution/common.py``: 12 tools, every
task names the tool it expects, one model call per task) run against 3 simulated models answering after
``--latency-ms`` with ``--concurrency`` calls in flight, three ways, each a fresh process timed by
``/usr/bin/time -v`` (CPU = user + system, wall = elapsed, peak RSS), rounds alternating A B C A B C:

- ``run``: the whole ``toolchoice run --no-judge`` (the console script's entry point, this checkout on
  ``PYTHONPATH``) on a fresh data directory whose ``toolchoice.yaml`` lists ``sim/model-a`` ... (the in-process
  ``sim/`` provider), ``concurrency: {max_in_flight: N, per_model: N}``: Dagster, the runner, the call journal,
  scoring, the warehouse, ``scores.json`` and the gate;
- ``bare``: a minimal asyncio script (``peers.py bare``) calling ``litellm.acompletion`` on the same ``sim/``
  models with the same messages and tools under a semaphore of N: no journal, no scoring, no storage. Both it
  and ``run`` are CPU-bound on LiteLLM's own per-call cost (its logging, response building and cost hooks run
  for every call), so the ratio says how much the command adds to LiteLLM, not how fast LiteLLM is.
  ``--collector batch`` runs it under the garbage-collector settings the command uses
  (``toolchoice_pipeline/util/collector.py``): the ratio to that loop leaves out what the settings save;
- ``inspect``: inspect-ai (``INSPECT_VERSION``) installed in its own virtual environment under
  ``benchmarks/work/peers/`` by this script (``python -m venv`` + ``pip install``; not a project dependency),
  running ``peers_inspect.py``: the same samples and tools, ``generate(tool_calls="none")`` and a right-tool
  scorer, models ``openai-api/sim/<name>`` at N connections, against an OpenAI-compatible fake server on
  127.0.0.1 that this script starts (``peers.py serve``: aiohttp, the ``sim/`` provider's own reply after the
  same latency). inspect-ai's own ``mockllm`` is not used: it has no latency and does not pick tools. Unlike
  the other two, this side also pays an HTTP client (the OpenAI SDK); the server's CPU is recorded apart.

Results: ``benchmarks/results/peers_2000x3.json`` (``--out``), with ``uptime`` before and after every round.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks" / "execution"))
sys.path.insert(0, str(REPO / "benchmarks" / "run"))

import common  # noqa: E402
from growth import _field, _seconds, commit_of, uptime  # noqa: E402

WORK = REPO / "benchmarks" / "work" / "peers"
RESULTS = REPO / "benchmarks" / "results" / "peers_2000x3.json"
INSPECT_VERSION = "0.3.285"
INSPECT_VENV = WORK / f"inspect-{INSPECT_VERSION}"
ENTRY = "from toolchoice_pipeline.cli import main; main()"
SIDES = ("run", "bare", "inspect")


def model_names(n: int) -> list[str]:
    return [f"sim/model-{chr(ord('a') + i)}" for i in range(n)]


def write_data_dir(directory: Path, args: argparse.Namespace) -> Path:
    """A fresh data directory: the synthetic suite and a ``toolchoice.yaml`` with the sim models."""
    shutil.rmtree(directory, ignore_errors=True)
    common.build_suite(directory, args.tasks)
    config = {
        "models": [
            {"model": name, "params": {"sim_latency_ms": args.latency_ms, "sim_seed": 7 + i}}
            for i, name in enumerate(model_names(args.models))
        ],
        "concurrency": {"max_in_flight": args.concurrency, "per_model": args.concurrency},
        "retries": {"max_attempts": 6, "initial_wait_s": 0.05, "max_wait_s": 0.5, "timeout_s": 30},
        "max_steps": 4,
        "cache": {"policy": "read_write", "path": "cache/agent_calls.sqlite"},
    }
    (directory / "toolchoice.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return directory / "suites" / common.SUITE


# --- the bare loop (``peers.py bare``) ---------------------------------------------------------------------


async def bare_calls(suite_dir: Path, models: list[str], latency_ms: float, concurrency: int) -> int:
    import litellm

    from toolchoice_pipeline.providers import register_providers

    register_providers()
    catalog = yaml.safe_load((suite_dir / "catalog.yaml").read_text(encoding="utf-8"))
    tools = [{"type": "function", "function": tool} for tool in catalog]
    tasks = [json.loads(line) for line in (suite_dir / "tasks.jsonl").read_text(encoding="utf-8").splitlines()]
    gate = asyncio.Semaphore(concurrency)

    async def call(index: int, model: str, task: dict) -> None:
        async with gate:
            await litellm.acompletion(
                model=model,
                messages=task["messages"],
                tools=tools,
                timeout=30,
                metadata={"task_id": task["id"]},
                sim_latency_ms=latency_ms,
                sim_seed=7 + index,
            )

    await asyncio.gather(*(call(i, m, t) for t in tasks for i, m in enumerate(models)))
    return len(tasks) * len(models)


def bare_main(args: argparse.Namespace) -> None:
    import gc
    from contextlib import nullcontext

    from toolchoice_pipeline.util.collector import BATCH_THRESHOLDS, collector_for_batch, freeze_before_exit

    started_wall, started_cpu = time.perf_counter(), time.process_time()
    # --collector batch: the loop under the garbage-collector settings `toolchoice` uses (the thresholds from the
    # start, the objects LiteLLM's import left frozen during the loop, everything frozen before exit), so that
    # the ratio to it says what the command adds beyond them; the plain loop is what a user would write
    if args.collector == "batch":
        gc.set_threshold(*BATCH_THRESHOLDS)
        import litellm  # noqa: F401

    with collector_for_batch() if args.collector == "batch" else nullcontext():
        calls = asyncio.run(bare_calls(args.suite_dir, model_names(args.models), args.latency_ms, args.concurrency))
    wall, cpu = time.perf_counter() - started_wall, time.process_time() - started_cpu
    print(json.dumps({"calls": calls, "loop_cpu_s": round(cpu, 3), "loop_wall_s": round(wall, 3)}), flush=True)
    if args.collector == "batch":
        freeze_before_exit()


# --- the OpenAI-compatible fake server (``peers.py serve``) ---------------------------------------------------


def serve_main(args: argparse.Namespace) -> None:
    from aiohttp import web

    from toolchoice_pipeline.providers.sim import plausible_reply

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        await asyncio.sleep(args.latency_ms / 1000)
        message = plausible_reply(body["messages"], body.get("tools") or [])
        return web.json_response(
            {
                "id": "chatcmpl-sim",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "sim"),
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
            }
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    web.run_app(app, host="127.0.0.1", port=args.port, print=None, access_log=None)


# --- the driver -------------------------------------------------------------------------------------------


def ensure_inspect_venv() -> Path:
    python = INSPECT_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(INSPECT_VENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"inspect-ai=={INSPECT_VERSION}", "openai", "pyyaml"],
            check=True,
        )
    return python


def timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[dict, str]:
    done = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True, env=env, cwd=cwd)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{command[:4]} exited {done.returncode}:\n{done.stderr[-3000:]}")
    figures = {
        "wall_s": round(_seconds(_field(done.stderr, "Elapsed (wall clock) time (h:mm:ss or m:ss)")), 2),
        "cpu_s": round(
            float(_field(done.stderr, "User time (seconds)")) + float(_field(done.stderr, "System time (seconds)")), 2
        ),
        "peak_rss_mb": round(int(_field(done.stderr, "Maximum resident set size (kbytes)")) / 1024, 1),
    }
    return figures, done.stdout


def process_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_side(side: str, index: int, args: argparse.Namespace, env: dict, inspect_python: Path, server) -> dict:
    data_dir = WORK / f"{side}-{index}"
    suite_dir = write_data_dir(data_dir, args)
    if side == "run":
        command = [sys.executable, "-c", ENTRY, "run", "--suite", common.SUITE, "--release", f"peers-{index}"]
        figures, _ = timed([*command, "--data-dir", str(data_dir), "--no-judge"], env, data_dir)
        scores = json.loads((data_dir / "releases" / f"peers-{index}" / "scores.json").read_text(encoding="utf-8"))
        figures["calls"] = sum(m["n_tasks"] for m in scores["models"].values())
        figures["right_tool"] = sum(round(m["right_tool_pct"] * m["n_tasks"] / 100) for m in scores["models"].values())
    elif side == "bare":
        command = [
            sys.executable,
            __file__,
            "bare",
            "--suite-dir",
            str(suite_dir),
            "--collector",
            args.collector,
            *side_options(args),
        ]
        figures, out = timed(command, env, data_dir)
        figures |= json.loads(out.strip().splitlines()[-1])
    else:
        server_before = process_cpu_s(server.pid)
        models = [name for name in model_names(args.models)]
        command = [str(inspect_python), str(REPO / "benchmarks" / "run" / "peers_inspect.py")]
        command += ["--suite-dir", str(suite_dir), "--models", *models, "--concurrency", str(args.concurrency)]
        command += ["--log-dir", str(data_dir / "logs")]
        inspect_env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")} | {
            "SIM_BASE_URL": f"http://127.0.0.1:{args.port}/v1",
            "SIM_API_KEY": "not-a-key",
        }
        figures, out = timed(command, inspect_env, data_dir)
        figures |= json.loads(out.strip().splitlines()[-1])
        figures["calls"] = figures["samples_scored"]
        figures["server_cpu_s"] = round(process_cpu_s(server.pid) - server_before, 2)
    shutil.rmtree(data_dir, ignore_errors=True)
    return figures


def side_options(args: argparse.Namespace) -> list[str]:
    return ["--models", str(args.models), "--latency-ms", str(args.latency_ms), "--concurrency", str(args.concurrency)]


def wait_for_port(port: int, process: subprocess.Popen) -> None:
    import socket

    for _ in range(600):
        if process.poll() is not None:
            raise RuntimeError("the fake server exited")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the fake server did not start")


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def summary(rounds: list[dict], sides: list[str]) -> dict:
    medians = {
        side: {key: statistics.median(r[side][key] for r in rounds) for key in ("cpu_s", "wall_s", "peak_rss_mb")}
        for side in sides
    }
    ratios = {}
    if {"run", "bare"} <= set(sides):
        ratios["run_over_bare"] = {k: round(medians["run"][k] / medians["bare"][k], 3) for k in ("cpu_s", "wall_s")}
    if {"run", "inspect"} <= set(sides):
        ratios["inspect_over_run"] = {
            k: round(medians["inspect"][k] / medians["run"][k], 3) for k in ("cpu_s", "wall_s")
        }
    if {"bare", "inspect"} <= set(sides):
        ratios["inspect_over_bare"] = {
            k: round(medians["inspect"][k] / medians["bare"][k], 3) for k in ("cpu_s", "wall_s")
        }
    goals = {}
    if "run_over_bare" in ratios:
        goals["run_cpu_within_1.3x_bare"] = ratios["run_over_bare"]["cpu_s"] <= 1.3
    if "inspect_over_run" in ratios:
        goals["inspect_cpu_at_least_3x_run"] = ratios["inspect_over_run"]["cpu_s"] >= 3.0
    return {"medians": medians, "ratios": ratios, "goals_met": goals}


def main() -> None:
    parser = common.argument_parser(__doc__)
    parser.add_argument("mode", nargs="?", default="compare", choices=("compare", "bare", "serve"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sides", nargs="+", default=list(SIDES), choices=SIDES)
    parser.add_argument("--suite-dir", type=Path)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--collector",
        choices=("default", "batch"),
        default="default",
        help="the bare loop under Python's default garbage-collector settings, or under those of `toolchoice run`",
    )
    args = parser.parse_args()
    if args.mode == "bare":
        return bare_main(args)
    if args.mode == "serve":
        return serve_main(args)

    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "LITELLM_OFFLINE_MODE": "true",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    inspect_python = ensure_inspect_venv() if "inspect" in args.sides else Path()
    args.port = args.port or free_port()
    server = None
    if "inspect" in args.sides:
        server = subprocess.Popen(
            [sys.executable, __file__, "serve", "--port", str(args.port), "--latency-ms", str(args.latency_ms)],
            env=env,
            stdout=subprocess.DEVNULL,
        )
        wait_for_port(args.port, server)
    report = {
        "benchmark": "peers",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "setup": common.setup(args, calls=args.tasks * args.models, rounds=args.rounds, order=args.sides),
        "code": commit_of(REPO),
        "inspect_ai": INSPECT_VERSION,
        "run_command": "toolchoice run --suite synthetic --release peers-<k> --no-judge",
        "rounds": [],
    }
    try:
        for index in range(args.rounds):
            entry: dict = {"uptime_before": uptime()}
            for side in args.sides:  # A B C, A B C ...
                entry[side] = run_side(side, index, args, env, inspect_python, server)
                print(index, side, entry[side], flush=True)
            entry["uptime_after"] = uptime()
            report["rounds"].append(entry)
    finally:
        if server is not None:
            server.terminate()
            server.wait()
    report |= summary(report["rounds"], args.sides)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: report[k] for k in ("medians", "ratios", "goals_met")}, indent=1))


if __name__ == "__main__":
    main()
