"""A corpus of hostile inputs, each given to the command that reads it: every one exits with the expected code,
prints only ``error:`` lines on stderr (one line per problem, never a traceback), names what was wrong, and
stores nothing (the data directory's files are unchanged; no suite, release or output file appears). A usage
error the command-line parser catches (a directory where a file is expected) is click's usual form: the usage
line, a hint and one ``Error:`` line.

The commands run in-process through the console script's entry (``run_guarded``, as ``toolchoice`` does),
which keeps the 60+ cases within a few seconds each on a shared machine; ``test_hostile_exit_codes`` covers the
same kinds of input through the installed script in subprocesses.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from toolchoice_pipeline.cli import cli
from toolchoice_pipeline.cli.common import run_guarded
from toolchoice_pipeline_tests.conftest import DATA
from toolchoice_pipeline_tests.release_helpers import write_scored

SUITE = "coding_agent"
DEEP = 100_000


@dataclass
class Case:
    name: str
    command: list[str]  # "{d}" is the data dir, "{t}" the case's scratch dir
    expect: str  # a part of the error line naming the problem
    setup: Callable[[Path, Path], None] = lambda data, tmp: None
    code: int = 2
    absent: list[str] = field(default_factory=list)  # paths ("{d}", "{t}") that must not exist afterwards


# --- helpers that plant the hostile input --------------------------------------------------------------------


def _suite_dir(data: Path) -> Path:
    return data / "suites" / SUITE


def tasks_line(line: str) -> Callable[[Path, Path], None]:
    def setup(data: Path, tmp: Path) -> None:
        _suite_dir(data).joinpath("tasks.jsonl").write_text(line + "\n", encoding="utf-8")

    return setup


def tasks_bytes(raw: bytes) -> Callable[[Path, Path], None]:
    def setup(data: Path, tmp: Path) -> None:
        _suite_dir(data).joinpath("tasks.jsonl").write_bytes(raw)

    return setup


def task(arguments: dict) -> str:
    return json.dumps(
        {
            "id": "t1",
            "messages": [{"role": "user", "content": "grep for x"}],
            "expected": {"tool": "Grep", "arguments": arguments},
        }
    )


def extra_tool(**tool) -> Callable[[Path, Path], None]:
    def setup(data: Path, tmp: Path) -> None:
        path = _suite_dir(data) / "catalog.yaml"
        tools = yaml.safe_load(path.read_text(encoding="utf-8"))
        tools.append(
            {
                "name": "Extra",
                "description": "An extra tool.",
                "parameters": {"type": "object", "properties": {}},
                **tool,
            }
        )
        path.write_text(yaml.safe_dump(tools, sort_keys=False, allow_unicode=False), encoding="utf-8")

    return setup


def catalog_text(text: str) -> Callable[[Path, Path], None]:
    def setup(data: Path, tmp: Path) -> None:
        (_suite_dir(data) / "catalog.yaml").write_text(text, encoding="utf-8")

    return setup


def suite_yaml(text: str) -> Callable[[Path, Path], None]:
    def setup(data: Path, tmp: Path) -> None:
        (_suite_dir(data) / "suite.yaml").write_text(text, encoding="utf-8")

    return setup


def config(text: str) -> Callable[[Path, Path], None]:
    def setup(data: Path, tmp: Path) -> None:
        (data / "toolchoice.yaml").write_text(text, encoding="utf-8")

    return setup


def model_params(params: dict) -> Callable[[Path, Path], None]:
    return config(yaml.safe_dump({"models": [{"model": "openai/gpt-4o-mini", "params": params}]}))


def scratch(name: str, content: str | bytes | None = None, kind: str = "file") -> Callable[[Path, Path], None]:
    def setup(data: Path, tmp: Path) -> None:
        path = tmp / name
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "dir":
            path.mkdir()
        elif isinstance(content, bytes):
            path.write_bytes(content)
        elif content is not None:
            path.write_text(content, encoding="utf-8")

    return setup


def both(*setups: Callable[[Path, Path], None]) -> Callable[[Path, Path], None]:
    def setup(data: Path, tmp: Path) -> None:
        for one in setups:
            one(data, tmp)

    return setup


def stored_release(data: Path, tmp: Path) -> None:
    """A finished release r1 as the store holds it (its ``scores.json``): the output paths below are refused
    before anything of it is read, so it is written straight, not published."""
    write_scored(data, "r1")


SECRET = "Bearer " + "corpus" + "Tok7" * 6
VALIDATE = ["validate", "--suite", SUITE, "--data-dir", "{d}"]
SESSION = '{"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "hi"}}\n'
CATALOG = str(DATA / "suites" / SUITE / "catalog.yaml")


def ingest(source: str, file: str, *extra: str) -> list[str]:
    return ["ingest", source, file, "--suite", "hostile", "--catalog", CATALOG, *extra, "--data-dir", "{d}"]


def otel_attr(value: str) -> str:
    return (
        '{"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [{"key": "gen_ai.operation.name", '
        '"value": {"stringValue": "chat"}}, {"key": "x", "value": ' + value + "}]}]}]}]}"
    )


CASES = [
    # ---- tasks.jsonl ----
    Case("tasks-nested-100k", VALIDATE, "nested too deeply", tasks_line("[" * DEEP + "]" * DEEP)),
    Case("tasks-nan", VALIDATE, "NaN", tasks_line('{"id": NaN}')),
    Case("tasks-duplicate-key", VALIDATE, "duplicate key", tasks_line('{"id": "a", "id": "b"}')),
    Case("tasks-lone-surrogate", VALIDATE, "surrogate", tasks_line('{"id": "\\ud800"}')),
    Case("tasks-huge-integer", VALIDATE, "digits", tasks_line('{"id": ' + "9" * 5000 + "}")),
    Case("tasks-not-utf8", VALIDATE, "not UTF-8", tasks_bytes(b'{"id": "\xff"}\n')),
    Case("tasks-array-line", VALIDATE, "must be a JSON object", tasks_line("[1, 2]")),
    Case("tasks-truncated", VALIDATE, "bad JSON", tasks_line('{"id": "t1", "messages": [')),
    Case("tasks-nul-bytes", VALIDATE, "bad JSON", tasks_bytes(b"\x00" * 64 + b"\n")),
    Case("matcher-lookaround", VALIDATE, "does not compile", tasks_line(task({"pattern": {"regex": "(?<=d)x"}}))),
    Case("matcher-backreference", VALIDATE, "does not compile", tasks_line(task({"pattern": {"regex": "(a)\\1"}}))),
    Case("matcher-unbalanced", VALIDATE, "does not compile", tasks_line(task({"pattern": {"regex": "(("}}))),
    Case("matcher-huge-repeat", VALIDATE, "does not compile", tasks_line(task({"pattern": {"regex": "a{5000}"}}))),
    Case("matcher-too-long", VALIDATE, "longer than", tasks_line(task({"pattern": {"regex": "a" * 20_000}}))),
    Case("matcher-two-keys", VALIDATE, "exactly one of", tasks_line(task({"pattern": {"regex": "a", "value": 1}}))),
    Case("matcher-regex-not-string", VALIDATE, "must be a string", tasks_line(task({"pattern": {"regex": 5}}))),
    Case(
        "task-tool-with-newline",
        VALIDATE,
        "control characters",
        tasks_line(
            json.dumps(
                {
                    "id": "t1",
                    "messages": [{"role": "user", "content": "x"}],
                    "expected": {"tool": "Extra"},
                    "tools": [{"name": "Ex\ntra", "parameters": {"type": "object"}}],
                }
            )
        ),
    ),
    # ---- catalog.yaml ----
    Case(
        "catalog-remote-ref",
        VALIDATE,
        "points outside the schema",
        extra_tool(parameters={"type": "object", "properties": {"a": {"$ref": "https://example.invalid/a.json"}}}),
    ),
    Case(
        "catalog-relative-file-ref",
        VALIDATE,
        "points outside the schema",
        extra_tool(parameters={"type": "object", "properties": {"a": {"$ref": "other.json#/x"}}}),
    ),
    Case(
        "catalog-circular-ref",
        VALIDATE,
        "is circular",
        extra_tool(
            parameters={
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/x"}},
                "$defs": {"x": {"$ref": "#/$defs/x"}},
            }
        ),
    ),
    Case("catalog-root-self-ref", VALIDATE, "is circular", extra_tool(parameters={"type": "object", "$ref": "#"})),
    Case(
        "catalog-dangling-ref",
        VALIDATE,
        "dangling",
        extra_tool(parameters={"type": "object", "properties": {"a": {"$ref": "#/$defs/none"}}}),
    ),
    Case(
        "catalog-pattern-lookahead",
        VALIDATE,
        "does not compile",
        extra_tool(parameters={"type": "object", "properties": {"a": {"type": "string", "pattern": "^(?!x)"}}}),
    ),
    Case(
        "catalog-pattern-properties-backref",
        VALIDATE,
        "does not compile",
        extra_tool(parameters={"type": "object", "patternProperties": {"(a)\\1": {}}}),
    ),
    Case("catalog-name-newline", VALIDATE, "control characters", extra_tool(name="Ex\ntra")),
    Case("catalog-name-nul", VALIDATE, "control characters", extra_tool(name="Extra\x00")),
    Case("catalog-name-line-separator", VALIDATE, "control characters", extra_tool(name="Ex\u2028tra")),
    Case("catalog-name-escape", VALIDATE, "control characters", extra_tool(name="\x1b[31mExtra")),
    Case(
        "catalog-billion-laughs",
        VALIDATE,
        "aliases",
        catalog_text(
            "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
        ),
    ),
    Case("catalog-deep-yaml", VALIDATE, "nested too deeply", catalog_text("[" * DEEP + "]" * DEEP)),
    Case(
        "catalog-duplicate-key",
        VALIDATE,
        "duplicate key",
        catalog_text("- name: A\n  name: B\n  description: x\n  parameters: {type: object}\n"),
    ),
    Case(
        "catalog-json-duplicate-key",
        VALIDATE,
        "duplicate key",
        catalog_text('[{"name": "A", "name": "B", "description": "x", "parameters": {"type": "object"}}]'),
    ),
    Case("catalog-tab-indent", VALIDATE, "bad YAML", catalog_text("- name: A\n\tdescription: x\n")),
    Case("catalog-not-a-list", VALIDATE, "must be a YAML list", catalog_text("name: A\n")),
    Case(
        "catalog-not-utf8",
        VALIDATE,
        "not UTF-8",
        lambda data, tmp: (_suite_dir(data) / "catalog.yaml").write_bytes(b"- name: \xff\n"),
    ),
    Case("catalog-parameters-not-schema", VALIDATE, "JSON Schema", extra_tool(parameters={"type": "strng"})),
    # ---- suite.yaml ----
    Case(
        "suite-catalog-outside",
        VALIDATE,
        "points outside the suite directory",
        suite_yaml("name: coding_agent\ncatalog: ../../../etc/passwd\n"),
    ),
    Case(
        "suite-tasks-absolute",
        VALIDATE,
        "points outside the suite directory",
        suite_yaml("name: coding_agent\ntasks: /etc/hostname\n"),
    ),
    Case(
        "suite-live-catalog-outside",
        VALIDATE,
        "points outside the suite directory",
        suite_yaml("name: coding_agent\nlive_catalogs: [../../x.json]\n"),
    ),
    Case("suite-catalog-is-device", VALIDATE, "points outside", suite_yaml("name: coding_agent\ncatalog: /dev/zero\n")),
    Case("suite-name-mismatch-type", VALIDATE, "suite.yaml", suite_yaml("name: [a, b]\n")),
    # ---- toolchoice.yaml ----
    Case("config-polls-string", VALIDATE, "judge.polls", config("judge:\n  polls: '3'\n")),
    Case("config-max-steps-float", VALIDATE, "max_steps", config("max_steps: 2.0\n")),
    Case("config-bool-as-int", VALIDATE, "retries.max_attempts", config("retries:\n  max_attempts: true\n")),
    Case(
        "config-retry-bounds",
        VALIDATE,
        "initial_wait_s (100.0) is larger",
        config("retries:\n  initial_wait_s: 100\n  max_wait_s: 0.001\n"),
    ),
    Case(
        "config-cache-outside",
        VALIDATE,
        "points outside the data directory",
        config("cache:\n  path: ../../x.sqlite\n"),
    ),
    Case(
        "config-cache-absolute",
        VALIDATE,
        "points outside the data directory",
        config("cache:\n  path: /tmp/x.sqlite\n"),
    ),
    Case(
        "config-authorization-header",
        VALIDATE,
        "extra_headers.Authorization",
        model_params({"extra_headers": {"Authorization": SECRET}}),
    ),
    Case("config-nested-api-key", VALIDATE, "extra_body.api_key", model_params({"extra_body": {"api_key": "k" * 24}})),
    Case(
        "config-userinfo-api-base",
        VALIDATE,
        "params.api_base",
        model_params({"api_base": "https://bot:" + "Pw9" * 5 + "@llm.example.com/v1"}),
    ),
    Case("config-api-key", VALIDATE, "params.api_key", model_params({"api_key": "k" * 24})),
    Case("config-unknown-field", VALIDATE, "unknown field", config("modles: [local/bm25-router]\n")),
    # ---- ingest ----
    Case(
        "otel-deep-array",
        ingest("otel", "{t}/deep.json"),
        "nested too deeply",
        scratch("deep.json", '{"resourceSpans": ' + "[" * DEEP + "]" * DEEP + "}"),
        absent=["{d}/suites/hostile"],
    ),
    Case(
        "otel-deep-bare",
        ingest("otel", "{t}/deep.json"),
        "nested too deeply",
        scratch("deep.json", "[" * DEEP + "]" * DEEP),
        absent=["{d}/suites/hostile"],
    ),
    Case(
        "otel-deep-attribute",
        ingest("otel", "{t}/deep.jsonl"),
        "nested too deeply",
        scratch(
            "deep.jsonl",
            otel_attr('{"kvlistValue": {"values": [{"key": "a", "value": ' * 3000 + "{}" + "}]}}" * 3000) + "\n",
        ),
        absent=["{d}/suites/hostile"],
    ),
    Case("ingest-session-dev-zero", ingest("claude-code", "/dev/zero"), "/dev/zero", absent=["{d}/suites/hostile"]),
    Case(
        "ingest-session-fifo",
        ingest("codex", "{t}/pipe"),
        "pipe",
        scratch("pipe", kind="fifo"),
        absent=["{d}/suites/hostile"],
    ),
    Case(
        "ingest-session-directory",
        ingest("claude-code", "{t}/dir"),
        "dir",
        scratch("dir", kind="dir"),
        absent=["{d}/suites/hostile"],
    ),
    Case(
        "ingest-session-missing",
        ingest("claude-code", "{t}/missing.jsonl"),
        "file not found",
        absent=["{d}/suites/hostile"],
    ),
    Case(
        "ingest-session-binary",
        ingest("claude-code", "{t}/garbage.jsonl"),
        "garbage.jsonl",
        scratch("garbage.jsonl", bytes(range(256)) * 64),
        absent=["{d}/suites/hostile"],
    ),
    Case(
        "ingest-catalog-dev-zero",
        ["ingest", "claude-code", "{t}/s.jsonl", "--suite", "hostile", "--catalog", "/dev/zero", "--data-dir", "{d}"],
        "not a regular file",
        scratch("s.jsonl", SESSION),
        absent=["{d}/suites/hostile"],
    ),
    Case(
        "ingest-catalog-dump-dev-zero",
        ingest("claude-code", "{t}/s.jsonl", "--catalog-dump", "/dev/zero"),
        "not a regular file",
        scratch("s.jsonl", SESSION),
        absent=["{d}/suites/hostile"],
    ),
    Case(
        "ingest-catalog-dump-fifo",
        ingest("claude-code", "{t}/s.jsonl", "--catalog-dump", "{t}/pipe"),
        "not a regular file",
        both(scratch("s.jsonl", SESSION), scratch("pipe", kind="fifo")),
        absent=["{d}/suites/hostile"],
    ),
    Case(
        "ingest-catalog-dump-name-newline",
        ingest("claude-code", "{t}/s.jsonl", "--catalog-dump", "{t}/dump.json"),
        "control characters",
        both(
            scratch("s.jsonl", SESSION),
            scratch("dump.json", json.dumps({"tools": [{"name": "Ba\nsh", "inputSchema": {"type": "object"}}]})),
        ),
        absent=["{d}/suites/hostile"],
    ),
    Case(
        "ingest-suite-name-path",
        ["ingest", "claude-code", "{t}/s.jsonl", "--suite", "../evil", "--catalog", CATALOG, "--data-dir", "{d}"],
        "not a valid suite name",
        scratch("s.jsonl", SESSION),
        absent=["{d}/evil"],
    ),
    # ---- import bfcl ----
    Case(
        "bfcl-dev-zero",
        ["import", "bfcl", "/dev/zero", "--suite", "b", "--data-dir", "{d}"],
        "not a regular file",
        absent=["{d}/suites/b"],
    ),
    Case(
        "bfcl-fifo",
        ["import", "bfcl", "{t}/pipe", "--suite", "b", "--data-dir", "{d}"],
        "not a regular file",
        scratch("pipe", kind="fifo"),
        absent=["{d}/suites/b"],
    ),
    Case(
        "bfcl-directory",
        ["import", "bfcl", "{t}/dir", "--suite", "b", "--data-dir", "{d}"],
        "directory",
        scratch("dir", kind="dir"),
        absent=["{d}/suites/b"],
    ),
    Case(
        "bfcl-deep",
        ["import", "bfcl", "{t}/q.json", "--suite", "b", "--data-dir", "{d}"],
        "nested too deeply",
        scratch("q.json", "[" * DEEP + "]" * DEEP + "\n"),
        absent=["{d}/suites/b"],
    ),
    # ---- gate and report outputs ----
    Case(
        "gate-junit-missing-dir",
        ["gate", "r1", "--junit", "{t}/nonexistent/dir/j.xml", "--data-dir", "{d}"],
        "does not exist (it is not created)",
        stored_release,
        absent=["{t}/nonexistent"],
    ),
    Case(
        "gate-markdown-under-file",
        ["gate", "r1", "--markdown", "{t}/f/gate.md", "--data-dir", "{d}"],
        "--markdown",
        both(stored_release, scratch("f", "x")),
    ),
    Case(
        "gate-markdown-is-directory",
        ["gate", "r1", "--markdown", "{t}/dir", "--data-dir", "{d}"],
        "--markdown",
        both(stored_release, scratch("dir", kind="dir")),
    ),
    Case("gate-release-path", ["gate", "../../etc", "--data-dir", "{d}"], "release"),
    Case(
        "report-chart-under-file",
        ["report", "--chart", "{t}/f/sub/trend.png", "--data-dir", "{d}"],
        "f",
        both(stored_release, scratch("f", "x")),
    ),
]


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


def test_the_corpus_holds_at_least_sixty_distinct_inputs():
    assert len(CASES) >= 60 and len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_each_hostile_input_is_one_error_line_with_its_exit_code_and_stores_nothing(tmp_path, capsys, case):
    data = tmp_path / "data"
    shutil.copytree(DATA / "suites" / SUITE, _suite_dir(data))
    shutil.copy(DATA / "toolchoice.yaml", data / "toolchoice.yaml")
    scratch_dir = tmp_path / "scratch"
    scratch_dir.mkdir()
    case.setup(data, scratch_dir)
    before = snapshot(data)
    argv = [part.replace("{d}", str(data)).replace("{t}", str(scratch_dir)) for part in case.command]
    code = run_guarded(cli, argv)
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    if lines and lines[0].startswith("Usage: "):  # a usage error, in click's form: usage, hint, one Error: line
        assert len(lines) == 3 and lines[1].startswith("Try ") and lines[2].startswith("Error: "), captured.err
        lines = [lines[2]]
    assert code == case.code, captured.err
    assert lines and all(line.startswith(("error: ", "Error: ")) for line in lines), captured.err
    assert "Traceback" not in captured.err + captured.out
    assert any(case.expect in line for line in lines), lines
    assert SECRET[7:] not in captured.err + captured.out
    assert snapshot(data) == before
    for path in case.absent:
        assert not Path(path.replace("{d}", str(data)).replace("{t}", str(scratch_dir))).exists()
