"""The main job (``toolchoice run``) on real input that no one here wrote, end to end, timed.

Run from the repo root: ``python benchmarks/pipeline/run_real_inputs.py [--work-dir DIR] [--keep]``.
Everything happens in a fresh copy of ``data/`` (a temporary directory unless ``--work-dir`` is given),
through the installed ``toolchoice`` console script, one command after the other:

1. **BFCL simple_python**: ``toolchoice import bfcl`` of the 400 questions with their possible answers, a replay
   model of the gold answers (``bfcl_helpers.write_replay_file``, written to ``<data>/replays/``), and
   ``toolchoice run --suite bfcl_simple_python --models replay/replays/bfcl_simple_python_gold.jsonl``.
2. **Real Claude Code sessions**: each of the two sessions in ``toolchoice_pipeline_tests/data/transcripts/
   claude_code/`` is ingested into its own suite (``toolchoice ingest claude-code``) and run with the suite's
   own replay model (the recorded first steps), graded by the offline judge.
3. **The canary session** (the packaged ``ingest/canary_session/canary.jsonl`` + ``canary.labels.jsonl``): ingested with its labels
   and run; its recorded choices (one good, three bad) must score TSQ 0.25.
4. **The demo suite** twice: cold, then an unchanged re-run (a new release id), which must make no agent
   model call (every agent call is served by the call journal; the judge's polls are never cached).

Writes ``benchmarks/results/pipeline_real_inputs.json``: per step the command, exit code and wall time (s),
and for runs the task count, the per-model scores of ``releases/<id>/scores.json`` (shares in points, TSQ in
[0, 1]), the agent model calls made and served from the journal, and the judge votes; then the expectations
checked (gold BFCL replay ≈ 100 % right arguments, canary TSQ 0.25, re-run without agent calls, every exit
code 0). Exits 1 when an expectation fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from toolchoice_pipeline_tests.bfcl_helpers import answers_file, questions_file, read_verdicts, write_replay_file  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "pipeline_real_inputs.json"
TRANSCRIPTS = REPO / "toolchoice_pipeline_tests" / "data" / "transcripts" / "claude_code"
SESSIONS = {
    "cc_fasthooks": TRANSCRIPTS / "fasthooks_sample_main_transcript.jsonl",
    "cc_spotter": TRANSCRIPTS / "spotter_tool_heavy.jsonl",
}
BFCL_SUITE = "bfcl_simple_python"
BFCL_REPLAY = f"replays/{BFCL_SUITE}_gold.jsonl"
CANARY_TSQ = 0.25
SCORE_KEYS = (
    "n_tasks",
    "errors",
    "n_scored",
    "n_unlabelled",
    "right_tool_pct",
    "right_args_pct",
    "calls_per_task",
    "tsq_mean",
    "agent_cost_usd",
    "judge_cost_usd",
    "latency_ms_p50",
    "latency_ms_p95",
)


def toolchoice_command() -> list[str]:
    script = Path(sys.executable).with_name("toolchoice")
    return (
        [str(script)] if script.exists() else [sys.executable, "-c", "from toolchoice_pipeline.cli import main; main()"]
    )


class Bench:
    """Runs the commands in ``work`` and collects one record per step."""

    def __init__(self, work: Path):
        self.work = work
        self.data = work / "data"
        self.steps: list[dict[str, Any]] = []
        self.env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        self.env.pop("TOOLCHOICE_DATA_DIR", None)

    def command(self, name: str, *args: str) -> dict[str, Any]:
        """Run ``toolchoice ARGS --data-dir <data>``; record exit code, wall time (s) and the output's tail."""
        argv = [*toolchoice_command(), *args, "--data-dir", str(self.data)]
        started = time.perf_counter()
        done = subprocess.run(argv, cwd=self.work, capture_output=True, text=True, env=self.env, timeout=1800)
        wall_s = time.perf_counter() - started
        step = {
            "step": name,
            "command": ["toolchoice", *(self._shown(a) for a in args)],
            "exit_code": done.returncode,
            "wall_s": round(wall_s, 2),
        }
        if done.returncode != 0:
            step["output_tail"] = (done.stdout + done.stderr)[-3000:]
        self.steps.append(step)
        print(f"{name}: exit {done.returncode} in {wall_s:.1f} s", flush=True)
        return step

    def _shown(self, arg: str) -> str:
        return arg.replace(str(self.work), "<work>").replace(str(REPO), "<repo>")

    def run(self, name: str, suite: str, release: str, *extra: str) -> dict[str, Any]:
        """``toolchoice run --suite S --release R --kind release`` and what the release stored."""
        step = self.command(name, "run", "--suite", suite, "--release", release, "--kind", "release", *extra)
        step.update(suite=suite, release_id=release)
        scores_path = self.data / "releases" / release / "scores.json"
        if scores_path.exists():
            scores = json.loads(scores_path.read_text(encoding="utf-8"))
            step["catalog_version"] = scores.get("catalog_version")
            step["gate_passed"] = scores.get("gate", {}).get("passed")
            step["models"] = {
                model: {key: values.get(key) for key in SCORE_KEYS} for model, values in scores["models"].items()
            }
            step.update(self._calls(release))
        return step

    def query(self, sql: str, *params: Any) -> list[tuple]:
        """Rows of ``sql`` on the warehouse's DuckDB views (opened read-only)."""
        import duckdb

        con = duckdb.connect(str(self.data / "warehouse" / "toolchoice.duckdb"), read_only=True)
        try:
            return con.execute(sql, list(params)).fetchall()
        finally:
            con.close()

    def wrong_args(self, release: str) -> list[str]:
        """Task ids whose first call did not get the right arguments in ``release``."""
        rows = self.query(
            "SELECT task_id FROM task_scores WHERE release_id = ? AND NOT right_args ORDER BY task_id", release
        )
        return [row[0] for row in rows]

    def _calls(self, release: str) -> dict[str, int]:
        """Agent model calls made and served from the journal, and judge votes, from the release's tables."""
        [(made, served)] = self.query(
            "SELECT count(*) FILTER (WHERE NOT cache_hit AND request_key IS NOT NULL), "
            "count(*) FILTER (WHERE cache_hit) FROM agent_calls WHERE release_id = ?",
            release,
        )
        [(votes,)] = self.query("SELECT count(*) FROM judge_votes WHERE release_id = ?", release)
        return {"agent_model_calls": int(made), "agent_calls_from_journal": int(served), "judge_votes": int(votes)}

    def ingest(self, name: str, suite: str, files: list[Path], *extra: str) -> dict[str, Any]:
        step = self.command(name, "ingest", "claude-code", *map(str, files), "--suite", suite, *extra)
        manifest_path = self.data / "suites" / suite / "ingest.json"
        if manifest_path.exists():
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            step.update(
                suite=suite,
                turns=manifest["turns"],
                tasks=manifest["tasks"],
                labelled=manifest["labelled"],
                warnings=manifest["warnings"]["count"],
                redactions=sum(manifest["redactions"].values()),
            )
        return step


