"""The malformed-input corpus: every class of bad input and the exact error lines it must give.

Each case starts from a small valid suite (``demo``: a two-tool catalog and three tasks, built in a temporary
data directory), changes one or two files, and states every line the user must see: through the library
(``load_suite`` / ``load_run_config`` raise :class:`InputError`) and through ``toolchoice validate`` (exit 2,
one ``error: <file>:<line>: <field>: <message>`` line per problem on stderr, nothing on stdout).
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from toolchoice_pipeline.cli import main
from toolchoice_pipeline.suites.config import load_run_config
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline.util.errors import InputError

SUITE = "name: demo\ncatalog: catalog.yaml\ntasks: tasks.jsonl\nmatch_profile: key_args\n"
CATALOG = textwrap.dedent("""\
    - name: Read
      description: Read one local file.
      parameters:
        type: object
        properties:
          file_path: {type: string}
        required: [file_path]
    - name: Grep
      description: Search the contents of files.
      parameters:
        type: object
        properties:
          pattern: {type: string}
          path: {type: string}
        required: [pattern]
    """)


def task(id: str, tool: str | None, arguments: dict | None = None, text: str = "please", **extra) -> str:
    """One task line of the corpus."""
    data = {
        "id": id,
        "messages": [{"role": "user", "content": text}],
        "expected": {"tool": tool, "arguments": arguments or {}},
        **extra,
    }
    return json.dumps(data)


READ = task("read-001", "Read", {"file_path": {"regex": r"main\.py$"}}, "show me main.py")
GREP = task("grep-001", "Grep", {"pattern": {"regex": "load_settings"}}, "where is load_settings defined?")
CHAT = task("chat-001", None, None, "thanks!")


def lines(*items: str) -> str:
    return "\n".join(items) + "\n"


def dump(value) -> str:
    return json.dumps(value, indent=2) + "\n"


TEMPLATE = {
    "suites/demo/suite.yaml": SUITE,
    "suites/demo/catalog.yaml": CATALOG,
    "suites/demo/tasks.jsonl": lines(READ, GREP, CHAT),
}

S = "data/suites/demo/suite.yaml"
C = "data/suites/demo/catalog.yaml"
T = "data/suites/demo/tasks.jsonl"
L = "data/suites/demo/live/mcp.json"
CFG = "data/toolchoice.yaml"
LIVE_SUITE = SUITE + "live_catalogs: [live/mcp.json]\n"
SCHEMA_TYPES = "use one of array, boolean, integer, null, number, object, string"


@dataclass(frozen=True)
class Case:
    """One malformed input: files changed from the template (None deletes one) and the exact errors."""

    id: str
    files: dict[str, str | bytes | None]
    errors: tuple[str, ...]
    suite: str = "demo"
    kind: str = "suite"  # "suite": load_suite raises; "config": load_run_config raises
    notes: dict = field(default_factory=dict)


CASES = [
    # ---- tasks.jsonl: syntax and shape ----
    Case(
        "task-bad-json",
        {"suites/demo/tasks.jsonl": lines(READ, '{"id": "grep-002", "messages": [}', CHAT)},
        (f"{T}:2: bad JSON: Expecting value (column 33)",),
    ),
    Case(
        "task-line-not-object",
        {"suites/demo/tasks.jsonl": lines(READ, '["read-002", "show me main.py"]')},
        (f"{T}:2: a task line must be a JSON object, not an array",),
    ),
    Case(
        "task-unknown-field",
        {"suites/demo/tasks.jsonl": lines(READ, task("grep-002", "Grep", prompt="x"))},
        (f"{T}:2: prompt: unknown field (allowed: id, messages, expected, tools, tool_results, tags)",),
    ),
    Case(
        "expected-unknown-field",
        {
            "suites/demo/tasks.jsonl": lines(
                READ,
                json.dumps(
                    {
                        "id": "grep-002",
                        "messages": [{"role": "user", "content": "x"}],
                        "expected": {"tool": "Grep", "args": {"pattern": "x"}},
                    }
                ),
            )
        },
        (f"{T}:2: expected.args: unknown field (did you mean 'arguments'? allowed: tool, arguments, calls, any_call)",),
    ),
    Case(
        "task-missing-fields",
        {"suites/demo/tasks.jsonl": lines('{"messages": [{"role": "user", "content": "x"}]}')},
        (
            f'{T}:1: id: required field is missing: give a stable name such as "grep-def-001"',
            f'{T}:1: expected: required field is missing: give {{"tool": "Grep", "arguments": {{...}}}}; '
            '{"tool": null} when no call is expected; null for an unlabelled task',
        ),
    ),
    Case(
        "task-wrong-types",
        {
            "suites/demo/tasks.jsonl": lines(
                json.dumps(
                    {"id": "read-002", "messages": "show me main.py", "expected": {"tool": "Read"}, "tags": "file-read"}
                )
            )
        },
        (
            f'{T}:1: messages: Input should be a valid list (got "show me main.py")',
            f'{T}:1: tags: Input should be a valid list (got "file-read")',
        ),
    ),
    Case(
        "message-bad-role-and-content",
        {
            "suites/demo/tasks.jsonl": lines(
                json.dumps({"id": "read-002", "messages": [{"role": "human", "content": 5}], "expected": None})
            )
        },
        (
            f"{T}:1: messages[0].role: Input should be 'system', 'developer', 'user', 'assistant' or 'tool' "
            '(got "human")',
            f"{T}:1: messages[0].content: Input should be a valid string or a valid list (got 5)",
        ),
    ),
    Case(
        "task-empty-messages",
        {"suites/demo/tasks.jsonl": lines('{"id": "t-1", "messages": [], "expected": null}')},
        (f"{T}:1: messages: List should have at least 1 item after validation, not 0 (got [])",),
    ),
    Case(
        "task-duplicate-id",
        {"suites/demo/tasks.jsonl": lines(READ, GREP, READ)},
        (f"{T}:3: id: duplicate task id 'read-001' (first on line 1)",),
    ),
    Case(
        "tasks-not-utf8",
        {"suites/demo/tasks.jsonl": lines(READ, GREP.replace("defined", "d\xe9fined")).encode("latin-1")},
        (f"{T}:2: not UTF-8 text: byte 0xe9 at column 86 (invalid continuation byte); save the file as UTF-8",),
    ),
    Case(
        "empty-suite",
        {"suites/demo/tasks.jsonl": "\n\n"},
        (f"{T}: the suite has no tasks: add one task per line as a JSON object (see docs/formats.md)",),
    ),
    # ---- tasks.jsonl: against the catalog ----
    Case(
        "expected-tool-not-in-catalog",
        {
            "suites/demo/tasks.jsonl": lines(
                READ, task("grep-002", "grep", {"pattern": "x"}), task("web-001", "WebSearch", {"query": "x"})
            )
        },
        (
            f"{T}:2: expected.tool: tool 'grep' is not in the task's catalog (catalog: Grep, Read); "
            "did you mean 'Grep'? Names are case-sensitive",
            f"{T}:3: expected.tool: tool 'WebSearch' is not in the task's catalog (catalog: Grep, Read)",
        ),
    ),
    Case(
        "expected-tool-not-in-inline-tools",
        {
            "suites/demo/tasks.jsonl": lines(
                task(
                    "bfcl-001",
                    "get_weather",
                    {"city": "Paris"},
                    tools=[
                        {
                            "name": "get_forecast",
                            "description": "",
                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                        }
                    ],
                )
            )
        },
        (f"{T}:1: expected.tool: tool 'get_weather' is not in the task's catalog (catalog: get_forecast)",),
    ),
    Case(
        "key-argument-not-a-parameter",
        {"suites/demo/tasks.jsonl": lines(task("read-002", "Read", {"filepath": "main.py", "path": "main.py"}))},
        (
            f"{T}:1: expected.arguments.filepath: key argument 'filepath' is not a parameter of tool 'Read' "
            "(parameters: file_path); did you mean 'file_path'?",
            f"{T}:1: expected.arguments.path: key argument 'path' is not a parameter of tool 'Read' "
            "(parameters: file_path)",
        ),
    ),
    Case(
        "regex-does-not-compile",
        {"suites/demo/tasks.jsonl": lines(task("grep-002", "Grep", {"pattern": {"regex": "load_settings("}}))},
        (f'{T}:1: expected.arguments.pattern: regex "load_settings(" does not compile: missing ): load_settings(',),
    ),
    Case(
        "regex-needs-backtracking",
        {"suites/demo/tasks.jsonl": lines(task("grep-002", "Grep", {"pattern": {"regex": "(?<=def )load"}}))},
        (
            f'{T}:1: expected.arguments.pattern: regex "(?<=def )load" does not compile: invalid perl operator: (?<= '
            "(RE2, the linear-time engine user regexes run on, has no lookaround or backreferences; write \\z for "
            "the end of text)",
        ),
    ),
    Case(
        "any_of-malformed",
        {
            "suites/demo/tasks.jsonl": lines(
                task("grep-002", "Grep", {"pattern": {"any_of": []}, "path": {"any_of": "src"}})
            )
        },
        (
            f"{T}:1: expected.arguments.pattern: 'any_of' must be a non-empty list of values (got [])",
            f"{T}:1: expected.arguments.path: 'any_of' must be a non-empty list of values (got \"src\")",
        ),
    ),
    Case(
        "two-matcher-keys",
        {"suites/demo/tasks.jsonl": lines(task("grep-002", "Grep", {"pattern": {"any_of": ["a"], "regex": "b"}}))},
        (
            f"{T}:1: expected.arguments.pattern: a matcher takes exactly one of any_of, regex, value "
            "(found any_of, regex); put alternatives in one any_of or one regex",
        ),
    ),
    Case(
        "optional-not-boolean",
        {"suites/demo/tasks.jsonl": lines(task("grep-002", "Grep", {"path": {"value": "src", "optional": "yes"}}))},
        (f"{T}:1: expected.arguments.path: 'optional' must be true or false (got \"yes\")",),
    ),
    Case(
        "arguments-with-null-tool",
        {"suites/demo/tasks.jsonl": lines(task("chat-002", None, {"file_path": "x"}))},
        (
            f"{T}:1: expected.arguments: arguments are given but no call is expected (expected.tool is null): "
            "name the tool or remove the arguments",
        ),
    ),
    Case(
        "tool_results-for-unknown-tool",
        {
            "suites/demo/tasks.jsonl": lines(
                task("multi-001", "Grep", {"pattern": "x"}, tool_results={"Grep": "a.py:1", "Bash": "ok"})
            )
        },
        (
            f"{T}:1: tool_results.Bash: canned result for tool 'Bash', which is not in the task's catalog "
            "(catalog: Grep, Read)",
        ),
    ),
    Case(
        "inline-tools-bad-schema-and-duplicate",
        {
            "suites/demo/tasks.jsonl": lines(
                task(
                    "bfcl-001",
                    "f",
                    tools=[
                        {"name": "f", "description": "", "parameters": {"type": "dict", "properties": {}}},
                        {"name": "f", "description": "", "parameters": {"type": "object"}},
                    ],
                )
            )
        },
        (
            f"{T}:1: tools[0].parameters.type: not a valid JSON Schema: 'dict' is not a JSON Schema type "
            f"({SCHEMA_TYPES})",
            f"{T}:1: tools[1].name: duplicate tool name 'f' (also at tools[0])",
        ),
    ),
    Case(
        "every-line-reported",  # problems on several lines and of several kinds, all in one go, by line
        {"suites/demo/tasks.jsonl": lines(READ, "{oops", task("read-002", "Red"), READ, task("x", "Grep", bad=1))},
        (
            f"{T}:2: bad JSON: Expecting property name enclosed in double quotes (column 2)",
            f"{T}:3: expected.tool: tool 'Red' is not in the task's catalog (catalog: Grep, Read); "
            "did you mean 'Read'?",
            f"{T}:4: id: duplicate task id 'read-001' (first on line 1)",
            f"{T}:5: bad: unknown field (allowed: id, messages, expected, tools, tool_results, tags)",
        ),
    ),
    # ---- catalog.yaml ----
    Case(
        "catalog-unknown-field",
        {
            "suites/demo/catalog.yaml": CATALOG.replace(
                "  description: Read one local file.\n", "  description: Read one local file.\n  inputSchema: {}\n"
            )
        },
        (f"{C}:3: [0].inputSchema: unknown field (did you mean 'parameters'? allowed: name, description, parameters)",),
    ),
    Case(
        "catalog-missing-name",
        {"suites/demo/catalog.yaml": CATALOG.replace("- name: Grep\n  description", "- description")},
        (f"{C}:8: [1].name: required field is missing",),
    ),
    Case(
        "catalog-wrong-type",
        {"suites/demo/catalog.yaml": "- name: Read\n  description: r\n  parameters: [file_path]\n"},
        (f'{C}:3: [0].parameters: Input should be a valid dictionary (got ["file_path"])',),
    ),
    Case(
        "parameters-fail-meta-schema",
        {
            "suites/demo/catalog.yaml": CATALOG.replace(
                "file_path: {type: string}", "file_path: {type: strng}"
            ).replace("required: [pattern]", "required: pattern")
        },
        (
            f"{C}:6: [0].parameters.properties.file_path.type: not a valid JSON Schema: 'strng' is not a JSON "
            f"Schema type ({SCHEMA_TYPES})",
            f"{C}:15: [1].parameters.required: not a valid JSON Schema: 'pattern' is not of type 'array'",
        ),
    ),
    Case(
        "parameters-top-level-not-object",
        {
            "suites/demo/catalog.yaml": CATALOG.replace(
                "    type: object\n    properties:\n      file_path",
                "    type: array\n    properties:\n      file_path",
            )
        },
        (
            f"{C}:4: [0].parameters.type: the top level of parameters must be a JSON Schema object with "
            '"type": "object" (found "array")',
        ),
    ),
    Case(
        "duplicate-tool-names",
        {"suites/demo/catalog.yaml": CATALOG + CATALOG.split("- name: Grep")[0]},
        (f"{C}:16: [2].name: duplicate tool name 'Read' (also at [0], line 1)",),
    ),
    Case(
        "empty-catalog",
        {"suites/demo/catalog.yaml": "[]\n"},
        (
            f"{C}: the catalog has no tools: list at least one tool definition (or give every task an inline "
            "'tools' catalog)",
        ),
    ),
    Case(
        "catalog-not-a-list",
        {"suites/demo/catalog.yaml": "Read:\n  description: x\n"},
        (f"{C}:1: a catalog must be a YAML list of tool definitions (- name: ..., description: ..., parameters: ...)",),
    ),
    Case(
        "catalog-item-not-a-mapping",
        {"suites/demo/catalog.yaml": CATALOG + "- Bash\n"},
        (f"{C}:16: [2]: a tool definition must be a mapping with name, description and parameters, not a string",),
    ),
    Case(
        "catalog-bad-yaml",
        {"suites/demo/catalog.yaml": "- name: Read\n  description: Read: a file\n"},
        (
            f"{C}:2: bad YAML: mapping values are not allowed here (column 20); quote a value that contains "
            "': ' (description: \"Read: a file\")",
        ),
    ),
    Case(
        "catalog-duplicate-yaml-key",
        {
            "suites/demo/catalog.yaml": CATALOG.replace(
                "  description: Read one local file.\n", "  description: Read one local file.\n  description: Reads.\n"
            )
        },
        (f"{C}:3: [0].description: duplicate key 'description' (first on line 2)",),
    ),
    Case("catalog-missing", {"suites/demo/catalog.yaml": None}, (f"{S}:2: catalog: file not found: {C}",)),
    # ---- suite.yaml ----
    Case(
        "suite-unknown-field",
        {"suites/demo/suite.yaml": SUITE + "catalogue: tools.yaml\n"},
        (
            f"{S}:5: catalogue: unknown field (did you mean 'catalog'? allowed: name, description, catalog, tasks, "
            "match_profile, live_catalogs, models)",
        ),
    ),
    Case(
        "unknown-match-profile",
        {"suites/demo/suite.yaml": SUITE.replace("key_args", "keyargs")},
        (f"{S}:4: match_profile: Input should be 'key_args' or 'bfcl' (got \"keyargs\")",),
    ),
    Case(
        "suite-name-differs-from-directory",
        {"suites/demo/suite.yaml": SUITE.replace("name: demo", "name: coding")},
        (f"{S}:1: name: suite name 'coding' differs from its directory 'demo'",),
    ),
    Case(
        "suite-wrong-types",
        {"suites/demo/suite.yaml": SUITE + "live_catalogs: live/mcp.json\nmodels: local/x\n"},
        (
            f'{S}:5: live_catalogs: Input should be a valid list (got "live/mcp.json")',
            f'{S}:6: models: Input should be a valid list (got "local/x")',
        ),
    ),
    Case(
        "suite-bad-yaml",
        {"suites/demo/suite.yaml": "name: demo\ncatalog: [catalog.yaml\n"},
        (f"{S}:3: bad YAML: expected ',' or ']', but got '<stream end>' (column 1)",),
    ),
    Case(
        "suite-not-a-mapping",
        {"suites/demo/suite.yaml": "- demo\n"},
        (f"{S}:1: suite.yaml must be a mapping with at least 'name: demo'",),
    ),
    Case(
        "suite-not-utf8",
        {"suites/demo/suite.yaml": "name: demo\ndescription: caf\xe9\n".encode("latin-1")},
        (f"{S}:2: not UTF-8 text: byte 0xe9 at column 17 (invalid continuation byte); save the file as UTF-8",),
    ),
    Case(
        "tasks-file-missing",
        {"suites/demo/suite.yaml": SUITE.replace("tasks.jsonl", "task.jsonl")},
        (f"{S}:3: tasks: file not found: data/suites/demo/task.jsonl",),
    ),
    Case(
        "no-such-suite", {}, ("data/suites/demo2/suite.yaml: no suite 'demo2' (suites in data: demo)",), suite="demo2"
    ),
    # ---- live catalog dumps ----
    Case(
        "live-dump-bad-json",
        {"suites/demo/suite.yaml": LIVE_SUITE, "suites/demo/live/mcp.json": '{"tools": [\n  {"name": "x",}\n]}\n'},
        (f"{L}:2: bad JSON: Expecting property name enclosed in double quotes (column 16)",),
    ),
    Case(
        "live-dump-not-a-list",
        {"suites/demo/suite.yaml": LIVE_SUITE, "suites/demo/live/mcp.json": dump({"name": "search_issues"})},
        (
            f"{L}:1: a live catalog dump must be a JSON list of tools (or an object with a 'tools' list, as MCP "
            "tools/list returns)",
        ),
    ),
    Case(
        "live-dump-tool-problems",
        {
            "suites/demo/suite.yaml": LIVE_SUITE,
            "suites/demo/live/mcp.json": dump(
                {
                    "tools": [
                        {"description": "no name"},
                        {
                            "name": "search_issues",
                            "inputSchema": {"type": "object", "properties": {"q": {"type": "text"}}},
                        },
                        {"name": 7},
                        "Bash",
                        {"name": "get_issue", "inputSchema": []},
                        {"name": "search_issues"},
                    ]
                }
            ),
        },
        (
            f"{L}:3: tools[0].name: required field is missing",
            f"{L}:12: tools[1].inputSchema.properties.q.type: not a valid JSON Schema: 'text' is not a JSON Schema "
            f"type ({SCHEMA_TYPES})",
            f"{L}:18: tools[2].name: must be a non-empty string (got 7)",
            f"{L}:20: tools[3]: a tool must be a JSON object, not a string",
            f"{L}:23: tools[4].inputSchema: parameters must be a JSON Schema object, not a list",
            f"{L}:26: tools[5].name: duplicate tool name 'search_issues' (also at tools[1], line 6)",
        ),
    ),
    Case(
        "live-dump-openai-format-problems",
        {
            "suites/demo/suite.yaml": LIVE_SUITE,
            "suites/demo/live/mcp.json": dump(
                [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "string"}}}]
            ),
        },
        (
            f"{L}:7: [0].function.parameters.type: the top level of parameters must be a JSON Schema object with "
            '"type": "object" (found "string")',
        ),
    ),
    Case(
        "live-dump-missing", {"suites/demo/suite.yaml": LIVE_SUITE}, (f"{S}:5: live_catalogs[0]: file not found: {L}",)
    ),
    Case(
        "problems-in-every-file",  # each file's problems, all in one report: catalog, dump, then tasks
        {
            "suites/demo/suite.yaml": LIVE_SUITE,
            "suites/demo/live/mcp.json": dump([{"name": ""}]),
            "suites/demo/catalog.yaml": CATALOG.replace("type: string}", "type: str}", 1),
            "suites/demo/tasks.jsonl": lines(READ, task("grep-002", "Grep", {"pattern": {"regex": "("}})),
        },
        (
            f"{C}:6: [0].parameters.properties.file_path.type: not a valid JSON Schema: 'str' is not a JSON Schema "
            f"type ({SCHEMA_TYPES})",
            f'{L}:3: [0].name: must be a non-empty string (got "")',
            f'{T}:2: expected.arguments.pattern: regex "(" does not compile: missing ): (',
        ),
    ),
    # ---- toolchoice.yaml (the run configuration) ----
    Case(
        "config-api-key",
        {
            "toolchoice.yaml": "models:\n  - local/bm25-router\n  - model: openai/gpt-4o-mini\n    params:\n"
            "      temperature: 0\n      api_key: sk-live-123\n"
        },
        (
            f"{CFG}:6: models[1].params.api_key: credentials may not be stored in the run configuration; remove it "
            "and set OPENAI_API_KEY in the environment instead",
        ),
        kind="config",
    ),
    Case(
        "config-judge-secret",
        {
            "toolchoice.yaml": "judge:\n  model:\n    model: anthropic/claude-sonnet-4-5\n"
            "    params: {api_key: x, aws_secret_access_key: y}\n"
        },
        (
            f"{CFG}:4: judge.model.params.api_key: credentials may not be stored in the run configuration; remove it "
            "and set ANTHROPIC_API_KEY in the environment instead",
            f"{CFG}:4: judge.model.params.aws_secret_access_key: credentials may not be stored in the run "
            "configuration; remove it and set ANTHROPIC_API_KEY in the environment instead",
        ),
        kind="config",
    ),
    Case(
        "config-unknown-fields",
        {"toolchoice.yaml": "models: [local/bm25-router]\nconcurrancy:\n  per_model: 4\njudge:\n  pols: 3\n"},
        (
            f"{CFG}:2: concurrancy: unknown field (did you mean 'concurrency'? allowed: models, judge, concurrency, "
            "rate_limits, retries, max_steps, cache, repeats, budget_usd, gate)",
            f"{CFG}:5: judge.pols: unknown field (did you mean 'polls'? allowed: model, polls, max_attempts, "
            "temperature, budget_usd, calibration, calibration_by_profile)",
        ),
        kind="config",
    ),
    Case(
        "config-wrong-values",
        {"toolchoice.yaml": "max_steps: four\ncache:\n  policy: rw\njudge:\n  polls: 0\n"},
        (
            f'{CFG}:1: max_steps: Input should be a valid integer (got "four")',
            f"{CFG}:3: cache.policy: Input should be 'read_write', 'write_only' or 'off' (got \"rw\")",
            f"{CFG}:5: judge.polls: Input should be greater than or equal to 1 (got 0)",
        ),
        kind="config",
    ),
    Case(
        "config-model-listed-twice",
        {"toolchoice.yaml": "models:\n  - local/bm25-router\n  - local/name-match\n  - local/bm25-router\n"},
        (f"{CFG}:4: models[2]: model listed twice: local/bm25-router",),
        kind="config",
    ),
    Case(
        "config-bad-yaml",
        {"toolchoice.yaml": "models:\n  - local/bm25-router\n - local/name-match\n"},
        (f"{CFG}:3: bad YAML: expected <block end>, but found '<block sequence start>' (column 2)",),
        kind="config",
    ),
    Case(
        "config-not-a-mapping",
        {"toolchoice.yaml": "- local/bm25-router\n"},
        (f"{CFG}:1: the run configuration must be a mapping (models:, judge:, concurrency:, ...)",),
        kind="config",
    ),
]


def build(root: Path, files: dict[str, str | bytes | None]) -> Path:
    """The template data directory under ``root`` with ``files`` applied; returns it as ``data`` (relative)."""
    merged: dict[str, str | bytes | None] = {**TEMPLATE, **files}
    for relative, content in merged.items():
        if content is None:
            continue
        path = root / "data" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return Path("data")


@pytest.fixture
def in_tmp(tmp_path, monkeypatch) -> Path:
    """Work in ``tmp_path`` so that problems name files as ``data/suites/demo/...`` (relative to it)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_template_is_a_valid_suite(in_tmp):
    """Every case's errors come from its own change: the unchanged template loads cleanly."""
    data = build(in_tmp, {})
    suite = load_suite(data, "demo")
    assert [t.id for t in suite.tasks] == ["read-001", "grep-001", "chat-001"]
    assert load_run_config(data).max_steps == 4


