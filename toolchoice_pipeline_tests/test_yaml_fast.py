"""The rapidyaml reading of YAML input files (util/yaml_fast.py) gives exactly PyYAML's values, or declines.

PyYAML's safe loader (YAML 1.1) is what every input file has always been read with; rapidyaml (YAML 1.2, its own
scalar resolution) is only a faster way to the same values. Each document below is read both ways: the fast
reading must either decline or equal PyYAML's value, types included, and never accept what PyYAML refuses.
"""

from __future__ import annotations

import math
import os
import random
from typing import Any

import pytest
import yaml

from toolchoice_pipeline.suites.catalog_files import load_catalog_file, write_catalog_file
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline.util.yaml_fast import DECLINED, _stderr_held, load_yaml_fast
from toolchoice_pipeline.util.yaml_lines import MAX_NODES, load_yaml

# Scalars whose reading differs between YAML 1.1 and 1.2, or between PyYAML and rapidyaml's JSON emitter.
SCALARS = [
    *"yes no on off Yes NO True FALSE true false y n Y N ~ null Null NULL".split(),
    *"0 -0 +0 1 -1 +1 017 0o17 0x1F 0b101 1_000 1:20 1:20.5 190:20:30 00 09 08.5 1.2.3".split(),
    *"0.5 .5 -.5 +.5 5. -5. 0. .0 -0.0 1e3 1E3 1.0e3 1.0e+3 1.0E-3 -1.5e+3 .5e+3 -.5e+3 1.e3 12e03".split(),
    *".inf -.inf +.inf .Inf .INF .nan .NaN inf nan Infinity NaN 1e999 1.0e+999".split(),
    "123456789012345678901234567890",
    *"2001-12-14 2001-12-14t21:59:43.10-05:00 << = ! & * - -- -a a-b @x `x %x #x".split(),
    "2001-12-14 21:59:43.10 -5",
    "a b",
    "a:b",
    "a: b",
    "x #y",
    "'q'",
    '"q"',
    "'yes'",
    '"yes"',
    '"1"',
    "'1.5'",
    '""',
    "''",
    '"\\t"',
    '"a\\tb"',
    '"\\x41"',
    '"\\u00e9"',
    '"\\N"',
    '"\\_"',
    "'it''s'",
    '"\\""',
    "é",
    "日本",
    "[1, 2]",
    "{a: 1}",
    "[]",
    "{}",
    "!!str 1",
    '!!int "3"',
    "!!float 1",
    "!!bool yes",
    "!!null ''",
    "!custom x",
    "&a 1",
    "*a",
    "? x",
    "> x",
    "| x",
    "'multi\n  line'",
    '"multi\n  line"',
    "plain\n  continued",
]
CONTEXTS = [
    "a: {s}\n",
    "- {s}\n",
    "{s}: v\n",
    "[{s}, x]\n",
    "{{k: {s}}}\n",
    "a:\n  b: {s}\n  c: 2\n",
    "- a: {s}\n  b: [{s}]\n",
    "{s}\n",
    "---\n{s}\n",
]
DOCUMENTS = [
    "a: 1\na: 2\n",
    "{a: 1, a: 2}\n",
    "a: &x [1]\nb: *x\n",
    "<<: {a: 1}\nb: 2\n",
    "a: 1\n---\nb: 2\n",
    "",
    "# only a comment\n",
    "---\n",
    "...\n",
    "a:\tb\n",
    "a:\n\t- 1\n",
    "a: b: c\n",
    "- a\n - b\n",
    "a: |\n  x\n  y\n",
    "a: >\n  x\n  y\n\n  z\n",
    "a: |-\n  x\n",
    "a: |+\n  x\n\n",
    "a: |2\n   x\n",
    "? [1, 2]\n: x\n",
    "a: \x7f\n",
    'a: "\x01"\n',
    "\ufeffa: 1\n",
    "a: 1\r\nb: 2\r\n",
    "%YAML 1.1\n---\na: 1\n",
    "%YAML 1.2\n---\na: yes\n",
    "%TAG ! tag:x,2000:\n---\na: 1\n",
    "a: 'unterminated\n",
    "a: [1, 2\n",
    "- [a, b]: c\n",
    "a: - b\n",
    "a: 'x'y\n",
    "a: !!binary aGk=\n",
    "a: !<tag:yaml.org,2002:str> 1\n",
    "x: {a: , b: 1}\n",
    'a: "x\\\n  y"\n',
    "a: -0.5\nb: text -.5\n",
    "a: x # comment\n",
    "{a: x #y}\n",
    "[a #b\n, c]\n",
    "a: 'x #y'\n",
    "a: >\n  x # not a comment\n",
    "a: b\n  c: d\n",
    "[a: b]\n",
    "{a:b}\n",
    '{"a":b}\n',
    'a: "\\L\\P\\e\\a\\v\\0"\n',
    'a: "\\U0001F600"\n',
    "a: [" * 70 + "]" * 70 + "\n",
]


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types all the way down (1 is not 1.0 nor True; -0.0 is not 0.0; nan is nan)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def pyyaml(text: str) -> tuple[str, Any]:
    try:
        return "ok", yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError as exc:
        return "error", type(exc).__name__


