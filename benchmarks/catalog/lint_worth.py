"""What the catalog lint's pair warnings are worth: do the pairs it flags get confused by real models, and did it
foresee the pairs that do? On the demo suite and two degraded catalogs of it (``vague``: seven descriptions made
vaguer and overlapping; ``names``: the tools renamed, with two pairs of near-duplicate names).

    python benchmarks/catalog/lint_worth.py [--data-dir data] [--suite coding_agent] [--models M,...]

For each catalog: a copy of the data directory (suites and ``toolchoice.yaml``), ``toolchoice run --suite S
--no-judge --release x`` on it (the configured models: offline, the local baselines), then the confusions from the
warehouse with DuckDB: ``task_scores.first_tool`` against each task's expected first tool
(``expected.calls[0].tool``, else ``expected.tool``; ``any_call`` and unlabelled tasks left out), over pairs of two
catalog tools (no call and no call expected are not pairs). A pair is *confused* for a model when the model's
episodes that expected one chose the other, both directions added, reach ``k`` (k = 1 and k = 2 reported); for
"any model" when one model reaches it. The lint's flagged pairs are those of its ``similar_descriptions`` and
``similar_names`` warnings (reported apart: ``description_names_tool``, and ``all`` three). Precision = flagged pairs that are
confused / flagged pairs; recall = confused pairs flagged / confused pairs; ``base_rate`` = confused pairs / all
pairs, the precision of flagging pairs at random.

Also, on catalogs nobody here wrote: BFCL's ``multiple`` sample (200 tasks, each with its own catalog of 2-4
functions; ``toolchoice_pipeline_tests/data/bfcl``, imported with ``toolchoice import bfcl``). There a unit is a
task and one of the other tools of its catalog: *flagged* when the lint pairs it with the expected tool in that
catalog, *confused* when a model called it first. ``--no-bfcl`` leaves it out.
Writes ``benchmarks/results/catalog_lint_worth.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "benchmarks" / "results" / "catalog_lint_worth.json"

# Seven descriptions made vaguer, in overlapping words (Bash, Task and TodoWrite keep theirs).
VAGUE = {
    "Read": "Look at a file in the repository and get its contents.",
    "Write": "Put content into a file in the repository.",
    "Edit": "Make changes to the content of a file in the repository.",
    "Grep": "Search the repository's files for a pattern and report what matches.",
    "Glob": "Search the repository's files for a pattern and list what matches.",
    "WebSearch": "Look up information on the web.",
    "WebFetch": "Get information from the web.",
}
# Renamed as merged tool servers often name them, with two near-duplicate pairs (search_files / search_file,
# write_file / write_files); descriptions keep their words, other tools' names in them renamed too.
RENAMED = {
    "Read": "read_file",
    "Write": "write_file",
    "Edit": "write_files",
    "Grep": "search_files",
    "Glob": "search_file",
    "WebSearch": "web_search",
    "WebFetch": "web_fetch",
    "Bash": "run_command",
    "Task": "run_task",
    "TodoWrite": "todo_write",
}

CONFUSIONS_SQL = """
with tasks as (
    select id, coalesce(json_extract_string(expected, '$.calls[0].tool'), json_extract_string(expected, '$.tool'))
               as expected_tool,
           coalesce(json_extract(expected, '$.any_call')::boolean, false) as any_call,
           expected is null or json_type(expected) = 'NULL' as unlabelled
    from read_json(?, format = 'newline_delimited', columns = {'id': 'VARCHAR', 'expected': 'JSON'})
)
select s.model, t.expected_tool, s.first_tool, count(*) as n
from task_scores s join tasks t on t.id = s.task_id
where s.release_id = ? and not t.any_call and not t.unlabelled
  and t.expected_tool is not null and s.first_tool is not null and t.expected_tool <> s.first_tool
