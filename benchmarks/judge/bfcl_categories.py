"""The offline judge ``local/catalog-judge`` on every BFCL category: right and wrong steps built from BFCL's answers.

Run from the repo root (a few minutes on the full BFCL data; run it alone, the machine has 2 shared cores)::

    python benchmarks/judge/bfcl_categories.py [--bfcl-dir DIR ...] [--out FILE]

``--bfcl-dir`` (repeatable) names directories holding ``BFCL_v4_<category>.json`` and
``possible_answer/BFCL_v4_<category>.json`` (BFCL's layout); a category found in several is taken from the last.
The default is the project's samples (``toolchoice_pipeline_tests/data/bfcl`` and its ``more/``). BFCL's full
data ships in the ``bfcl-eval`` package on PyPI; read it without installing and without committing it::

    pip download --no-deps bfcl-eval -d /tmp/bfcl && unzip -q /tmp/bfcl/bfcl_eval-*.whl -d /tmp/bfcl/x
    python benchmarks/judge/bfcl_categories.py --bfcl-dir /tmp/bfcl/x/bfcl_eval/data

Every category ``import_bfcl`` takes is measured (the Java/JavaScript and multi-turn ones it refuses are listed
as skipped). The reference is the truth of the replay, built from the possible answers; the judge never sees
them (each replay is graded from its judge prompt, :func:`agreement.grade`, as the provider does):

- ``gold`` (right): one call per ground-truth call, each parameter given its first acceptable value that its
  schema accepts (a parameter with none, whose alternatives include ``""`` or ``None``, BFCL's marks for "may
  be left out", is left out). A task whose gold step still fails the catalog's schema (BFCL's answer leaves
  out a required parameter) is not replayed (``gold_schema_invalid`` lists them): the rubric calls a call the
  tool would refuse incorrect, whatever BFCL's checker says;
- ``gold_with_distractor`` (right): the same step, with the catalog grown by a function of a distant task (the
  first with a function of another name from half the category away: neighbouring live tasks share an API, so
  a neighbour's function may serve the request as well, and the step would no longer be known right);
- ``missing_call`` (wrong), when the answer has two or more calls: the gold step without its last call;
- ``swapped_tool`` (wrong): with the distractor in the catalog, the last gold call replaced by a call of the
  distractor with that other task's own gold arguments;
- ``wrong_function`` (wrong), when the catalog has a function the answer does not call: the last gold call
  replaced by a schema-valid call of that function (arguments of the same name kept, other required ones
  filled with a value of their type);
- irrelevance categories: ``no_call`` (right) and ``spurious_call`` (wrong: a schema-valid call of the first
  function); relevance: ``no_call`` (wrong: a tool was called for).

Per category: accuracy and Cohen's kappa of the verdict against the truth, the detection rate (wrong steps
judged incorrect) and the false-alarm rate (right steps judged incorrect); abstentions (invalid votes) are
counted apart and left out of the agreement, as in ``step_replays.py``.

Writes ``benchmarks/results/judge_bfcl_categories.json`` unless ``--out`` says otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import jsonschema

sys.path.insert(0, str(Path(__file__).resolve().parent))

# agreement.py sets the offline environment and the import path on import
from agreement import REPO, grade  # noqa: E402
from step_replays import figures, judged, reply_of  # noqa: E402

from toolchoice_pipeline.ingest.bfcl import _category_problem, import_bfcl  # noqa: E402
from toolchoice_pipeline.suites.catalog import ToolDefinition  # noqa: E402
from toolchoice_pipeline.suites.suite import load_suite  # noqa: E402
from toolchoice_pipeline.util.errors import InputError  # noqa: E402

SAMPLES = REPO / "toolchoice_pipeline_tests" / "data" / "bfcl"
RESULTS = REPO / "benchmarks" / "results" / "judge_bfcl_categories.json"
OMIT = object()
# Developed on (the rules were built and revised looking at their misjudged replays); the others are held out
# (only their figures were read, never their replays).
DEVELOPMENT = ("simple_python", "multiple", "parallel", "irrelevance", "live_simple", "live_parallel_multiple")


def gold_value(alternatives: Any) -> Any:
    """The first acceptable value of a BFCL possible-answer list, or OMIT when only ``""`` (leave out) is."""
    if not isinstance(alternatives, list):
        return concrete(alternatives)
    for alternative in alternatives:
        # "" means "may be left out" and None "may be given as None": a valid call leaves either out.
        if alternative == "" or alternative is None:
            continue
        return concrete(alternative)
    return OMIT


def concrete(value: Any) -> Any:
    if isinstance(value, dict):
        out = {key: gold_value(inner) for key, inner in value.items()}
        return {key: inner for key, inner in out.items() if inner is not OMIT}
    if isinstance(value, list):
        return [concrete(item) for item in value]
    return value


def gold_calls(answer: dict[str, Any], catalog: list[ToolDefinition] = ()) -> list[dict[str, Any]]:
    """One call per ground-truth call of a BFCL answer line; a parameter gets its first acceptable value that
    the parameter's schema in ``catalog`` accepts (BFCL also lists defaults outside an enum: ``["", "N/A"]``),
    else it is left out when BFCL allows that, else its first value."""
    tools = {tool.name: tool for tool in catalog}
    calls = []
    for call in answer["ground_truth"]:
        ((name, parameters),) = call.items()
        properties = (tools[name].parameters.get("properties") or {}) if name in tools else {}
        arguments = {}
        for parameter, alternatives in parameters.items():
            value = gold_value(alternatives)
            schema = properties.get(parameter)
            if isinstance(alternatives, list) and schema is not None:
                fits = [a for a in alternatives if a not in ("", None) and _fits(concrete(a), schema)]
                if fits:
                    value = concrete(fits[0])
                elif "" in alternatives or None in alternatives:
                    value = OMIT
            if value is not OMIT:
                arguments[parameter] = value
        calls.append({"name": name, "arguments": arguments})
    return calls


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    return jsonschema.validators.validator_for(schema)(schema).is_valid(value)


def schema_valid(calls: list[dict[str, Any]], catalog: list[ToolDefinition]) -> bool:
    """Whether every call names a catalog tool and its arguments validate against that tool's schema."""
    tools = {tool.name: tool for tool in catalog}
    return all(c["name"] in tools and _fits(c["arguments"], tools[c["name"]].parameters) for c in calls)