def test_the_corpus_covers_at_least_25_bad_inputs_with_distinct_names():
    assert len(CASES) >= 25
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_library_reports_exactly_these_problems(case: Case, in_tmp):
    data = build(in_tmp, case.files)
    with pytest.raises(InputError) as raised:
        if case.kind == "config":
            load_run_config(data)
        else:
            load_suite(data, case.suite)
    assert [str(problem) for problem in raised.value.problems] == list(case.errors)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_validate_command_exits_2_with_one_line_per_problem(case: Case, in_tmp, capsys):
    build(in_tmp, case.files)
    with pytest.raises(SystemExit) as exited:
        main(["validate", "--suite", case.suite, "--data-dir", "data"])
    out, err = capsys.readouterr()
    assert exited.value.code == 2
    assert out == ""
    assert err.splitlines() == [f"error: {line}" for line in case.errors]


def test_validate_reports_run_configuration_and_suite_problems_together(in_tmp, capsys):
    build(
        in_tmp,
        {
            "toolchoice.yaml": "max_steps: 0\n",
            "suites/demo/tasks.jsonl": lines(READ, task("grep-002", "Grep", prompt="x")),
        },
    )
    with pytest.raises(SystemExit) as exited:
        main(["validate", "--suite", "demo", "--data-dir", "data"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {CFG}:1: max_steps: Input should be greater than or equal to 1 (got 0)",
        f"error: {T}:2: prompt: unknown field (allowed: id, messages, expected, tools, tool_results, tags)",
    ]


def test_jsonl_problems_carry_file_line_and_field_apart(in_tmp):
    """The structured problem (not only its text) names the file, the line and the field."""
    data = build(in_tmp, {"suites/demo/tasks.jsonl": lines(READ, task("grep-002", "Grep", prompt="x"))})
    with pytest.raises(InputError) as raised:
        load_suite(data, "demo")
    [problem] = raised.value.problems
    assert (problem.file, problem.line, problem.field) == (T, 2, "prompt")


def test_a_parseable_suite_is_not_reported_empty_when_its_only_lines_are_broken(in_tmp):
    data = build(in_tmp, {"suites/demo/tasks.jsonl": lines("{oops")})
    with pytest.raises(InputError) as raised:
        load_suite(data, "demo")
    assert [str(p) for p in raised.value.problems] == [
        f"{T}:1: bad JSON: Expecting property name enclosed in double quotes (column 2)"
    ]


def test_a_broken_catalog_does_not_make_every_task_report_a_missing_tool(in_tmp):
    """With the catalog unreadable, tasks are still checked for what needs no catalog (their matchers)."""
    data = build(
        in_tmp,
        {
            "suites/demo/catalog.yaml": "- name: Read\n  parameters: 5\n",
            "suites/demo/tasks.jsonl": lines(READ, task("grep-002", "Grep", {"pattern": {"regex": "["}})),
        },
    )
    with pytest.raises(InputError) as raised:
        load_suite(data, "demo")
    assert [str(p) for p in raised.value.problems] == [
        f"{C}:2: [0].parameters: Input should be a valid dictionary (got 5)",
        f'{T}:2: expected.arguments.pattern: regex "[" does not compile: missing ]: [',
    ]


def test_live_dumps_in_every_documented_shape_merge_under_the_curated_catalog(in_tmp):
    mcp_response = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "tools": [
                {
                    "name": "search_issues",
                    "title": "Search issues",
                    "description": "Search the tracker.",
                    "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
                    "annotations": {"readOnlyHint": True},
                },
                {"name": "Read", "description": "A live Read that must lose to the curated one."},
            ]
        },
    }
    openai_tools = [{"type": "function", "function": {"name": "create_issue", "parameters": {"type": "object"}}}]
    plain = [{"name": "list_projects", "description": "List projects."}]
    data = build(
        in_tmp,
        {
            "suites/demo/suite.yaml": SUITE + "live_catalogs: [live/mcp.json, live/openai.json, live/plain.json]\n",
            "suites/demo/live/mcp.json": dump(mcp_response),
            "suites/demo/live/openai.json": dump(openai_tools),
            "suites/demo/live/plain.json": dump(plain),
        },
    )
    suite = load_suite(data, "demo")
    assert [t.name for t in suite.catalog] == ["Read", "Grep", "search_issues", "create_issue", "list_projects"]
    assert suite.catalog[0].description == "Read one local file."
    assert suite.catalog[2].parameters == {"type": "object", "properties": {"q": {"type": "string"}}}
    assert suite.catalog[4].parameters == {"type": "object", "properties": {}}
