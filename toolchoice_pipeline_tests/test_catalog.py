"""Catalog versioning (DESIGN §2), diffs and the live-catalog merge."""

import hashlib
import json

from toolchoice_pipeline.suites.catalog import ToolDefinition, catalog_version, diff_catalogs, merge_live
from toolchoice_pipeline.suites.catalog_files import parse_tool_dump, schema_problems
from toolchoice_pipeline_tests.conftest import CASES

TOOLS = [ToolDefinition.model_validate(t) for t in json.loads((CASES / "catalog.json").read_text())]


def test_catalog_version_is_sha256_of_canonical_json_sorted_by_name():
    ordered = sorted((t.as_dict() for t in TOOLS), key=lambda t: t["name"])
    text = json.dumps(ordered, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert catalog_version(TOOLS) == hashlib.sha256(text.encode()).hexdigest()[:12]


def test_catalog_version_ignores_order_but_not_descriptions():
    assert catalog_version(list(reversed(TOOLS))) == catalog_version(TOOLS)
    changed = [t.model_copy(update={"description": t.description + "!"}) if t.name == "Read" else t for t in TOOLS]
    assert catalog_version(changed) != catalog_version(TOOLS)


def test_diff_names_added_removed_and_changed_tools():
    new = [t for t in TOOLS if t.name != "Task"]
    new = [t.model_copy(update={"description": "x"}) if t.name == "Read" else t for t in new]
    new = [t.model_copy(update={"parameters": {"type": "object"}}) if t.name == "Bash" else t for t in new]
    new.append(ToolDefinition(name="mcp__github__search", description="Search GitHub"))
    diff = diff_catalogs(TOOLS, new)
    assert (diff.added, diff.removed, diff.description_changed, diff.parameters_changed) == (
        ["mcp__github__search"],
        ["Task"],
        ["Read"],
        ["Bash"],
    )


def test_live_dump_merges_under_curated_catalog_and_curated_wins():
    dump = parse_tool_dump(
        {
            "tools": [
                {"name": "Read", "description": "live Read", "inputSchema": {"type": "object"}},
                {"name": "mcp__db__query", "description": "Run SQL", "inputSchema": {"type": "object"}},
            ]
        },
        "dump.json",
    )
    merged = merge_live(TOOLS, dump)
    by_name = {t.name: t for t in merged}
    assert by_name["Read"].description == next(t for t in TOOLS if t.name == "Read").description
    assert "mcp__db__query" in by_name and len(merged) == len(TOOLS) + 1
    assert catalog_version(merged) != catalog_version(TOOLS)


def test_openai_tools_dump_shape_is_accepted():
    dump = parse_tool_dump([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}], "d")
    assert dump == [ToolDefinition(name="f", description="", parameters={"type": "object"})]


def test_a_schema_checked_again_is_judged_as_it_is_now():
    """The meta-schema check is remembered per schema: an edited schema is checked afresh, and a caller changing
    the problems it got back does not change what the next caller gets."""
    parameters = {"type": "object", "properties": {"n": {"type": "int"}}}
    bad_type = [
        (
            ("properties", "n", "type"),
            "not a valid JSON Schema: 'int' is not a JSON Schema type "
            "(use one of array, boolean, integer, null, number, object, string)",
        )
    ]
    first = schema_problems(parameters)
    assert first == bad_type
    first.clear()
    assert schema_problems(parameters) == bad_type
    parameters["properties"]["n"]["type"] = "integer"
    assert schema_problems(parameters) == []
    parameters["type"] = "array"
    assert schema_problems(parameters) == [
        (("type",), 'the top level of parameters must be a JSON Schema object with "type": "object" (found "array")')
    ]
