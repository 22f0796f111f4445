"""The catalog lint (suites/lint.py) and ``toolchoice lint``: each kind of warning on a crafted catalog, with its
file, line and tool; none on a clean catalog; the similarity measures; inline catalogs deduplicated; the CLI's
exit codes and output; the demo catalog's warnings; and no crash on any valid catalog (property test)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolchoice_pipeline.cli import main
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.lint import (
    DESCRIPTION_SIMILARITY,
    NAME_SIMILARITY,
    PAIR_KINDS,
    WARNING_KINDS,
    lint_catalog,
    lint_suite,
)
from toolchoice_pipeline.suites.lint_similarity import (
    DescriptionSpace,
    description_similarity,
    name_similarity,
    similar_name_pairs,
    stemmed_words,
)
from toolchoice_pipeline.suites.suite import load_suite

BAD_CATALOG = """\
- name: get_user
  description: Look up one user account by its id and return the profile, e-mail address and roles.
  parameters:
    type: object
    properties:
      user_id: {type: string, description: The account id.}
- name: get_users
  description: List every account of the organisation page by page, newest first, for an administrator.
  parameters:
    type: object
    properties:
      page: {type: integer, description: Page number from 1.}
- name: convert_temperature
  description: ""
  parameters:
    type: object
    properties:
      value:
        type: number
      unit:
        type: string
        enum: [C, F, kelvin]
        description: Target unit.
- name: ping
  description: Check it.
  parameters: {type: object, properties: {}}
- name: search_docs
  description: >-
    Search the product documentation for a phrase and return the matching pages with their titles and links;
    for people use get_user.
  parameters:
    type: object
    properties:
      phrase: {type: string, description: Words to look for.}
- name: find_docs
  description: Search the product documentation for a phrase and return matching pages, titles and links.
  parameters:
    type: object
    properties:
      phrase: {type: string, description: Words to look for.}
"""

CLEAN_CATALOG = """\
- name: get_weather
  description: Current weather at one place now (temperature, wind, rain); it gives no forecast.
  parameters:
    type: object
    properties:
      city: {type: string, description: City name, e.g. Paris.}
      unit: {type: string, enum: [celsius, fahrenheit], description: Temperature scale of the answer.}
- name: book_flight
  description: Reserve a seat on a scheduled airline flight between two airports for one passenger.
  parameters:
    type: object
    properties:
      origin: {type: string, description: IATA code of the departure airport.}
      destination: {type: string, description: IATA code of the arrival airport.}
      cabin: {type: string, enum: ["Y", "J"], description: "Cabin class: Y = economy, J = business."}
- name: send_email
  description: Send an e-mail message to one or more recipients from the user's own mailbox.
  parameters:
    type: object
    properties:
      to:
        type: array
        description: Recipient addresses.
        items: {type: string}
      body: {type: string, description: Plain text of the message.}