group by all
"""


def degrade(suite_dir: Path, variant: str) -> None:
    """Rewrite the suite's catalog (and for ``names`` its tasks) in place."""
    if variant == "demo":
        return
    catalog_path = suite_dir / "catalog.yaml"
    tools = yaml.safe_load(catalog_path.read_text(encoding="utf-8"))
    if variant == "vague":
        for tool in tools:
            tool["description"] = VAGUE.get(tool["name"], tool["description"])
    elif variant == "names":
        pattern = re.compile(r"\b(" + "|".join(sorted(RENAMED, key=len, reverse=True)) + r")\b")
        for tool in tools:
            tool["name"] = RENAMED[tool["name"]]
            tool["description"] = pattern.sub(lambda m: RENAMED[m.group(1)], tool["description"])
        lines = []
        for text in (suite_dir / "tasks.jsonl").read_text(encoding="utf-8").splitlines():
            if not text.strip():
                continue
            task = json.loads(text)
            expected = task.get("expected")
            if expected and expected.get("tool"):
                expected["tool"] = RENAMED[expected["tool"]]
            for call in (expected or {}).get("calls") or []:
                call["tool"] = RENAMED[call["tool"]]
            if task.get("tool_results"):
                task["tool_results"] = {RENAMED.get(k, k): v for k, v in task["tool_results"].items()}
            lines.append(json.dumps(task, ensure_ascii=False))
        (suite_dir / "tasks.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        raise ValueError(variant)
    catalog_path.write_text(yaml.safe_dump(tools, sort_keys=False, allow_unicode=True, width=110), encoding="utf-8")


def run_release(data_dir: Path, suite: str, models: str | None) -> None:
    command = [
        sys.executable,
        "-c",
        "from toolchoice_pipeline.cli import main; main()",
        "run",
        "--data-dir",
        str(data_dir),
        "--suite",
        suite,
        "--no-judge",
        "--release",
        "x",
    ]
    if models:
        command += ["--models", models]
    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):  # 1: the gate failed, the scores are there all the same
        raise SystemExit(f"toolchoice run failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")


def confusions(data_dir: Path, tasks_file: Path) -> list[tuple[str, str, str, int]]:
    import duckdb

    with duckdb.connect(str(data_dir / "warehouse" / "toolchoice.duckdb"), read_only=True) as con:
        return con.execute(CONFUSIONS_SQL, [str(tasks_file), "x"]).fetchall()


def scores(flagged: set[frozenset], confused: set[frozenset], all_pairs: int) -> dict:
    hit = flagged & confused
    return {
        "flagged": len(flagged),
        "confused": len(confused),
        "flagged_and_confused": len(hit),
        "precision": round(len(hit) / len(flagged), 3) if flagged else None,
        "recall": round(len(hit) / len(confused), 3) if confused else None,
        "base_rate": round(len(confused) / all_pairs, 3) if all_pairs else None,
    }


def measure(source: Path, suite: str, variant: str, models: str | None) -> dict:
    from toolchoice_pipeline.suites.lint import lint_suite
    from toolchoice_pipeline.suites.suite import load_suite

    with tempfile.TemporaryDirectory(prefix=f"lint-worth-{variant}-") as tmp:
        data_dir = Path(tmp)
        shutil.copytree(source / "suites" / suite, data_dir / "suites" / suite)
        shutil.copy(source / "toolchoice.yaml", data_dir / "toolchoice.yaml")
        degrade(data_dir / "suites" / suite, variant)
        loaded = load_suite(data_dir, suite)
        report = lint_suite(loaded)
        run_release(data_dir, suite, models)
        rows = confusions(data_dir, loaded.tasks_file)
    names = {tool.name for tool in loaded.catalog}
    all_pairs = len(names) * (len(names) - 1) // 2
    groups = {
        "similarity": {"similar_descriptions", "similar_names"},
        "similar_descriptions": {"similar_descriptions"},
        "similar_names": {"similar_names"},
        "description_names_tool": {"description_names_tool"},
        "all": {"similar_descriptions", "similar_names", "description_names_tool"},
    }
    flagged = {
        group: {
            frozenset((w.tool, w.other_tool))
            for w in report.warnings
            if w.kind in kinds and w.other_tool in names and w.other_tool != w.tool
        }
        for group, kinds in groups.items()
    }
    per_model: dict[str, dict[frozenset, int]] = {}
    for model, expected, chosen, n in rows:
        if expected in names and chosen in names:
            pair = frozenset((expected, chosen))
            counts = per_model.setdefault(model, {})
            counts[pair] = counts.get(pair, 0) + n
    result: dict = {
        "tools": len(names),
        "pairs": all_pairs,
        "lint_counts": report.counts,
        "flagged_pairs": {g: sorted("/".join(sorted(p)) for p in f) for g, f in flagged.items()},
        "confusions": {
            model: {"/".join(sorted(p)): n for p, n in sorted(counts.items(), key=lambda x: -x[1])}
            for model, counts in sorted(per_model.items())
        },
        "scores": {},
    }
    for k in (1, 2):
        scopes = {model: {p for p, n in counts.items() if n >= k} for model, counts in per_model.items()}
        scopes["any model"] = set().union(*scopes.values()) if scopes else set()
        for scope, confused in scopes.items():
            for group, pairs in flagged.items():
                result["scores"].setdefault(f"k>={k}", {}).setdefault(scope, {})[group] = scores(
                    pairs, confused, all_pairs
                )
    return result


BFCL_SAMPLE = ROOT / "toolchoice_pipeline_tests" / "data" / "bfcl"


