"""Helpers for tests that use the BFCL sample in ``data/bfcl`` (see ``data/SOURCES.md``).

- :func:`import_bfcl_suites` imports the four BFCL files as ``bfcl``-profile suites into a data directory.
- :func:`read_verdicts` / :func:`verdict_reply` read ``bfcl_verdicts.jsonl`` (synthetic outputs labelled with
  BFCL's own AST-checker verdict) and turn a line's ``tool_calls`` into a :class:`~toolchoice_pipeline.records.calls.Reply`.
- :func:`write_replay_file` writes a replay file (DESIGN §3) choosing one variant per task, so an imported suite
  can be run end to end with the model ``replay/<path>``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from toolchoice_pipeline.ingest.bfcl import ImportResult, import_bfcl
from toolchoice_pipeline.records.calls import Reply, make_call

BFCL_DATA = Path(__file__).resolve().parent / "data" / "bfcl"
VERDICTS = BFCL_DATA / "bfcl_verdicts.jsonl"
CATEGORIES = ("simple_python", "multiple", "parallel", "irrelevance")
TASK_COUNTS = {"simple_python": 400, "multiple": 200, "parallel": 200, "irrelevance": 240}


def questions_file(category: str) -> Path:
    """The BFCL questions file of ``category`` (``BFCL_v4_<category>.json``)."""
    return BFCL_DATA / f"BFCL_v4_{category}.json"


def answers_file(category: str) -> Path | None:
    """The possible-answer file of ``category``; None for irrelevance (no call expected, no answers)."""
    path = BFCL_DATA / "possible_answer" / f"BFCL_v4_{category}.json"
    return path if path.exists() else None


def suite_name(category: str) -> str:
    return f"bfcl_{category}"


def import_bfcl_suites(data_dir: Path, categories: Iterable[str] = CATEGORIES) -> dict[str, ImportResult]:
    """Import each category's BFCL files as the suite ``bfcl_<category>`` under ``data_dir``."""
    return {
        category: import_bfcl(questions_file(category), answers_file(category), suite_name(category), data_dir)
        for category in categories
    }


def read_verdicts(path: Path = VERDICTS) -> list[dict[str, Any]]:
    """Every line of a verdicts file: ``{task_id, category, variant, tool_calls: [{name, arguments}], bfcl_valid}``."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def verdict_reply(tool_calls: list[dict[str, Any]]) -> Reply:
    """A verdict line's ``tool_calls`` as the reply a model would have given (arguments as object or JSON text)."""
    return Reply(text=None, calls=[make_call(call.get("name"), call.get("arguments")) for call in tool_calls])


def write_replay_file(
    path: Path,
    *,
    prefer: Iterable[str] = ("gold",),
    fallback: str = "gold",
    categories: Iterable[str] | None = None,
    verdicts: Path = VERDICTS,
) -> dict[str, str]:
    """Write a replay file (DESIGN §3) with one line per task of the verdicts file, and return the variant chosen
    for each task id.

    For each task the first variant of ``prefer`` that the verdicts file has is used, else ``fallback`` (every
    task has a ``gold`` variant, except irrelevance tasks, whose abstention is ``no_call``); a task with neither
    is left out (the run then records an infrastructure error for it). ``categories`` limits the tasks.
    Lines: ``{"task_id", "tool_calls": [{"name", "arguments"}], "content": null}``.
    """
    wanted = None if categories is None else set(categories)
    by_task: dict[str, dict[str, dict[str, Any]]] = {}
    for line in read_verdicts(verdicts):
        if wanted is None or line["category"] in wanted:
            by_task.setdefault(line["task_id"], {})[line["variant"]] = line
    order = [*prefer, fallback, "no_call"]
    chosen: dict[str, str] = {}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for task_id, variants in by_task.items():
            variant = next((v for v in order if v in variants), None)
            if variant is None:
                continue
            calls = [{"name": c["name"], "arguments": c.get("arguments")} for c in variants[variant]["tool_calls"]]
            handle.write(
                json.dumps({"task_id": task_id, "tool_calls": calls, "content": None}, ensure_ascii=False) + "\n"
            )
            chosen[task_id] = variant
    return chosen
