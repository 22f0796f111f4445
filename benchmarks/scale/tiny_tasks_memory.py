"""Peak memory of ``toolchoice validate`` on a suite of many tiny tasks, and of ``toolchoice ingest otel`` on a
pretty-printed export of many spans (issue 29: a million tiny tasks; an export read whole).

Each command runs as its own process; its peak resident set (``ru_maxrss`` of the finished child, the figure
``/usr/bin/time -v`` prints as "Maximum resident set size") is read after it exits. Sizes grow by 10x so the
growth per task shows: a reader holding everything twice, or a quadratic step, shows as a growing figure per task.
The suite is the demo's catalog with N one-message tasks of varied tools and expectations, written at run time.

    python benchmarks/scale/tiny_tasks_memory.py --tasks 10000 100000 1000000 --spans 10000 100000

Results: ``benchmarks/results/tiny_tasks_memory.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "suites" / "coding_agent"
TOOLCHOICE = Path(sys.executable).parent / "toolchoice"
RESULTS = ROOT / "benchmarks" / "results" / "tiny_tasks_memory.json"

# (tool, request, expected arguments): varied so matching and validation do real work on every line.
SHAPES = [
    ("Read", "show me src/mod{n}.py", {"file_path": {"regex": r"src/mod{n}\.py$"}}),
    ("Bash", "run the tests in tests/t{n}", {"command": {"regex": "pytest"}}),
    ("Grep", "find where handler_{n} is defined", {"pattern": {"regex": "handler_{n}"}}),
    ("Glob", "list the yaml files under conf{n}", {"pattern": {"any_of": ["**/*.yaml", "conf{n}/*.yaml"]}}),
    (None, "thanks, that's all for item {n}", {}),
]


def write_suite(data_dir: Path, n_tasks: int) -> int:
    """``<data_dir>/suites/tiny``: the demo catalog and ``n_tasks`` tasks; returns the tasks file's bytes."""
    suite = data_dir / "suites" / "tiny"
    suite.mkdir(parents=True)
    shutil.copy(DEMO / "catalog.yaml", suite / "catalog.yaml")
    (suite / "suite.yaml").write_text(
        "name: tiny\ndescription: many tiny tasks\ncatalog: catalog.yaml\ntasks: tasks.jsonl\nmatch_profile: key_args\n"
    )
    with (suite / "tasks.jsonl").open("w", encoding="utf-8") as out:
        for n in range(n_tasks):
            tool, request, arguments = SHAPES[n % len(SHAPES)]
            expected = {"tool": tool, "arguments": json.loads(json.dumps(arguments).replace("{n}", str(n)))}
            task = {"id": f"t{n:07d}", "messages": [{"role": "user", "content": request.format(n=n)}]}
            out.write(json.dumps({**task, "expected": expected if tool else {"tool": None}}) + "\n")
    return (suite / "tasks.jsonl").stat().st_size


def write_pretty_export(path: Path, n_spans: int) -> int:
    """One pretty-printed OTLP trace export of ``n_spans`` chat spans (GenAI attributes, one tool call each)."""
    with path.open("w", encoding="utf-8") as out:
        out.write('{\n  "resourceSpans": [\n    {\n      "resource": {"attributes": []},\n')
        out.write('      "scopeSpans": [\n        {\n          "scope": {"name": "bench"},\n          "spans": [\n')
        for n in range(n_spans):
            messages = [{"role": "user", "parts": [{"type": "text", "content": f"show me src/mod{n}.py"}]}]
            output = [
                {
                    "role": "assistant",
                    "parts": [{"type": "tool_call", "name": "Read", "arguments": {"file_path": f"src/mod{n}.py"}}],
                }
            ]
            span = {
                "traceId": f"{n:032x}",
                "spanId": f"{n:016x}",
                "name": "chat m",
                "startTimeUnixNano": str(1_700_000_000_000_000_000 + n),
                "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                    {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
                    {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(messages)}},
                    {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(output)}},
                ],
            }
            text = json.dumps(span, indent=2)
            out.write(("," if n else "") + "\n".join("            " + line for line in text.splitlines()) + "\n")
        out.write("          ]\n        }\n      ]\n    }\n  ]\n}\n")
    return path.stat().st_size


def measured(command: list[str], log: Path) -> dict:
    """Run ``command`` as a child (its output to ``log``); its exit code, wall and CPU seconds and its own peak
    RSS in MiB (``wait4``'s usage of that child alone)."""
    started = time.monotonic()
    pid = os.posix_spawn(
        command[0],
        command,
        {**os.environ, "LITELLM_OFFLINE_MODE": "true"},
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 1, str(log), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
            (os.POSIX_SPAWN_DUP2, 1, 2),
        ],
    )
    _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - started
    if status:
        print(log.read_text()[-2000:], file=sys.stderr)
    return {
        "exit_code": os.waitstatus_to_exitcode(status),
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--spans", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for n_tasks in args.tasks:
            data_dir = Path(scratch) / f"tasks{n_tasks}"
            size = write_suite(data_dir, n_tasks)
            command = [str(TOOLCHOICE), "validate", "--data-dir", str(data_dir), "--suite", "tiny"]
            figures = measured(command, Path(scratch) / "out.log")
            rows.append({"command": "validate", "tasks": n_tasks, "input_mib": round(size / 2**20, 1), **figures})
            print(json.dumps(rows[-1]), flush=True)
            shutil.rmtree(data_dir)
        for n_spans in args.spans:
            export = Path(scratch) / f"spans{n_spans}.json"
            size = write_pretty_export(export, n_spans)
            data_dir = Path(scratch) / f"ingest{n_spans}"
            command = [str(TOOLCHOICE), "ingest", "otel", str(export), "--data-dir", str(data_dir), "--suite", "s"]
            figures = measured([*command, "--catalog", str(DEMO / "catalog.yaml")], Path(scratch) / "out.log")
            rows.append(
                {
                    "command": "ingest otel (pretty-printed)",
                    "spans": n_spans,
                    "input_mib": round(size / 2**20, 1),
                    **figures,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
            export.unlink()
            shutil.rmtree(data_dir, ignore_errors=True)
    args.out.write_text(json.dumps({"command": " ".join(sys.argv), "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