def typed_value(schema: dict[str, Any], examples: list[Any]) -> Any:
    """A value of the schema's type: its first enum value, else the first example of that type, else a default."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    python = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "array": list, "object": dict}
    for example in examples:
        if isinstance(example, python.get(kind, object)) and not (kind != "boolean" and isinstance(example, bool)):
            return example
    defaults = {"string": "value", "integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}
    return defaults.get(kind, "value")


def valid_call(tool: ToolDefinition, like: dict[str, Any] | None) -> dict[str, Any]:
    """A schema-valid call of ``tool``: the arguments of ``like`` its schema declares, each other required one
    filled with a value of its type (taken from ``like``'s values where one has that type)."""
    properties = tool.parameters.get("properties") or {}
    given = dict((like or {}).get("arguments") or {})
    arguments = {k: v for k, v in given.items() if k in properties}
    for name in tool.parameters.get("required") or []:
        if name not in arguments:
            arguments[name] = typed_value(properties.get(name) or {}, list(given.values()))
    return {"name": tool.name, "arguments": arguments}


def read_lines(path: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            out[entry["id"]] = entry
    return out


def find_categories(directories: list[Path]) -> dict[str, tuple[Path, Path | None]]:
    found: dict[str, tuple[Path, Path | None]] = {}
    for directory in directories:
        for questions in sorted(directory.glob("BFCL_v4_*.json")):
            category = questions.stem.removeprefix("BFCL_v4_")
            answers = directory / "possible_answer" / questions.name
            found[category] = (questions, answers if answers.exists() else None)
    return found


def measure(category: str, questions: Path, answers: Path | None, data: Path) -> tuple[dict[str, Any], dict[str, str]]:
    import_bfcl(questions, answers, f"bfcl_{category}", data, force=True)
    suite = load_suite(data, f"bfcl_{category}")
    order = list(suite.tasks)
    lines = read_lines(answers) if answers else {}
    golds = {t.id: gold_calls(lines[t.id], suite.task_catalog(t)) for t in order if t.id in lines}
    rows: list[tuple[str, bool | None, bool]] = []
    misjudged: dict[str, str] = {}

    def run(task, variant: str, calls: list[dict[str, Any]], catalog: list[ToolDefinition], truth: bool) -> None:
        found = grade(task.message_dicts(), catalog, reply_of(calls))
        verdict = judged(found)
        rows.append((variant, verdict, truth))
        if verdict is not None and verdict != truth:
            misjudged[f"{task.id}/{variant}"] = f"{found.verdict}: {found.conclusion[:240]}"

    no_catalog = 0
    gold_invalid: list[str] = []
    for index, task in enumerate(order):
        catalog = suite.task_catalog(task)
        if not catalog:
            no_catalog += 1  # nothing to judge against: the judge input is refused (JudgeInputError)
            continue
        names = {tool.name for tool in catalog}
        if "irrelevance" in category:
            run(task, "no_call", [], catalog, True)
            if catalog:
                run(task, "spurious_call", [valid_call(catalog[0], None)], catalog, False)
            continue
        if task.id not in golds:
            run(task, "no_call", [], catalog, False)
            continue
        gold = golds[task.id]
        if not schema_valid(gold, catalog):
            # BFCL's answer itself fails the catalog's schema (a required parameter its answer leaves out):
            # no right step to replay, as the rubric calls a call the tool would refuse incorrect.
            gold_invalid.append(task.id)
            continue
        run(task, "gold", gold, catalog, True)
        if len(gold) >= 2:
            run(task, "missing_call", gold[:-1], catalog, False)
        other = next(
            (
                (tool, golds.get(o.id))
                for step in range(len(order) // 2, len(order) // 2 + len(order))
                for o in [order[(index + step) % len(order)]]
                for tool in suite.task_catalog(o)[:1]
                if tool.name not in names and golds.get(o.id)
            ),
            None,
        )
        if other is not None:
            tool, other_gold = other
            like = next((c for c in other_gold if c["name"] == tool.name), None)
            with_other = [*catalog, tool]
            run(task, "gold_with_distractor", gold, with_other, True)
            run(task, "swapped_tool", [*gold[:-1], valid_call(tool, like)], with_other, False)
        unused = [tool for tool in catalog if tool.name not in {c["name"] for c in gold}]
        if unused:
            run(task, "wrong_function", [*gold[:-1], valid_call(unused[0], gold[-1])], catalog, False)
    result = figures(rows)
    result["tasks"] = len(order)
    result["tasks_without_catalog"] = no_catalog
    result["gold_schema_invalid"] = gold_invalid
    return result, misjudged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bfcl-dir", type=Path, action="append", help="A directory in BFCL's data layout.")
    parser.add_argument("--out", type=Path, default=RESULTS, help="Where to write the JSON figures.")
    args = parser.parse_args()
    directories = args.bfcl_dir or [SAMPLES, SAMPLES / "more"]
    data = Path(tempfile.mkdtemp(prefix="toolchoice-bfcl-categories-")) / "data"
    data.mkdir(parents=True)
    (data / "toolchoice.yaml").write_text((REPO / "data" / "toolchoice.yaml").read_text(encoding="utf-8"))
    results: dict[str, Any] = {}
    examples: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    for category, (questions, answers) in sorted(find_categories(directories).items()):
        problem = _category_problem(category, answers is not None)
        if problem is not None:
            skipped[category] = problem
            continue
        try:
            results[category], examples[category] = measure(category, questions, answers, data)
        except InputError as exc:
            skipped[category] = str(exc)
            continue
        results[category]["split"] = "development" if category in DEVELOPMENT else "held_out"
    from toolchoice_pipeline.judge.prompt import RUBRIC_VERSION

    out = {
        "rubric_version": RUBRIC_VERSION,
        "sources": [str(d) for d in directories],
        **results,
        "skipped": skipped,
        "misjudged_examples": {k: dict(list(v.items())[:20]) for k, v in examples.items()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"rubric {RUBRIC_VERSION}")
    header = (
        f"{'category':24} {'split':12} {'n':>5} {'abst':>5} {'accuracy':>9} {'kappa':>7} {'detect':>7} {'false al':>9}"
    )
    print(header)
    for name, r in results.items():
        print(
            f"{name:24} {r['split']:12} {r['n']:>5} {r['abstained']:>5} {r['accuracy']:>9} {r['kappa']!s:>7} "
            f"{r['detection_rate']!s:>7} {r['false_alarm_rate']!s:>9}"
        )
        print("    " + ", ".join(f"{v}: {e['judged_correct']}/{e['n']}" for v, e in r["variants"].items()))
    for name, why in skipped.items():
        print(f"{name:24} skipped: {why[:100]}")
    print(f"-> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
