"""How the offline judge ``local/catalog-judge`` grades real input: the figures quoted in docs/judge.md.

Run from the repo root (it takes about a minute; run it alone, the machine has 2 shared cores)::

    python benchmarks/judge/agreement.py [--work-dir DIR]

The offline judge's verdict is deterministic (temperature and seed change only the wording), so every
ChainPoll poll agrees and a choice's TSQ is 1 or 0: this script calls the judge's own grading
(:func:`toolchoice_pipeline.providers.offline_judge.model.assess`) on the judge prompt (:func:`build_judge_messages`, read
back with :func:`read_judge_input`) exactly as the ``local/catalog-judge`` provider does, once per choice.

1. **Demo suite** ``coding_agent``: the first steps of the two local baselines through LiteLLM; agreement of the
   verdict with right tool (accuracy, Cohen's kappa) with the demo catalog and with a names-only copy; the
   canary's four verdicts with each.
2. **BFCL gold replays**: the gold answer of every task of ``simple_python``, ``multiple`` and ``parallel``
   (``irrelevance``: the abstention), imported with :func:`import_bfcl` into ``<work>/data``: the share
   judged correct (= TSQ) and the tasks judged incorrect with the judge's reason.
3. **BFCL synthetic variants** (``bfcl_verdicts.jsonl``: gold, wrong function, no call, spurious call, wrong
   value...): per category and variant, how many the judge calls correct, next to BFCL's own verdict.
4. **Two real Claude Code sessions** (``toolchoice_pipeline_tests/data/transcripts/claude_code``), ingested with
   ``toolchoice ingest claude-code`` (against the demo catalog, the default) into their own suites and graded on
   their recorded first steps.

Everything is written in a copy of ``data/`` under ``--work-dir`` (a temporary directory by default).

Writes ``benchmarks/results/judge_offline_agreement.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from toolchoice_pipeline.ingest.bfcl import import_bfcl  # noqa: E402
from toolchoice_pipeline.ingest.canary import canary_turns  # noqa: E402
from toolchoice_pipeline.judge import build_judge_messages, read_judge_input  # noqa: E402
from toolchoice_pipeline.judge.calibration import cohen_kappa  # noqa: E402
from toolchoice_pipeline.judge.polling import episode_items  # noqa: E402
from toolchoice_pipeline.providers.offline_judge.model import Assessment, assess  # noqa: E402
from toolchoice_pipeline.records.calls import Reply, from_openai_message, to_openai_message  # noqa: E402
from toolchoice_pipeline.records.episodes import Episode, StepRecord  # noqa: E402
from toolchoice_pipeline.suites.catalog import ToolDefinition  # noqa: E402
from toolchoice_pipeline.suites.config import ModelSpec, RetryConfig, load_run_config  # noqa: E402
from toolchoice_pipeline.suites.suite import load_suite  # noqa: E402
from toolchoice_pipeline_tests.bfcl_helpers import (  # noqa: E402
    CATEGORIES,
    answers_file,
    questions_file,
    read_verdicts,
    suite_name,
    verdict_reply,
)
from toolchoice_pipeline_tests.scoring_reference import score_episodes  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "judge_offline_agreement.json"
DATA = REPO / "data"
SESSIONS = REPO / "toolchoice_pipeline_tests" / "data" / "transcripts" / "claude_code"
RETRIES = RetryConfig(max_attempts=1)


def grade(conversation: list[dict[str, Any]], catalog: list[ToolDefinition], reply: Reply) -> Assessment:
    """The offline judge's assessment of one choice, from its judge prompt (what the provider does)."""
    return assess(read_judge_input(build_judge_messages(conversation, catalog, reply)))


def names_only(catalog: list[ToolDefinition]) -> list[ToolDefinition]:
    def strip(schema: Any) -> Any:
        if isinstance(schema, dict):
            return {k: strip(v) for k, v in schema.items() if k != "description"}
        if isinstance(schema, list):
            return [strip(v) for v in schema]
        return schema

    return [ToolDefinition(name=t.name, parameters=strip(t.parameters)) for t in catalog]


def agreement(pairs: list[tuple[bool, bool]]) -> dict[str, Any]:
    n = len(pairs)
    kappa = cohen_kappa(pairs)
    return {
        "labelled": n,
        "accuracy": round(sum(a == b for a, b in pairs) / n, 4),
        "kappa": None if kappa is None else round(kappa, 4),
        "judged_correct_share": round(sum(a for a, _ in pairs) / n, 4),
        "right_tool_share": round(sum(b for _, b in pairs) / n, 4),
    }


async def first_steps(suite, models: list[str]) -> list[Episode]:
    from toolchoice_pipeline.execution.llm import complete

    async def one(model: str, task) -> Episode:
        done = await complete(
            ModelSpec(model=model),
            task.message_dicts(),
            retries=RETRIES,
            tools=[tool.to_openai_tool() for tool in suite.task_catalog(task)],
        )
        return Episode(
            model=model, task_id=task.id, steps=[StepRecord(step=0, reply=from_openai_message(done.message))]
        )

    return list(await asyncio.gather(*(one(m, t) for m in models for t in suite.tasks)))