def toolchoice(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", "from toolchoice_pipeline.cli import main; main()", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=False)


def measure_bfcl(source: Path, models: str | None) -> dict:
    """Per (task, other tool of its catalog) on BFCL's ``multiple`` sample (see the module doc)."""
    import duckdb

    from toolchoice_pipeline.suites.lint import PAIR_KINDS, lint_catalog
    from toolchoice_pipeline.suites.lint_similarity import DescriptionSpace, stemmed_words
    from toolchoice_pipeline.suites.suite import load_suite

    with tempfile.TemporaryDirectory(prefix="lint-worth-bfcl-") as tmp:
        data_dir = Path(tmp)
        shutil.copy(source / "toolchoice.yaml", data_dir / "toolchoice.yaml")
        done = toolchoice(
            "import",
            "bfcl",
            str(BFCL_SAMPLE / "BFCL_v4_multiple.json"),
            str(BFCL_SAMPLE / "possible_answer" / "BFCL_v4_multiple.json"),
            "--suite",
            "bfcl_multiple",
            "--data-dir",
            str(data_dir),
        )
        if done.returncode != 0:
            raise SystemExit(f"toolchoice import bfcl failed:\n{done.stderr[-2000:]}")
        suite = load_suite(data_dir, "bfcl_multiple")
        run_release(data_dir, "bfcl_multiple", models)
        with duckdb.connect(str(data_dir / "warehouse" / "toolchoice.duckdb"), read_only=True) as con:
            rows = con.execute("select model, task_id, first_tool from task_scores where release_id = 'x'").fetchall()
    chosen: dict[str, set] = {}
    for _, task_id, first_tool in rows:
        chosen.setdefault(task_id, set()).add(first_tool)
    space = DescriptionSpace([stemmed_words(tool.description) for tool in suite.all_tools()])
    units = flagged = confused = both = 0
    for task in suite.tasks:
        expected = task.expected.tool if task.expected is not None else None
        if expected is None or not task.tools:
            continue
        paired = set()
        for warning in lint_catalog(task.tools, space=space):
            if warning.kind in PAIR_KINDS and expected in (warning.tool, warning.other_tool):
                paired.add(warning.other_tool if warning.tool == expected else warning.tool)
        for other in (tool.name for tool in task.tools if tool.name != expected):
            is_flagged, is_confused = other in paired, other in chosen.get(task.id, set())
            units += 1
            flagged += is_flagged
            confused += is_confused
            both += is_flagged and is_confused
    return {
        "tasks": len(suite.tasks),
        "units": units,
        "flagged": flagged,
        "confused": confused,
        "flagged_and_confused": both,
        "precision": round(both / flagged, 3) if flagged else None,
        "recall": round(both / confused, 3) if confused else None,
        "base_rate": round(confused / units, 3) if units else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data")
    parser.add_argument("--suite", default="coding_agent")
    parser.add_argument("--models", default=None, help="comma-separated; default: the run configuration's")
    parser.add_argument("--no-bfcl", action="store_true", help="leave out BFCL's multiple sample")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    result = {
        "suite": args.suite,
        "command": "python benchmarks/catalog/lint_worth.py",
        "catalogs": {variant: measure(args.data_dir, args.suite, variant, args.models) for variant in VARIANTS},
    }
    pooled: dict = {}
    for k in ("k>=1", "k>=2"):
        for group in ("similarity", "description_names_tool", "all"):
            totals = {"flagged": 0, "confused": 0, "flagged_and_confused": 0, "pairs": 0}
            for measured in result["catalogs"].values():
                entry = measured["scores"][k]["any model"][group]
                for key in ("flagged", "confused", "flagged_and_confused"):
                    totals[key] += entry[key]
                totals["pairs"] += measured["pairs"]
            totals["precision"] = (
                round(totals["flagged_and_confused"] / totals["flagged"], 3) if totals["flagged"] else None
            )
            totals["recall"] = (
                round(totals["flagged_and_confused"] / totals["confused"], 3) if totals["confused"] else None
            )
            totals["base_rate"] = round(totals["confused"] / totals["pairs"], 3)
            pooled.setdefault(k, {})[group] = totals
    result["pooled_any_model"] = pooled
    if not args.no_bfcl:
        result["bfcl_multiple"] = measure_bfcl(args.data_dir, args.models)
        print(f"bfcl multiple: {result['bfcl_multiple']}")
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for variant, measured in result["catalogs"].items():
        for k in ("k>=1", "k>=2"):
            entry = measured["scores"][k]["any model"]["similarity"]
            print(
                f"{variant:6} {k}: flagged {entry['flagged']}, confused {entry['confused']} of {measured['pairs']} "
                f"pairs, precision {entry['precision']}, recall {entry['recall']}, base rate {entry['base_rate']}"
            )
    print(f"wrote {RESULT.relative_to(ROOT)}")
    return 0


VARIANTS = ("demo", "vague", "names")

if __name__ == "__main__":
    raise SystemExit(main())