"""


def write_suite(root: Path, catalog: str, name: str = "crafted", tasks: list[dict] | None = None) -> Path:
    """A suite ``name`` under ``root/data`` with ``catalog`` and one task (or ``tasks``); returns the data dir."""
    directory = root / "data" / "suites" / name
    directory.mkdir(parents=True)
    (directory / "suite.yaml").write_text(f"name: {name}\n", encoding="utf-8")
    (directory / "catalog.yaml").write_text(catalog, encoding="utf-8")
    first = yaml.safe_load(catalog)[0]["name"] if yaml.safe_load(catalog) else None
    rows = tasks or [{"id": "t1", "messages": [{"role": "user", "content": "hello"}], "expected": {"tool": first}}]
    (directory / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in rows), encoding="utf-8")
    return root / "data"


def line_of_tool(catalog: str, tool: str) -> int:
    """The 1-based line of ``- name: <tool>`` in a catalog text, found by reading the text (not the lint)."""
    for number, text in enumerate(catalog.splitlines(), start=1):
        if re.fullmatch(rf"- name: {re.escape(tool)}", text.strip()):
            return number
    raise AssertionError(tool)


def line_containing(catalog: str, needle: str) -> int:
    return next(n for n, text in enumerate(catalog.splitlines(), start=1) if needle in text)


@pytest.fixture
def crafted(tmp_path):
    data_dir = write_suite(tmp_path, BAD_CATALOG)
    return lint_suite(load_suite(data_dir, "crafted"))


FILE = "data/suites/crafted/catalog.yaml"


def test_each_kind_of_warning_fires_on_a_crafted_catalog_naming_file_line_and_tool(crafted, tmp_path, monkeypatch):
    by_kind: dict[str, list] = {}
    for warning in crafted.warnings:
        by_kind.setdefault(warning.kind, []).append(warning)
    assert set(by_kind) == set(WARNING_KINDS)
    for warning in crafted.warnings:
        assert warning.file.endswith(FILE), warning

    (names,) = by_kind["similar_names"]
    assert (names.tool, names.other_tool, names.line) == (
        "get_user",
        "get_users",
        line_of_tool(BAD_CATALOG, "get_user"),
    )
    assert names.similarity >= NAME_SIMILARITY

    (descriptions,) = by_kind["similar_descriptions"]
    assert (descriptions.tool, descriptions.other_tool) == ("search_docs", "find_docs")
    assert descriptions.line == line_of_tool(BAD_CATALOG, "search_docs")
    assert descriptions.similarity >= DESCRIPTION_SIMILARITY

    (empty,) = by_kind["empty_description"]
    assert (empty.tool, empty.field, empty.line) == (
        "convert_temperature",
        "[2].description",
        line_containing(BAD_CATALOG, 'description: ""'),
    )
    (short,) = by_kind["short_description"]
    assert (short.tool, short.line) == ("ping", line_containing(BAD_CATALOG, "Check it."))

    (named,) = by_kind["description_names_tool"]
    assert (named.tool, named.other_tool) == ("search_docs", "get_user")
    assert named.line == line_of_tool(BAD_CATALOG, "search_docs") + 1  # the description's line

    (undescribed,) = by_kind["undescribed_parameter"]
    assert (undescribed.tool, undescribed.field) == ("convert_temperature", "[2].parameters.properties.value")
    assert undescribed.line == line_containing(BAD_CATALOG, "value:")
    assert "'value'" in undescribed.message

    (opaque,) = by_kind["opaque_enum"]
    assert (opaque.tool, opaque.line) == ("convert_temperature", line_containing(BAD_CATALOG, "unit:"))
    assert '"C", "F"' in opaque.message and "kelvin" not in opaque.message  # a word explains itself


def test_a_clean_catalog_has_no_warnings(tmp_path):
    report = lint_suite(load_suite(write_suite(tmp_path, CLEAN_CATALOG), "crafted"))
    assert report.warnings == [] and report.counts == {}
    assert (report.catalogs, report.tools) == (1, 3)


@pytest.mark.parametrize(
    ("enum", "description", "opaque"),
    [
        (["C", "F"], "Unit: C = Celsius, F = Fahrenheit.", False),
        (["C", "F"], "Unit, 'C' or 'F'.", False),
        (["C", "F"], "Celsius (C) or Fahrenheit (F).", False),
        (["C", "F"], "Unit of the answer.", True),
        (["C", "F"], "C = Celsius.", True),  # F is not explained
        ([1, 2, 3], "Sort order: 1 = newest, 2 = oldest, 3 = most relevant.", False),
        ([1, 2, 3], "Sort order.", True),
        (["fast", "full"], "How thorough.", False),
    ],
)
def test_an_enum_is_opaque_unless_its_values_are_words_or_the_description_explains_each(enum, description, opaque):
    tool = ToolDefinition(
        name="t",
        description="Convert a temperature between the usual scales.",
        parameters={
            "type": "object",
            "properties": {"x": {"type": "string", "enum": enum, "description": description}},
        },
    )
    kinds = [w.kind for w in lint_catalog([tool])]
    assert ("opaque_enum" in kinds) is opaque


def test_enum_labels_in_the_schema_give_each_value_its_meaning():
    tool = ToolDefinition(
        name="t",
        description="Convert a temperature between the usual scales.",
        parameters={
            "type": "object",
            "properties": {
                "u": {"type": "string", "enum": ["C", "F"], "description": "Unit.", "enumDescriptions": ["c", "f"]}
            },
        },
    )
    assert lint_catalog([tool]) == []


def test_nested_parameters_and_array_items_are_checked_with_their_path():
    tool = ToolDefinition(
        name="todo",
        description="Replace the session's to-do list with the given items, each with a status.",
        parameters={
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The list.",
                    "items": {"type": "object", "properties": {"status": {"type": "string", "enum": ["a", "b"]}}},
                }
            },
        },
    )
    warnings = lint_catalog([tool], file="c.yaml")
    assert sorted((w.kind, w.field) for w in warnings) == [
        ("opaque_enum", "[0].parameters.properties.todos.items.properties.status"),
        ("undescribed_parameter", "[0].parameters.properties.todos.items.properties.status"),
    ]
    assert all("'todos[].status'" in w.message for w in warnings)


def test_the_description_measure_ranks_a_confusable_pair_above_a_distinct_pair():
    grep = "Search the contents of files for a regular expression and list the matching lines."
    confusable = "Find lines inside source files whose text matches a regular expression pattern."
    distinct = "Send an e-mail message to one recipient from the user's mailbox."
    other = "Download one web page by its URL and return its text."
    corpus = [stemmed_words(text) for text in (grep, confusable, distinct, other)]
    space = DescriptionSpace(corpus)
    near = description_similarity(space, corpus[0], corpus[1])
    far = description_similarity(space, corpus[0], corpus[2])
    assert near >= DESCRIPTION_SIMILARITY > far
    assert description_similarity(space, corpus[0], corpus[0]) == pytest.approx(1.0)
    # the matrix path agrees with the pairwise one
    (_, _, matrix), *_ = list(space.similarities(corpus))
    assert matrix[0, 1] == pytest.approx(near, abs=1e-6) and matrix[0, 2] == pytest.approx(far, abs=1e-6)


@pytest.mark.parametrize(
    ("first", "second", "similar"),
    [
        ("read_file", "ReadFile", True),
        ("file_read", "read_file", True),
        ("get_user", "get_users", True),
        ("search_files", "search_file", True),
        ("Edit", "Exit", False),
        ("WebSearch", "WebFetch", False),
        ("find_in_files", "find_files", True),
        ("find_files", "find_file_names", False),
        ("get_weather", "get_weather_forecast", False),
    ],
)
def test_name_similarity(first, second, similar):
    assert (name_similarity(first, second) >= NAME_SIMILARITY) is similar
    pairs = similar_name_pairs([first, "unrelated_tool_name", second], NAME_SIMILARITY)
    assert (pairs != []) is similar
    if similar:
        assert pairs[0][:2] == (0, 2) and pairs[0][2] == pytest.approx(name_similarity(first, second), abs=1e-3)


def test_inline_catalogs_are_linted_once_each_and_a_repeated_warning_counts_its_other_tasks(tmp_path):
    shared = [
        {"name": "lookup", "description": "", "parameters": {"type": "object", "properties": {}}},
        {
            "name": "compute_area",
            "description": "Area of a triangle from its base and height.",
            "parameters": {"type": "object", "properties": {"base": {"type": "number"}}},
        },
    ]
    own = [{"name": "stats", "description": "Mean.", "parameters": {"type": "object", "properties": {}}}]
    tasks = [
        {
            "id": f"t{i}",
            "messages": [{"role": "user", "content": "q"}],
            "expected": {"tool": "compute_area"},
            "tools": shared,
        }
        for i in range(40)
    ]
    tasks.append(
        {"id": "odd", "messages": [{"role": "user", "content": "q"}], "expected": {"tool": "stats"}, "tools": own}
    )
    data_dir = write_suite(tmp_path, "[]\n", tasks=tasks)
    report = lint_suite(load_suite(data_dir, "crafted"))
    assert report.catalogs == 2 and report.tools == 3
    summary = sorted((w.kind, w.tool, w.line, w.field, w.also) for w in report.warnings)
    assert summary == [
        ("empty_description", "lookup", 1, "tools[0].description", 39),
        ("short_description", "stats", 41, "tools[0].description", 0),
        ("undescribed_parameter", "compute_area", 1, "tools[1].parameters.properties.base", 39),
    ]
    assert all(
        w.file == "data/suites/crafted/tasks.jsonl" or w.file.endswith("crafted/tasks.jsonl") for w in report.warnings
    )
    assert "(and 39 other tasks)" in str(next(w for w in report.warnings if w.tool == "lookup"))


def test_a_live_dump_tool_is_named_by_its_dump_file_and_line(tmp_path):
    data_dir = write_suite(tmp_path, CLEAN_CATALOG)
    directory = data_dir / "suites" / "crafted"
    dump = {"tools": [{"name": "get_forecast", "description": "Weather.", "inputSchema": {"type": "object"}}]}
    (directory / "live.json").write_text(json.dumps(dump, indent=2), encoding="utf-8")
    (directory / "suite.yaml").write_text("name: crafted\nlive_catalogs: [live.json]\n", encoding="utf-8")
    report = lint_suite(load_suite(data_dir, "crafted"))
    (warning,) = report.warnings
    assert (warning.kind, warning.tool, warning.field) == ("short_description", "get_forecast", "tools[0].description")
    assert warning.file.endswith("crafted/live.json")
    text = (directory / "live.json").read_text(encoding="utf-8").splitlines()
    assert '"description": "Weather."' in text[warning.line - 1]


DEMO_WARNINGS = [  # (kind, tool, other tool): reviewed by hand; a change to the demo catalog or the lint shows here
    ("similar_descriptions", "Edit", "Write"),
    ("description_names_tool", "Edit", "Bash"),
    ("description_names_tool", "Edit", "Write"),
    ("description_names_tool", "Write", "Edit"),
    ("description_names_tool", "Bash", "Glob"),
    ("description_names_tool", "Bash", "Grep"),
    ("description_names_tool", "Bash", "Read"),
    ("description_names_tool", "Grep", "Glob"),
    ("description_names_tool", "WebFetch", "WebSearch"),
]


def test_the_demo_catalogs_warnings_are_stable(repo_data_dir):
    suite = load_suite(repo_data_dir, "coding_agent")
    first, second = lint_suite(suite), lint_suite(suite)
    assert first == second
    assert [(w.kind, w.tool, w.other_tool) for w in first.warnings] == DEMO_WARNINGS
    catalog = (suite.directory / "catalog.yaml").read_text(encoding="utf-8")
    for warning in first.warnings:
        assert warning.file == "data/suites/coding_agent/catalog.yaml" or warning.file.endswith(
            "suites/coding_agent/catalog.yaml"
        )
        tool_line = line_of_tool(catalog, warning.tool)
        # pairs point at the tool, description warnings at its description (the line after the name)
        assert warning.line == (tool_line if warning.kind == "similar_descriptions" else tool_line + 1), warning


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out = capsys.readouterr()
    return exited.value.code, out.out, out.err


def test_lint_prints_warnings_and_exits_0_and_1_with_strict(tmp_path, capsys):
    data_dir = str(write_suite(tmp_path, BAD_CATALOG))
    code, out, err = run(["lint", "--suite", "crafted", "--data-dir", data_dir], capsys)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("lint: 7 warnings (1 similar_descriptions, 1 similar_names, 1 empty_description,")
    assert len(lines) == 1 + 7
    line = line_of_tool(BAD_CATALOG, "get_user")
    assert any(
        text.endswith(
            f"catalog.yaml:{line}: get_user: name reads like 'get_users' (line 7) "
            f"(similarity {name_similarity('get_user', 'get_users'):.2f} ≥ 0.8): a model may "
            "call one for the other or type one name for the other [similar_names]"
        )
        for text in lines
    )
    code, out, _ = run(["lint", "--suite", "crafted", "--data-dir", data_dir, "--strict", "--max", "2"], capsys)
    assert code == 1
    assert out.splitlines()[-1] == "... 5 more (toolchoice lint --suite crafted --max 0, or --json)"


def test_lint_json_lists_every_warning(tmp_path, capsys):
    data_dir = str(write_suite(tmp_path, BAD_CATALOG))
    code, out, _ = run(["lint", "--suite", "crafted", "--data-dir", data_dir, "--json", "--max", "1"], capsys)
    report = json.loads(out)
    assert code == 0
    assert len(report["warnings"]) == 7 == sum(report["counts"].values())
    assert set(report["warnings"][0]) == {
        "kind",
        "file",
        "line",
        "tool",
        "field",
        "message",
        "other_tool",
        "similarity",
        "also",
    }


def test_lint_of_a_clean_catalog_passes_strict_and_bad_input_exits_2(tmp_path, capsys):
    data_dir = str(write_suite(tmp_path, CLEAN_CATALOG))
    code, out, _ = run(["lint", "--suite", "crafted", "--data-dir", data_dir, "--strict"], capsys)
    assert (code, out) == (0, "lint: no warnings in 1 catalog of 3 distinct tools\n")
    code, out, err = run(["lint", "--suite", "missing", "--data-dir", data_dir], capsys)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and "no suite 'missing'" in err


def test_validate_prints_the_lint_summary_and_the_first_warnings(demo_copy, monkeypatch, capsys):
    monkeypatch.chdir(demo_copy)
    code, out, _ = run(["validate", "--suite", "coding_agent", "--data-dir", "data"], capsys)
    assert code == 0
    lines = out.splitlines()
    start = next(i for i, text in enumerate(lines) if text.startswith("lint: "))
    assert (
        lines[start] == "lint: 9 warnings (1 similar_descriptions, 8 description_names_tool) in 1 catalog of 10 "
        "distinct tools"
    )
    assert len(lines[start + 1 : start + 6]) == 5
    assert lines[start + 6] == "... 4 more (toolchoice lint --suite coding_agent --max 0, or --json)"
    assert lines[start + 7].startswith("judge canary ")


@pytest.mark.slow
def test_lint_imports_neither_litellm_nor_dagster_nor_duckdb(repo_data_dir):
    probe = (
        "import sys\nfrom toolchoice_pipeline.cli import main\n"
        "try:\n    main(['lint', '--data-dir', sys.argv[1]])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('litellm', 'dagster', 'duckdb') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(repo_data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


# --- property test: any valid catalog --------------------------------------------------------------------------

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=80)
_value = st.one_of(
    st.integers(-5, 5), st.text(max_size=4), st.booleans(), st.none(), st.floats(allow_nan=False, allow_infinity=False)
)


def _schema(depth: int):
    leaf = st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "integer", "number", "boolean"])},
        optional={"description": _text, "enum": st.lists(_value, min_size=1, max_size=5, unique_by=repr)},
    )
    if depth == 0:
        return leaf
    nested = st.fixed_dictionaries(
        {
            "type": st.just("object"),
            "properties": st.dictionaries(st.text(min_size=1, max_size=8), _schema(depth - 1), max_size=3),
        },
        optional={"description": _text},
    )
    array = st.fixed_dictionaries(
        {"type": st.just("array"), "items": _schema(depth - 1)}, optional={"description": _text}
    )
    return st.one_of(leaf, nested, array)


_tool = st.builds(
    lambda name, description, properties: ToolDefinition(
        name=name, description=description, parameters={"type": "object", "properties": properties}
    ),
    st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=20),
    _text,
    st.dictionaries(st.text(min_size=1, max_size=8), _schema(2), max_size=4),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_tool, max_size=8, unique_by=lambda tool: tool.name))
def test_lint_never_crashes_on_a_valid_catalog(tools):
    warnings = lint_catalog(tools, file="c.yaml")
    names = {tool.name for tool in tools}
    for warning in warnings:
        assert warning.kind in WARNING_KINDS and warning.tool in names and warning.file == "c.yaml"
        assert warning.field.startswith("[")
        if warning.other_tool is not None:
            assert warning.other_tool in names and warning.other_tool != warning.tool
        if warning.similarity is not None:
            assert 0.0 <= warning.similarity <= 1.0 + 1e-6


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_tool, min_size=1, max_size=4, unique_by=lambda tool: tool.name), min_size=1, max_size=6))
def test_inline_catalogs_lint_once_per_distinct_catalog_and_count_every_task(catalogs):
    tasks = [
        {
            "id": f"t{index}",
            "messages": [{"role": "user", "content": "q"}],
            "expected": {"tool": tools[0].name},
            "tools": [tool.as_dict() for tool in tools],
        }
        for index, tools in enumerate(catalogs + catalogs[:2])  # two catalogs repeated
    ]
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = write_suite(Path(tmp), "[]\n", tasks=tasks)
        report = lint_suite(load_suite(data_dir, "crafted"))
    distinct = {tuple(tool.definition_hash for tool in tools) for tools in catalogs}
    assert report.catalogs == len(distinct)
    for warning in report.warnings:
        assert warning.file.endswith("crafted/tasks.jsonl") and 1 <= warning.line <= len(tasks)
        assert warning.field.startswith("tools[")
        # a warning found once per task holding that tool (or pair) is reported once, its other tasks in `also`
        holders = [task for task in tasks if any(tool["name"] == warning.tool for tool in task["tools"])]
        assert 0 <= warning.also < len(holders)
    per_task = {
        (w.kind, w.tool, w.other_tool, w.field, w.message)
        for index, tools in enumerate(catalogs)
        for w in lint_catalog(tools)
        if w.kind not in PAIR_KINDS
    }
    reported = {(w.kind, w.tool, w.other_tool, w.field.split(".", 1)[-1], w.message) for w in report.warnings}
    for kind, tool, other, field, message in per_task:
        assert (kind, tool, other, field.split(".", 1)[-1], message) in reported
