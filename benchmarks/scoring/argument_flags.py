"""What checking every call's arguments against its tool's schema costs: ``agent_calls`` rows and task scores of a
release of the demo suite (issue 29: ``arguments_valid`` means schema-valid).

Builds ``--repeats`` samples of every demo task for two models; each first step calls the task's expected tool
(or ``Read`` where none is expected) with arguments drawn from five variants (every required argument filled,
or one dropped, a wrong type, an unknown argument), then builds the
``agent_calls`` table and the task scores, the two places the schema flags are set. Run it whole, under the
code to compare (``PYTHONPATH=<checkout>``), with a process timer::

    PYTHONPATH=. python benchmarks/scoring/argument_flags.py --repeats 100

Prints one JSON line: episodes, calls flagged per kind, and the seconds of the two steps (in-process figures
are for orientation; quote whole-process CPU from an outside timer).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from pathlib import Path

from toolchoice_pipeline.records.calls import Reply, make_call
from toolchoice_pipeline.records.episodes import Episode, StepRecord
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.warehouse_tables import agent_calls_table
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline_tests.scoring_reference import score_episodes

DATA = Path(__file__).resolve().parents[2] / "data"


_FILLERS = {"string": "x", "integer": 1, "number": 1.5, "boolean": True, "array": [], "object": {}}


def _arguments(task, tools: dict, rng: random.Random) -> tuple[str, dict]:
    """A call to the task's expected tool (``Read`` where none is expected): every required argument filled with
    a value of its type, the expectation's plain values over them, then one of five variants (as is, twice
    as often; a required argument dropped; a string for a number; an unknown argument)."""
    tool = task.expected.tool if task.expected and task.expected.tool else "Read"
    schema = tools[tool].parameters
    properties = schema.get("properties") or {}
    arguments = {name: _FILLERS.get(properties.get(name, {}).get("type"), "x") for name in schema.get("required", [])}
    if task.expected and task.expected.tool == tool:
        arguments.update({k: v for k, v in task.expected.arguments.items() if not isinstance(v, dict)})
    variant = rng.randrange(6)
    if variant == 1 and arguments:
        arguments.pop(next(iter(arguments)))
    elif variant == 2:
        arguments[next(iter(properties), "limit")] = 10
    elif variant == 3:
        arguments["verbose_mode"] = True
    return tool, arguments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=100, help="samples per task and model")
    args = parser.parse_args()
    suite = load_suite(DATA, "coding_agent")
    rng = random.Random(7)
    tools = {tool.name: tool for tool in suite.catalog}
    episodes = []
    for model in ("local/a", "local/b"):
        for task in suite.tasks:
            for sample in range(args.repeats):
                tool, arguments = _arguments(task, tools, rng)
                reply = Reply(calls=[make_call(tool, arguments)])
                episodes.append(
                    Episode(model=model, task_id=task.id, sample=sample, steps=[StepRecord(step=0, reply=reply)])
                )
    lineage = Lineage(release_id="bench", suite=suite.name, catalog_version=suite.catalog_version, run_id="bench")
    started = time.perf_counter()
    table = agent_calls_table(episodes, lineage, suite)
    rows_s = time.perf_counter() - started
    started = time.perf_counter()
    scores = score_episodes(suite, episodes)
    scores_s = time.perf_counter() - started
    flags = Counter(flag for row in table.column("flags").to_pylist() for flag in row)
    print(
        json.dumps(
            {
                "episodes": len(episodes),
                "arguments_valid": sum(bool(v) for v in table.column("arguments_valid").to_pylist()),
                "flags": dict(sorted(flags.items())),
                "agent_calls_s": round(rows_s, 3),
                "score_episodes_s": round(scores_s, 3),
                "task_scores": len(scores),
            }
        )
    )


if __name__ == "__main__":
    main()
