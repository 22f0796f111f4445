"""One timed run of the scoring benchmark (run by ``run.py`` in a fresh process, so peak RSS is its own).

    python benchmarks/scoring/score_and_gate.py columnar DATA_DIR OUT_DIR
    python benchmarks/scoring/score_and_gate.py pure DATA_DIR OUT_DIR

Both read the same Parquet rows (``agent_calls``, ``judge_votes``, ``tasks``, the baseline's ``task_scores``
and ``models``), score every episode, summarise per model, gate against the baseline with flipped tasks, and
write ``task_scores.parquet`` and ``gate.json``. ``columnar`` is the project's path for large releases
(:func:`score_columnar` + :func:`task_flips`); ``pure`` is a plain Python loop over the rows with the
project's pure functions (:func:`score_episode`, :func:`summarise`), the reference for the ratio. Prints one
JSON object: wall seconds per phase, peak RSS, and the gate's verdict.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyarrow.parquet as pq  # noqa: E402
from synthetic import catalog  # noqa: E402

from toolchoice_pipeline.releases.gate import check_gate, task_flips  # noqa: E402
from toolchoice_pipeline.scoring.columnar import score_columnar  # noqa: E402

THREADS = 2


def columnar(data: Path, out: Path) -> dict:
    phases = {}
    start = time.perf_counter()
    scores = score_columnar(
        data / "agent_calls.parquet",
        data / "judge_votes.parquet",
        data / "tasks.parquet",
        profile="key_args",
        catalogs={"": catalog()},
        threads=THREADS,
    )
    phases["score_s"] = time.perf_counter() - start
    mark = time.perf_counter()
    pq.write_table(scores.task_scores, out / "task_scores.parquet", compression="zstd")
    phases["write_s"] = time.perf_counter() - mark
    mark = time.perf_counter()
    baseline = pq.read_table(
        data / "baseline_task_scores.parquet", columns=["model", "task_id", "right_tool", "right_args"]
    )
    flips = task_flips(scores.task_scores, baseline)
    models = {m: s.model_dump() for m, s in scores.models.items()}
    gate = check_gate("bench", models, "baseline", json.loads((data / "baseline_models.json").read_text()), flips)
    (out / "gate.json").write_text(json.dumps(gate.to_json()))
    phases["gate_s"] = time.perf_counter() - mark
    return {"phases": phases, "distinct_matches": scores.distinct_matches, "gate": _verdict(gate), "models": models}


def pure(data: Path, out: Path) -> dict:
    from toolchoice_pipeline.records.calls import Reply, ToolCall
    from toolchoice_pipeline.records.episodes import Episode, JudgeVote, StepRecord
    from toolchoice_pipeline.releases.gate import TaskFlips
    from toolchoice_pipeline.releases.lineage import Lineage
    from toolchoice_pipeline.releases.warehouse_tables import build_table
    from toolchoice_pipeline.suites.tasks import Task
    from toolchoice_pipeline_tests.scoring_reference import score_episode, summarise

    phases = {}
    start = time.perf_counter()
    tools = catalog()
    tasks = {}
    for row in pq.read_table(data / "tasks.parquet").to_pylist():
        expected = None if row["expected_json"] is None else json.loads(row["expected_json"])
        tasks[row["task_id"]] = Task.model_validate(
            {
                "id": row["task_id"],
                "expected": expected,
                "tags": row["tags"],
                "messages": [{"role": "user", "content": row["task_id"]}],
            }
        )
    vote_rows = _rows(
        data / "judge_votes.parquet",
        ["model", "task_id", "poll", "verdict", "valid", "judge_model", "rubric_version", "cost_usd"],
    )
    pending_vote = next(vote_rows, None)
    scores = []

    def finish(model, task_id, steps, error):
        nonlocal pending_vote
        votes = []
        while pending_vote is not None and (pending_vote["model"], pending_vote["task_id"]) <= (model, task_id):
            if (pending_vote["model"], pending_vote["task_id"]) == (model, task_id):
                votes.append(JudgeVote(**pending_vote))
            pending_vote = next(vote_rows, None)
        episode = Episode(model=model, task_id=task_id, steps=steps, error=error)
        scores.append(score_episode(episode, tasks[task_id], tools, "key_args", votes))

    current, steps, error = None, [], None
    for row in _rows(
        data / "agent_calls.parquet",
        [
            "model",
            "task_id",
            "step",
            "calls_json",
            "latency_ms",
            "prompt_tokens",
            "completion_tokens",
            "cost_usd",
            "error",
            "episode_error",
        ],
    ):
        key = (row["model"], row["task_id"])
        if key != current:
            if current is not None:
                finish(*current, steps, error)
            current, steps, error = key, [], row["episode_error"]
        if row["episode_error"] is not None and row["calls_json"] is None and row["step"] == 0:
            continue  # an episode that failed before any model call has no step
        reply = (
            None
            if row["calls_json"] is None
            else Reply(calls=[ToolCall.model_validate(c) for c in json.loads(row["calls_json"])])
        )
        steps.append(
            StepRecord(
                step=row["step"],
                reply=reply,
                latency_ms=row["latency_ms"],
                prompt_tokens=row["prompt_tokens"],
                completion_tokens=row["completion_tokens"],
                cost_usd=row["cost_usd"],
                error=row["error"],
            )
        )
    if current is not None:
        finish(*current, steps, error)
    models = {m: s.model_dump() for m, s in summarise(scores).items()}
    phases["score_s"] = time.perf_counter() - start
    mark = time.perf_counter()
    lineage = Lineage(release_id="bench", suite="synthetic", catalog_version="0123456789ab", run_id="pure")
    table = build_table("task_scores", [s.model_dump() for s in scores], lineage)
    pq.write_table(table, out / "task_scores.parquet", compression="zstd")
    phases["write_s"] = time.perf_counter() - mark
    mark = time.perf_counter()
    baseline = {
        (r["model"], r["task_id"]): (r["right_tool"], r["right_args"])
        for r in pq.read_table(
            data / "baseline_task_scores.parquet", columns=["model", "task_id", "right_tool", "right_args"]
        ).to_pylist()
    }
    flips: dict = {}
    for score in scores:
        before = baseline.get((score.model, score.task_id))
        if before is None:
            continue
        for metric, was, now in (
            ("right_tool", before[0], score.right_tool),
            ("right_args", before[1], score.right_args),
        ):
            if was is None or now is None or was == now:
                continue
            bucket = flips.setdefault(score.model, {}).setdefault(metric, TaskFlips())
            (bucket.right_to_wrong if was else bucket.wrong_to_right).append(score.task_id)
    for per_model in flips.values():
        for bucket in per_model.values():
            bucket.right_to_wrong.sort()
            bucket.wrong_to_right.sort()
    gate = check_gate("bench", models, "baseline", json.loads((data / "baseline_models.json").read_text()), flips)
    (out / "gate.json").write_text(json.dumps(gate.to_json()))
    phases["gate_s"] = time.perf_counter() - mark
    return {"phases": phases, "distinct_matches": None, "gate": _verdict(gate), "models": models}


def peak_rss_mb() -> float:
    """Peak resident memory of this process since it started: ``VmHWM`` (reset by exec, unlike ``ru_maxrss``,
    which would include the memory of the parent this process was forked from)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rows(path: Path, columns: list[str]):
    for batch in pq.ParquetFile(path).iter_batches(batch_size=65_536, columns=columns):
        yield from batch.to_pylist()


def _verdict(gate) -> dict:
    flips = gate.to_json()["flips"]
    return {
        "passed": gate.passed,
        "failures": [f.model_dump() for f in gate.failures],
        "flips": {
            model: {metric: {k: len(v) for k, v in f.items()} for metric, f in per.items()}
            for model, per in flips.items()
        },
    }


if __name__ == "__main__":
    mode, data_dir, out_dir = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    out_dir.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    result = (columnar if mode == "columnar" else pure)(data_dir, out_dir)
    result["wall_s"] = time.perf_counter() - began
    result["peak_rss_mb"] = peak_rss_mb()
    result["mode"] = mode
    print(json.dumps(result))