def check(checks: list[dict[str, Any]], name: str, passed: bool, detail: str) -> None:
    checks.append({"check": name, "passed": bool(passed), "detail": detail})


def step_named(steps: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(step for step in steps if step["step"] == name)


def only_model(step: dict[str, Any]) -> dict[str, Any]:
    models = step.get("models") or {}
    return next(iter(models.values())) if len(models) == 1 else {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=None, help="Where to copy data/ (default: a temp dir).")
    parser.add_argument("--keep", action="store_true", help="Keep the work directory.")
    args = parser.parse_args()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="toolchoice-real-inputs-"))
    if (work / "data").exists():
        shutil.rmtree(work / "data")
    work.mkdir(parents=True, exist_ok=True)
    shutil.copytree(
        REPO / "data", work / "data", ignore=shutil.ignore_patterns("releases", "warehouse", "cache", "dagster_home")
    )
    bench = Bench(work)
    started = time.perf_counter()
    try:
        # 1. BFCL simple_python with the gold answers replayed.
        bench.command(
            "bfcl_import",
            "import",
            "bfcl",
            str(questions_file("simple_python")),
            str(answers_file("simple_python")),
            "--suite",
            BFCL_SUITE,
        )
        chosen = write_replay_file(bench.data / BFCL_REPLAY, categories=["simple_python"])
        bench.steps[-1]["replay_lines"] = len(chosen)
        run = bench.run("bfcl_run", BFCL_SUITE, "bfcl-gold", "--models", f"replay/{BFCL_REPLAY}")
        if "models" in run:
            run["wrong_args_task_ids"] = bench.wrong_args("bfcl-gold")
            # BFCL's own AST checker rates a few of its gold outputs invalid (docs/bfcl.md): those must be the misses.
            run["bfcl_invalid_gold_task_ids"] = sorted(
                line["task_id"]
                for line in read_verdicts()
                if line["category"] == "simple_python"
                and line["variant"] == chosen.get(line["task_id"])
                and not line["bfcl_valid"]
            )
        # 2. The two real Claude Code sessions, each its own suite.
        for suite, path in SESSIONS.items():
            bench.ingest(f"{suite}_ingest", suite, [path])
            bench.run(f"{suite}_run", suite, f"{suite}-r1")
        # 3. The canary session with its labels.
        from toolchoice_pipeline.ingest.canary import PACKAGED_CANARY as sessions

        bench.ingest(
            "canary_ingest", "canary", [sessions / "canary.jsonl"], "--labels", str(sessions / "canary.labels.jsonl")
        )
        bench.run("canary_run", "canary", "canary-r1")
        # 4. The demo suite, cold and then unchanged.
        bench.run("demo_cold", "coding_agent", "demo-r1")
        bench.run("demo_rerun", "coding_agent", "demo-r2")
    finally:
        total_s = time.perf_counter() - started
        if not args.keep and args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)

    steps = bench.steps
    checks: list[dict[str, Any]] = []
    for step in steps:
        check(checks, f"{step['step']} exits 0", step["exit_code"] == 0, f"exit {step['exit_code']}")
    bfcl_step = step_named(steps, "bfcl_run")
    bfcl = only_model(bfcl_step)
    check(
        checks,
        "BFCL gold replay: right tool everywhere, wrong arguments exactly where BFCL rates the gold invalid",
        bfcl.get("right_tool_pct") == 100.0
        and bfcl.get("errors") == 0
        and bfcl.get("n_tasks") == 400
        and bfcl_step.get("wrong_args_task_ids") == bfcl_step.get("bfcl_invalid_gold_task_ids"),
        f"right_tool {bfcl.get('right_tool_pct')} %, right_args {bfcl.get('right_args_pct')} %, errors "
        f"{bfcl.get('errors')} of {bfcl.get('n_tasks')}; wrong args {bfcl_step.get('wrong_args_task_ids')}, "
        f"BFCL-invalid gold {bfcl_step.get('bfcl_invalid_gold_task_ids')}",
    )
    canary = only_model(step_named(steps, "canary_run"))
    check(
        checks,
        "canary TSQ is 0.25",
        canary.get("tsq_mean") is not None and abs(canary["tsq_mean"] - CANARY_TSQ) < 1e-9,
        f"tsq_mean {canary.get('tsq_mean')}",
    )
    for suite in SESSIONS:
        ingest, run = step_named(steps, f"{suite}_ingest"), step_named(steps, f"{suite}_run")
        scored = only_model(run)
        check(
            checks,
            f"{suite}: every ingested task ran and was judged",
            scored.get("n_tasks") == ingest.get("tasks")
            and scored.get("errors") == 0
            and scored.get("tsq_mean") is not None,
            f"{scored.get('n_tasks')} tasks run of {ingest.get('tasks')} ingested, errors {scored.get('errors')}, "
            f"tsq_mean {scored.get('tsq_mean')}",
        )
    cold, rerun = step_named(steps, "demo_cold"), step_named(steps, "demo_rerun")
    check(
        checks,
        "demo re-run makes no agent model call",
        rerun.get("agent_model_calls") == 0 and rerun.get("agent_calls_from_journal", 0) > 0,
        f"cold {cold.get('agent_model_calls')} calls, re-run {rerun.get('agent_model_calls')} calls "
        f"({rerun.get('agent_calls_from_journal')} from the journal)",
    )
    check(
        checks,
        "demo re-run scores equal the cold run's",
        cold.get("models") is not None
        and all(
            {k: v for k, v in cold["models"][m].items() if not k.startswith("latency")}
            == {k: v for k, v in rerun["models"][m].items() if not k.startswith("latency")}
            for m in cold["models"]
        ),
        "same shares, TSQ and costs per model (latencies are those of the journaled calls)",
    )

    result = {
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()},
        "total_wall_s": round(total_s, 2),
        "steps": steps,
        "checks": checks,
        "all_checks_passed": all(c["passed"] for c in checks),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print_summary(result)
    return 0 if result["all_checks_passed"] else 1


def print_summary(result: dict[str, Any]) -> None:
    print(f"\n{'step':<22} {'exit':>4} {'wall s':>7} {'tasks':>6}  scores")
    for step in result["steps"]:
        tasks = step.get("tasks") or next((m.get("n_tasks") for m in (step.get("models") or {}).values()), "")
        scores = "; ".join(
            f"{model}: right tool {m['right_tool_pct']}, right args {m['right_args_pct']}, TSQ {m['tsq_mean']}"
            for model, m in (step.get("models") or {}).items()
        )
        if "agent_model_calls" in step:
            scores += f" [agent calls {step['agent_model_calls']}, from journal {step['agent_calls_from_journal']}]"
        print(f"{step['step']:<22} {step['exit_code']:>4} {step['wall_s']:>7.1f} {tasks!s:>6}  {scores}")
    print()
    for item in result["checks"]:
        print(f"{'ok  ' if item['passed'] else 'FAIL'} {item['check']}: {item['detail']}")
    print(f"\ntotal {result['total_wall_s']} s -> {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    sys.exit(main())