def demo() -> dict[str, Any]:
    from toolchoice_pipeline.providers import register_providers

    register_providers()
    suite = load_suite(DATA, "coding_agent")
    episodes = asyncio.run(first_steps(suite, load_run_config(DATA).model_names()))
    right = {(s.model, s.task_id): s.right_tool for s in score_episodes(suite, episodes)}
    out: dict[str, Any] = {}
    for label, strip in (("demo_catalog", False), ("names_only", True)):
        pairs: dict[str, list[tuple[bool, bool]]] = {}
        for item in episode_items(suite, episodes):
            if right[item.key] is None:
                continue
            catalog = names_only(item.catalog) if strip else item.catalog
            judged = grade(item.conversation, catalog, item.reply).verdict == "correct"
            pairs.setdefault(item.model, []).append((judged, bool(right[item.key])))
        out[label] = {
            "all": agreement([p for ps in pairs.values() for p in ps]),
            **{model: agreement(ps) for model, ps in pairs.items()},
        }
        out[label]["canary"] = [
            grade(i.conversation, names_only(i.catalog) if strip else i.catalog, i.reply).verdict
            for i in canary_turns(DATA)
        ]
    return out


def bfcl(data: Path) -> dict[str, Any]:
    suites = {}
    for category in CATEGORIES:
        import_bfcl(questions_file(category), answers_file(category), suite_name(category), data)
        suites[category] = load_suite(data, suite_name(category))
    tasks = {c: {t.id: t for t in s.tasks} for c, s in suites.items()}
    gold: dict[str, Any] = {}
    variants: dict[str, dict[str, Any]] = {}
    for line in read_verdicts():
        category, variant = line["category"], line["variant"]
        task = tasks[category][line["task_id"]]
        reply = from_openai_message(to_openai_message(verdict_reply(line["tool_calls"])))
        found = grade(task.message_dicts(), suites[category].task_catalog(task), reply)
        key = f"{category}/{variant}/{'bfcl_valid' if line['bfcl_valid'] else 'bfcl_invalid'}"
        row = variants.setdefault(key, {"n": 0, "judged_correct": 0})
        row["n"] += 1
        row["judged_correct"] += found.verdict == "correct"
        if variant == ("no_call" if category == "irrelevance" else "gold"):
            entry = gold.setdefault(category, {"n": 0, "judged_correct": 0, "incorrect": {}})
            entry["n"] += 1
            entry["judged_correct"] += found.verdict == "correct"
            if found.verdict != "correct":
                entry["incorrect"][task.id] = found.conclusion[:300]
    for entry in gold.values():
        entry["tsq"] = round(entry["judged_correct"] / entry["n"], 4)
    return {"gold_replay": gold, "variants": dict(sorted(variants.items()))}


def sessions(data: Path) -> dict[str, Any]:
    out = {}
    script = Path(sys.executable).with_name("toolchoice")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "toolchoice_pipeline.cli"]
    for suite_id, path in (
        ("cc_fasthooks", SESSIONS / "fasthooks_sample_main_transcript.jsonl"),
        ("cc_spotter", SESSIONS / "spotter_tool_heavy.jsonl"),
    ):
        subprocess.run(
            [*command, "ingest", "claude-code", str(path), "--suite", suite_id, "--data-dir", str(data)],
            check=True,
            capture_output=True,
        )
        suite = load_suite(data, suite_id)
        replay = {
            json.loads(line)["task_id"]: json.loads(line)
            for line in (data / "suites" / suite_id / "replay.jsonl").read_text().splitlines()
            if line.strip()
        }
        turns = []
        for task in suite.tasks:
            reply = from_openai_message(to_openai_message(verdict_reply(replay[task.id]["tool_calls"])))
            found = grade(task.message_dicts(), suite.task_catalog(task), reply)
            turns.append(
                {
                    "task_id": task.id,
                    "request": task.message_dicts()[-1].get("content", "")[:120],
                    "calls": [c.name for c in reply.calls],
                    "verdict": found.verdict,
                    "conclusion": found.conclusion[:400],
                }
            )
        out[suite_id] = {"tsq": round(sum(t["verdict"] == "correct" for t in turns) / len(turns), 4), "turns": turns}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=None, help="Where to import BFCL and ingest sessions.")
    args = parser.parse_args()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="toolchoice-judge-agreement-"))
    data = work / "data"
    if data.exists():
        shutil.rmtree(data)
    shutil.copytree(DATA, data, ignore=shutil.ignore_patterns("releases", "warehouse", "cache", "dagster_home"))
    result = {"demo": demo(), **bfcl(data), "claude_code_sessions": sessions(data)}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    d = result["demo"]["demo_catalog"]["all"]
    print(f"demo: accuracy {d['accuracy']}, kappa {d['kappa']} on {d['labelled']}")
    for category, entry in result["gold_replay"].items():
        print(f"BFCL {category} gold: TSQ {entry['tsq']} ({entry['n'] - entry['judged_correct']} judged incorrect)")
    for suite_id, entry in result["claude_code_sessions"].items():
        print(f"{suite_id}: TSQ {entry['tsq']} {[t['verdict'] for t in entry['turns']]}")
    print(f"-> {RESULTS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