def check_against_pyyaml(text: str) -> bool:
    """Assert the fast reading declines or equals PyYAML's; True when it was used."""
    got = load_yaml_fast(text, MAX_NODES)
    if got is DECLINED:
        return False
    outcome, expected = pyyaml(text)
    assert outcome == "ok", f"{text!r}: PyYAML refuses it ({expected}), the fast reading gave {got!r}"
    assert same(got, expected), f"{text!r}: PyYAML {expected!r}, fast {got!r}"
    return True


def test_tricky_scalars_in_every_context_read_as_pyyaml_reads_them_or_decline():
    documents = [context.format(s=s) for s in SCALARS for context in CONTEXTS] + DOCUMENTS
    used = sum(check_against_pyyaml(text) for text in documents)
    assert 0 < used < len(documents)  # both ways are exercised


@pytest.mark.parametrize(
    "text",
    [
        "a: yes\n",  # True in YAML 1.1, a string for rapidyaml
        "a: 1e3\n",  # a string in YAML 1.1, a number for rapidyaml
        "a: -.5\n",  # a string in YAML 1.1, -0.5 for rapidyaml
        "a: 017\n",  # octal 15 in YAML 1.1
        "a: ~\n",
        "a: &x [1]\nb: *x\n",
        "a: !!str 1\n",
        "a: 1\na: 2\n",
        "a:\tb\n",
        "{a: x #y}\n",
        "a: @x\n",
        "a: 1\n---\nb: 2\n",
    ],
)
def test_documents_read_differently_by_yaml_1_2_are_declined(text):
    assert load_yaml_fast(text, MAX_NODES) is DECLINED


def test_generated_documents_in_every_style_read_as_pyyaml_reads_them():
    rng = random.Random(13)
    words: list[Any] = [s for s in SCALARS if "\n" not in s]
    words += ["tool_1", "Reads a file: path", "-x", "#x", "x#", "'", '"', "\\", "\t", " lead", "trail ", "a\nb"]
    words += ["", " ", 7, -3, 0.25, 1e20, -0.0, True, None, 123456789012345678901234567890]

    def value(depth: int) -> Any:
        roll = rng.random()
        if depth > 3 or roll < 0.4:
            return rng.choice(words)
        if roll < 0.7:
            return [value(depth + 1) for _ in range(rng.randint(0, 4))]
        return {str(rng.choice(words)): value(depth + 1) for _ in range(rng.randint(0, 4))}

    used = 0
    for _ in range(1500):
        text = yaml.safe_dump(
            value(0),
            default_flow_style=rng.choice([None, False, True]),
            default_style=rng.choice([None, None, "'", '"', "|", ">"]),
            allow_unicode=rng.random() < 0.5,
            width=rng.choice([20, 80, 1000]),
        )
        used += check_against_pyyaml(text)
    assert used > 300


