"""Does the offline judge ``local/catalog-judge`` have teeth on whole steps? Replays of right and wrong steps.

Run from the repo root (about 20 s alone on the 2 shared cores)::

    python benchmarks/judge/step_replays.py [--out benchmarks/results/judge_step_replays.json]

Every replay is graded the way the ``local/catalog-judge`` provider grades it (:func:`agreement.grade`: the
judge prompt built and read back), once, as the verdict is deterministic. Each replay has a truth (a right or
a wrong step); the figures per data set are accuracy and Cohen's kappa of the verdict against that truth, the
**detection rate** (wrong steps judged incorrect) and the **false-alarm rate** (right steps judged incorrect).
An abstention (the judge has no evidence: an invalid vote) is counted per variant and left out of the
agreement; a variant's ``judged_correct_share`` (its TSQ) is over the replays with a valid vote.

- ``parallel`` (BFCL, one function per task, 2 to 4 calls expected): ``gold`` (BFCL's gold calls, right),
  ``missing_call`` (the gold answer without its last call, wrong: a partial answer), and, with a second tool
  added to the catalog (the function of the next BFCL task, a distractor), ``gold_with_distractor`` (right)
  and ``swapped_tool`` (the last gold call replaced by a call of the distractor with that task's own gold
  arguments, wrong). ``tsq`` gives the share judged correct of the full and of the partial answer.
- ``multiple`` (BFCL, 2 to 4 functions, one call expected): ``gold`` (right) and ``wrong_function`` (another
  function of the catalog, from ``bfcl_verdicts.jsonl``, wrong).
- ``irrelevance`` (BFCL, no tool can answer): ``no_call`` (right) and ``spurious_call`` (a call of the
  catalog's function, wrong), from ``bfcl_verdicts.jsonl``.
- ``demo`` (``data/suites/coding_agent``): the first steps of the two local baselines through LiteLLM, right
  when the right tool was called (the labels of :mod:`agreement`); and for every read-only request (expected
  Read, Grep, Glob, WebSearch or WebFetch, no edit/write tag) a ``mutating_tool`` replay calling Write (the
  file the request names, empty content) and one calling Edit, both wrong. ``baseline_first_steps_only`` gives
  the agreement on the baselines' steps alone (the measure of ``agreement.py``).

Writes the JSON given by ``--out`` (``benchmarks/results/judge_step_replays.json`` by default).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

# agreement.py sets the offline environment and the import path on import
from agreement import DATA, REPO, first_steps, grade  # noqa: E402

from toolchoice_pipeline.ingest.bfcl import import_bfcl  # noqa: E402
from toolchoice_pipeline.judge.calibration import cohen_kappa  # noqa: E402
from toolchoice_pipeline.providers.offline_judge.fit import name_spans  # noqa: E402
from toolchoice_pipeline.records.calls import Reply, from_openai_message, to_openai_message  # noqa: E402
from toolchoice_pipeline.suites.catalog import ToolDefinition  # noqa: E402
from toolchoice_pipeline.suites.config import load_run_config  # noqa: E402
from toolchoice_pipeline.suites.suite import load_suite  # noqa: E402
from toolchoice_pipeline_tests.bfcl_helpers import (  # noqa: E402
    answers_file,
    questions_file,
    read_verdicts,
    suite_name,
    verdict_reply,
)
from toolchoice_pipeline_tests.scoring_reference import score_episodes  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "judge_step_replays.json"
READ_TOOLS = ("Read", "Grep", "Glob", "WebSearch", "WebFetch")


def judged(found: Any) -> bool | None:
    """True / False for a correct / incorrect verdict; None when the judge abstained (an invalid vote)."""
    return None if found.verdict == "abstain" else found.verdict == "correct"


def reply_of(calls: list[dict[str, Any]]) -> Reply:
    return from_openai_message(to_openai_message(verdict_reply(calls)))


def figures(rows: list[tuple[str, bool | None, bool]]) -> dict[str, Any]:
    """Agreement of (variant, judged_correct, truth_correct) rows, overall and per variant; ``judged_correct``
    None is an abstention (an invalid vote): counted per variant, left out of the agreement."""
    pairs = [(judged, truth) for _, judged, truth in rows if judged is not None]
    right = [judged for judged, truth in pairs if truth]
    wrong = [judged for judged, truth in pairs if not truth]
    kappa = cohen_kappa(pairs)
    per_variant: dict[str, dict[str, Any]] = {}
    for variant, judged, truth in rows:
        entry = per_variant.setdefault(
            variant, {"n": 0, "judged_correct": 0, "abstained": 0, "truth": "right" if truth else "wrong"}
        )
        entry["n"] += 1
        entry["judged_correct"] += bool(judged)
        entry["abstained"] += judged is None
    for entry in per_variant.values():
        # The TSQ of the variant: the share judged correct among the episodes with a valid vote.
        voted = entry["n"] - entry["abstained"]
        entry["judged_correct_share"] = round(entry["judged_correct"] / voted, 4) if voted else None
    return {
        "n": len(pairs),
        "abstained": len(rows) - len(pairs),
        "accuracy": round(sum(a == b for a, b in pairs) / len(pairs), 4),
        "kappa": None if kappa is None else round(kappa, 4),
        "detection_rate": round(sum(not j for j in wrong) / len(wrong), 4) if wrong else None,
        "false_alarm_rate": round(sum(not j for j in right) / len(right), 4) if right else None,
        "variants": per_variant,
    }


def bfcl_suite(data: Path, category: str):
    import_bfcl(questions_file(category), answers_file(category), suite_name(category), data)
    return load_suite(data, suite_name(category))


def parallel(data: Path) -> tuple[dict[str, Any], dict[str, str]]:
    suite = bfcl_suite(data, "parallel")
    tasks = {t.id: t for t in suite.tasks}
    lines = {(v["task_id"], v["variant"]): v for v in read_verdicts() if v["category"] == "parallel"}
    order = [t.id for t in suite.tasks]
    rows: list[tuple[str, bool, bool]] = []
    wrong_gold: dict[str, str] = {}
    for index, task_id in enumerate(order):
        task = tasks[task_id]
        catalog = suite.task_catalog(task)
        gold = lines[(task_id, "gold")]["tool_calls"]
        other_id = order[(index + 1) % len(order)]
        other_tool: ToolDefinition = suite.task_catalog(tasks[other_id])[0]
        other_args = lines[(other_id, "gold")]["tool_calls"][0]["arguments"]
        with_other = [*catalog, other_tool]
        messages = task.message_dicts()
        for variant, calls, cat, truth in (
            ("gold", gold, catalog, True),
            ("missing_call", lines[(task_id, "missing_call")]["tool_calls"], catalog, False),
            ("gold_with_distractor", gold, with_other, True),
            ("swapped_tool", [*gold[:-1], {"name": other_tool.name, "arguments": other_args}], with_other, False),
        ):
            found = grade(messages, cat, reply_of(calls))
            rows.append((variant, judged(found), truth))
            if truth and found.verdict != "correct":
                wrong_gold[f"{task_id}/{variant}"] = found.conclusion[:300]
    result = figures(rows)
    result["tsq"] = {
        "full_answer": result["variants"]["gold"]["judged_correct_share"],
        "partial_answer": result["variants"]["missing_call"]["judged_correct_share"],
    }
    return result, wrong_gold


def multiple(data: Path) -> tuple[dict[str, Any], dict[str, str]]:
    suite = bfcl_suite(data, "multiple")
    tasks = {t.id: t for t in suite.tasks}
    rows: list[tuple[str, bool, bool]] = []
    wrong_gold: dict[str, str] = {}
    for line in read_verdicts():
        if line["category"] != "multiple" or line["variant"] not in ("gold", "wrong_function"):
            continue
        task = tasks[line["task_id"]]
        truth = line["variant"] == "gold"
        found = grade(task.message_dicts(), suite.task_catalog(task), reply_of(line["tool_calls"]))
        rows.append((line["variant"], judged(found), truth))
        if truth and found.verdict != "correct":
            wrong_gold[line["task_id"]] = found.conclusion[:300]
    return figures(rows), wrong_gold


def irrelevance(data: Path) -> tuple[dict[str, Any], dict[str, str]]:
    suite = bfcl_suite(data, "irrelevance")
    tasks = {t.id: t for t in suite.tasks}
    rows: list[tuple[str, bool | None, bool]] = []
    misjudged: dict[str, str] = {}
    for line in read_verdicts():
        if line["category"] != "irrelevance":
            continue
        task = tasks[line["task_id"]]
        truth = line["variant"] == "no_call"
        found = grade(task.message_dicts(), suite.task_catalog(task), reply_of(line["tool_calls"]))
        rows.append((line["variant"], judged(found), truth))
        if judged(found) is not None and judged(found) != truth:
            misjudged[f"{line['task_id']}/{line['variant']}"] = f"{found.verdict}: {found.conclusion[:200]}"
    return figures(rows), misjudged


def demo() -> tuple[dict[str, Any], dict[str, str]]:
    from toolchoice_pipeline.judge.polling import episode_items
    from toolchoice_pipeline.providers import register_providers

    register_providers()
    suite = load_suite(DATA, "coding_agent")
    episodes = asyncio.run(first_steps(suite, load_run_config(DATA).model_names()))
    right = {(s.model, s.task_id): s.right_tool for s in score_episodes(suite, episodes)}
    rows: list[tuple[str, bool, bool]] = []
    misjudged: dict[str, str] = {}
    for item in episode_items(suite, episodes):
        if right[item.key] is None:
            continue
        found = grade(item.conversation, item.catalog, item.reply)
        rows.append(("baseline_first_step", judged(found), bool(right[item.key])))
        if (found.verdict == "correct") != bool(right[item.key]):
            misjudged[f"{item.model}/{item.task_id}"] = f"{found.verdict}: {found.conclusion[:200]}"
    for task in suite.tasks:
        expected = task.expected
        if expected is None or expected.tool not in READ_TOOLS or {"edit", "write"} & set(task.tags or ()):
            continue
        request = task.message_dicts()[-1].get("content") or ""
        spans = [s.value for s in name_spans(request) if s.kind in ("path", "file")]
        path = spans[0] if spans else "notes.md"
        for tool, arguments in (
            ("Write", {"file_path": path, "content": ""}),
            ("Edit", {"file_path": path, "old_string": "a", "new_string": ""}),
        ):
            found = grade(
                task.message_dicts(), suite.task_catalog(task), reply_of([{"name": tool, "arguments": arguments}])
            )
            rows.append(("mutating_tool", judged(found), False))
            if found.verdict == "correct":
                misjudged[f"{tool}/{task.id}"] = f"correct: {found.conclusion[:200]}"
    result = figures(rows)
    result["baseline_first_steps_only"] = {
        k: v for k, v in figures([r for r in rows if r[0] == "baseline_first_step"]).items() if k != "variants"
    }
    return result, misjudged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS, help="Where to write the JSON figures.")
    args = parser.parse_args()
    import tempfile

    data = Path(tempfile.mkdtemp(prefix="toolchoice-step-replays-")) / "data"
    data.mkdir(parents=True)
    (data / "toolchoice.yaml").write_text((DATA / "toolchoice.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    results: dict[str, Any] = {}
    examples: dict[str, Any] = {}
    runs = (
        ("parallel", lambda: parallel(data)),
        ("multiple", lambda: multiple(data)),
        ("irrelevance", lambda: irrelevance(data)),
        ("demo", demo),
    )
    for name, run in runs:
        results[name], examples[name] = run()
    from toolchoice_pipeline.judge.prompt import RUBRIC_VERSION

    out = {
        "rubric_version": RUBRIC_VERSION,
        **results,
        "misjudged_examples": {k: dict(list(v.items())[:60]) for k, v in examples.items()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"rubric {RUBRIC_VERSION}")
    print(f"{'data set':12} {'n':>5} {'accuracy':>9} {'kappa':>7} {'detection':>10} {'false alarms':>13}")
    for name, r in results.items():
        print(
            f"{name:12} {r['n']:>5} {r['accuracy']:>9} {r['kappa']!s:>7} {r['detection_rate']!s:>10} "
            f"{r['false_alarm_rate']!s:>13}"
        )
        print(
            "    "
            + ", ".join(
                f"{v}: {e['judged_correct']}/{e['n']} judged correct, {e['abstained']} abstained"
                for v, e in r["variants"].items()
            )
        )
    b = results["demo"]["baseline_first_steps_only"]
    print(
        f"demo baseline first steps only: accuracy {b['accuracy']}, kappa {b['kappa']}, detection "
        f"{b['detection_rate']}, false alarms {b['false_alarm_rate']} on {b['n']}"
    )
    print(
        f"parallel TSQ: full answer {results['parallel']['tsq']['full_answer']}, "
        f"partial answer {results['parallel']['tsq']['partial_answer']}"
    )
    print(f"-> {args.out.relative_to(REPO) if args.out.is_relative_to(REPO) else args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
