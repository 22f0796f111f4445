"""A pretty-printed OTel export is streamed (issue 29): its spans and log records come out one at a time and equal,
record for record, what the JSON Lines form of the same export gives, whatever the order of the keys (a scope
written after its spans); strict JSON holds (a repeated key, an overflowing number are refused, naming the file
and the line). Real traces of every producer the project reads, written back at test time in both forms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolchoice_pipeline.ingest.jsonl import Warnings
from toolchoice_pipeline.ingest.otlp_json import documents, records
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline_tests.test_ingest_otel_producers import PRODUCERS, files


def read_records(path: Path) -> list[tuple]:
    warnings = Warnings()
    found = [
        (r.kind, r.trace_id, r.span_id, r.scope, r.time, json.dumps(r.data, sort_keys=True), r.attributes)
        for payload, line in documents(path, path.name, warnings)
        for r in records(payload, line)
    ]
    assert warnings.count == 0
    return found


def scope_last(value):
    """``value`` with every ``scope`` key moved after the other keys of its object (spans before their scope)."""
    if isinstance(value, dict):
        moved = {key: scope_last(item) for key, item in value.items() if key != "scope"}
        if "scope" in value:
            moved["scope"] = scope_last(value["scope"])
        return moved
    if isinstance(value, list):
        return [scope_last(item) for item in value]
    return value


@pytest.mark.parametrize("fixture", sorted(PRODUCERS))
@pytest.mark.parametrize("order", ["as-written", "scope-last"])
def test_a_pretty_printed_export_gives_the_records_of_its_json_lines_form(tmp_path, fixture, order):
    lines = tmp_path / "export.jsonl"
    pretty = tmp_path / "export.json"
    payloads = [json.loads(line) for path in files(fixture) for line in path.read_text().splitlines() if line.strip()]
    if order == "scope-last":
        payloads = [scope_last(payload) for payload in payloads]
    lines.write_text("".join(json.dumps(payload) + "\n" for payload in payloads))
    pretty.write_text("\n".join(json.dumps(payload, indent=2) for payload in payloads) + "\n")
    expected = read_records(lines)
    assert expected  # every producer's export holds spans or log records
    assert read_records(pretty) == expected


@pytest.mark.parametrize(
    ("inside_a_span", "message"),
    [
        ('"name": "a", "name": "b"', 'duplicate key "name"'),
        ('"startTimeUnixNano": 1e999', "1e999"),
        ('"name": NaN', "NaN is not valid JSON"),
        ('"name": "a",', "line 5"),  # a syntax error: the decoder names the line
    ],
)
def test_a_pretty_printed_export_that_is_not_strict_json_is_refused_naming_why(tmp_path, inside_a_span, message):
    pretty = tmp_path / "bad.json"
    body = '{\n  "resourceSpans": [\n    {"scopeSpans": [\n      {"spans": [\n        {' + inside_a_span + "}\n"
    pretty.write_text(body + "      ]}\n    ]}\n  ]\n}\n")
    with pytest.raises(InputError) as refused:
        list(documents(pretty, "bad.json", Warnings()))
    [problem] = refused.value.problems
    shown = str(problem)
    assert shown.startswith("bad.json") and "not OTLP JSON: " in shown
    assert message in (shown if message != "line 5" else f"line {problem.line}"), shown