def catalog_text(n: int) -> str:
    """A catalog shaped like benchmarks/catalog/run.py's, as block YAML."""
    tools = [
        {
            "name": f"tool_{i:05d}",
            "description": f"Tool number {i}: reads record kind {i % 97}. It cannot delete anything.",
            "parameters": {
                "type": "object",
                "properties": {
                    "record_id": {"type": "string", "pattern": "^[a-z0-9-]{1,40}$"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 500, "multipleOf": 0.5},
                    "mode": {"type": "string", "enum": ["fast", "full", "dry_run"]},
                },
                "required": ["record_id"],
                "additionalProperties": False,
            },
        }
        for i in range(n)
    ]
    return yaml.safe_dump(tools, sort_keys=False)


def test_a_block_yaml_catalog_takes_the_fast_reading_and_loads_as_before(tmp_path):
    text = catalog_text(300)
    assert check_against_pyyaml(text)  # read by rapidyaml, and equal to PyYAML's reading
    path = tmp_path / "catalog.yaml"
    path.write_text(text, encoding="utf-8")
    tools = load_catalog_file(path)
    assert [t.name for t in tools] == [f"tool_{i:05d}" for i in range(300)]
    assert tools[7].parameters["properties"]["limit"]["multipleOf"] == 0.5


def test_a_problem_in_a_fast_read_catalog_still_names_its_line_and_field(tmp_path):
    text = catalog_text(50).replace("type: integer", "type: integr", 1)
    path = tmp_path / "catalog.yaml"
    path.write_text(text, encoding="utf-8")
    assert load_yaml_fast(text, MAX_NODES) is not DECLINED
    with pytest.raises(InputError) as caught:
        load_catalog_file(path)
    (problem,) = caught.value.problems
    expected_line = text.splitlines().index("        type: integr") + 1
    assert (problem.line, problem.field) == (expected_line, "[0].parameters.properties.limit.type")


def test_a_repeated_key_is_refused_with_both_lines(tmp_path):
    path = tmp_path / "suite.yaml"
    path.write_text("name: s\npolls: 3\nname: t\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_yaml(path)
    (problem,) = caught.value.problems
    assert (problem.line, problem.field) == (3, "name")
    assert "first on line 1" in problem.message


def test_rapidyaml_prints_nothing_of_its_own_for_bad_yaml(tmp_path, capfd):
    path = tmp_path / "suite.yaml"
    path.write_text("a: b: c\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_yaml(path)
    assert caught.value.problems[0].line == 1
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_more_nodes_than_the_limit_are_left_to_the_limit_check(tmp_path):
    text = "- 1\n" * 20
    assert load_yaml_fast(text, 10) is DECLINED
    assert load_yaml_fast(text, 100) == [1] * 20


def test_a_catalog_this_project_writes_takes_the_fast_reading(tmp_path):
    path = tmp_path / "catalog.yaml"
    path.write_text(catalog_text(20), encoding="utf-8")
    tools = load_catalog_file(path)
    again = tmp_path / "again.yaml"
    write_catalog_file(again, tools)
    assert load_yaml_fast(again.read_text(encoding="utf-8"), MAX_NODES) is not DECLINED
    assert load_catalog_file(again) == tools


def test_other_writes_to_stderr_while_rapidyaml_runs_are_kept_and_its_own_report_dropped(capfd):
    with _stderr_held():
        os.write(2, b"another thread's line\n")
        os.write(2, b"line=1 col=7 (6B): ERROR: [parse] two colons on same line\n")
        os.write(2, b"/project/cpp/src/c4/yml/parse_engine.def.hpp:4335: (detected here)\n")
        assert capfd.readouterr().err == ""  # held until rapidyaml is done
    assert capfd.readouterr().err == "another thread's line\n"
