"""Held-out suite mistakes for ``toolchoice validate``, written by someone who did not write its checks.

A different clean suite than ``test_validate_schema_mistakes.py``'s: a flight-booking tool whose parameters nest
arrays of objects (``passengers[].age``, ``passengers[].seat.row``), ``anyOf``, ``oneOf``, ``const``,
``multipleOf``, exclusive bounds and ``additionalProperties: false`` at depth. Each case makes one mistake that
no valid call can ever match (or that makes the suite ambiguous) and must be named on the right file, line and
field with exit 2.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolchoice_pipeline.cli import cli, run_guarded

BOOK = {
    "name": "book_flight",
    "description": "Book a flight for one or more passengers.",
    "parameters": {
        "type": "object",
        "properties": {
            "flight_no": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{1,4}$"},
            "passengers": {
                "type": "array",
                "minItems": 1,
                "maxItems": 9,
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "minLength": 2},
                        "age": {"type": "integer", "exclusiveMinimum": 0, "maximum": 120},
                        "seat": {
                            "type": "object",
                            "properties": {
                                "row": {"type": "integer", "minimum": 1},
                                "letter": {"type": "string", "enum": ["A", "B", "C", "D"]},
                            },
                            "additionalProperties": False,
                        },
                    },
                    "required": ["name"],
                },
            },
            "cabin": {"anyOf": [{"type": "string", "enum": ["economy", "business"]}, {"type": "null"}]},
            "when": {"oneOf": [{"type": "string", "format": "date"}, {"type": "integer", "minimum": 0}]},
            "currency": {"const": "EUR"},
            "bags": {"type": "integer", "multipleOf": 1, "minimum": 0, "exclusiveMaximum": 4},
            "extras": {
                "type": "object",
                "properties": {"meal": {"type": "string", "enum": ["veg", "standard"]}},
                "additionalProperties": False,
            },
        },
        "required": ["flight_no", "passengers"],
    },
}
STATUS = {
    "name": "flight_status",
    "description": "Departure status of one flight.",
    "parameters": {"type": "object", "properties": {"flight_no": {"type": "string"}}, "required": ["flight_no"]},
}


def _task(task_id: str, text: str, tool: str | None, arguments: dict | None = None, **extra: Any) -> dict:
    line = {
        "id": task_id,
        "messages": [{"role": "user", "content": text}],
        "expected": {"tool": tool, "arguments": arguments or {}},
    }
    line.update(extra)
    return line


def clean() -> dict[str, Any]:
    return {
        "catalog": [copy.deepcopy(BOOK), copy.deepcopy(STATUS)],
        "tasks": [
            _task("status-1", "Is AF12 on time?", "flight_status", {"flight_no": "AF12"}),
            _task(
                "book-1",
                "Book AF12 for Ana (34), seat 12C, economy, 2 bags",
                "book_flight",
                {
                    "flight_no": "AF12",
                    "passengers": {"value": [{"name": "Ana", "age": 34, "seat": {"row": 12, "letter": "C"}}]},
                },
            ),
        ],
        "suite": {"name": "flights", "catalog": "catalog.yaml", "tasks": "tasks.jsonl", "match_profile": "key_args"},
        "config": {"models": [{"model": "local/bm25-router"}], "judge": {"model": "local/catalog-judge"}},
    }


def _write(data_dir: Path, suite: dict[str, Any]) -> None:
    directory = data_dir / "suites" / "flights"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "suite.yaml").write_text(yaml.safe_dump(suite["suite"], sort_keys=False))
    (directory / "catalog.yaml").write_text(yaml.safe_dump(suite["catalog"], sort_keys=False))
    (directory / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in suite["tasks"]))
    (data_dir / "toolchoice.yaml").write_text(yaml.safe_dump(suite["config"], sort_keys=False))


def _validate(data_dir: Path, capsys) -> tuple[int, list[str]]:
    code = run_guarded(cli, ["validate", "--suite", "flights", "--data-dir", str(data_dir)])
    return code, capsys.readouterr().err.splitlines()


def _book_args(**change: Any) -> Callable[[dict], None]:
    def mutate(suite: dict) -> None:
        suite["tasks"][1]["expected"]["arguments"].update(change)

    return mutate


def _passenger(**change: Any) -> Callable[[dict], None]:
    def mutate(suite: dict) -> None:
        passenger = {"name": "Ana", "age": 34, "seat": {"row": 12, "letter": "C"}}
        passenger.update(change)
        passenger = {key: value for key, value in passenger.items() if value is not None}
        suite["tasks"][1]["expected"]["arguments"]["passengers"] = {"value": [passenger]}

    return mutate


def _duplicate_tool(suite: dict) -> None:
    suite["catalog"].append(copy.deepcopy(STATUS))


def _duplicate_task(suite: dict) -> None:
    suite["tasks"].append(_task("status-1", "Is BA7 on time?", "flight_status", {"flight_no": "BA7"}))


def _calls_with_absent_tool(suite: dict) -> None:
    suite["suite"]["match_profile"] = "bfcl"
    task = suite["tasks"][0]
    task["expected"]["calls"] = [
        {"tool": "flight_status", "arguments": {"flight_no": "AF12"}},
        {"tool": "cancel_flight", "arguments": {"flight_no": "AF12"}},
    ]


def _calls_first_out_of_order(suite: dict) -> None:
    suite["suite"]["match_profile"] = "bfcl"
    task = suite["tasks"][0]
    task["expected"]["calls"] = [
        {"tool": "flight_status", "arguments": {"flight_no": "BA7"}},
        {"tool": "flight_status", "arguments": {"flight_no": "AF12"}},
    ]


def _expected_tool_absent(suite: dict) -> None:
    suite["tasks"][0]["expected"] = {"tool": "flightStatus", "arguments": {}}


@dataclass(frozen=True)
class Mistake:
    name: str
    mutate: Callable[[dict], None]
    file: str  # the file the error line names
    line: int | None  # its line (None: the file's own, e.g. a catalog entry found by name)
    field: str  # a piece of the field path the line names


MISTAKES = [
    Mistake("nested array item of the wrong type", _passenger(age="thirty"), "tasks.jsonl", 2, "passengers"),
    Mistake("enum in a nested property", _passenger(seat={"row": 12, "letter": "F"}), "tasks.jsonl", 2, "passengers"),
    Mistake("minLength in an array item", _passenger(name="A"), "tasks.jsonl", 2, "passengers"),
    Mistake("exclusiveMinimum in an array item", _passenger(age=0), "tasks.jsonl", 2, "passengers"),
    Mistake(
        "additionalProperties false, nested",
        _passenger(seat={"row": 3, "window": True}),
        "tasks.jsonl",
        2,
        "passengers",
    ),
    Mistake("pattern", _book_args(flight_no="af12"), "tasks.jsonl", 2, "flight_no"),
    Mistake("anyOf with no branch", _book_args(cabin="first"), "tasks.jsonl", 2, "cabin"),
    Mistake("oneOf with no branch", _book_args(when=True), "tasks.jsonl", 2, "when"),
    Mistake("const", _book_args(currency="USD"), "tasks.jsonl", 2, "currency"),
    Mistake("exclusiveMaximum", _book_args(bags=4), "tasks.jsonl", 2, "bags"),
    Mistake("multipleOf", _book_args(bags=1.5), "tasks.jsonl", 2, "bags"),
    Mistake(
        "additionalProperties false with an extra key",
        _book_args(extras={"value": {"meal": "veg", "pet": "cat"}}),
        "tasks.jsonl",
        2,
        "extras",
    ),
    Mistake(
        "any_of alternatives all outside the enum",
        _book_args(cabin={"any_of": ["first", "premium"]}),
        "tasks.jsonl",
        2,
        "cabin",
    ),
    Mistake("regex on an integer parameter", _book_args(bags={"regex": "^[0-3]$"}), "tasks.jsonl", 2, "bags"),
    Mistake("expected tool absent from the catalog", _expected_tool_absent, "tasks.jsonl", 1, "expected.tool"),
    Mistake(
        "expected.calls naming a tool absent from the catalog",
        _calls_with_absent_tool,
        "tasks.jsonl",
        1,
        "expected.calls[1]",
    ),
    Mistake(
        "expected.calls whose first is not expected.tool", _calls_first_out_of_order, "tasks.jsonl", 1, "expected.calls"
    ),
    Mistake(
        "a required nested property left out of a whole value", _passenger(name=None), "tasks.jsonl", 2, "passengers"
    ),
    Mistake(
        "an array value over maxItems",
        _book_args(passengers={"value": [{"name": f"P{i}x"} for i in range(10)]}),
        "tasks.jsonl",
        2,
        "passengers",
    ),
    Mistake("enum differing only in case", _passenger(seat={"row": 2, "letter": "c"}), "tasks.jsonl", 2, "passengers"),
    Mistake("duplicate tool names", _duplicate_tool, "catalog.yaml", None, "flight_status"),
    Mistake("duplicate task ids", _duplicate_task, "tasks.jsonl", 3, "id"),
]


@pytest.mark.parametrize("mistake", MISTAKES, ids=[m.name for m in MISTAKES])
def test_validate_names_each_held_out_mistake(mistake, tmp_path, capsys):
    suite = clean()
    mistake.mutate(suite)
    _write(tmp_path, suite)
    code, err = _validate(tmp_path, capsys)
    assert code == 2, err
    where = f"{mistake.file}:{mistake.line}:" if mistake.line is not None else f"{mistake.file}:"
    named = [line for line in err if line.startswith("error:") and where in line and mistake.field in line]
    assert named, err
    assert not any("Traceback" in line for line in err)


def test_the_clean_held_out_suite_passes(tmp_path, capsys):
    _write(tmp_path, clean())
    code, err = _validate(tmp_path, capsys)
    assert code == 0, err
    assert not [line for line in err if line.startswith("error:")]
