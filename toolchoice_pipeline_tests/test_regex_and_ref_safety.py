"""User regexes never hang a run and ``$ref`` s resolve only inside the schema.

- A pathological matcher regex (``(a+)+$``) and a schema ``pattern`` like it are evaluated on RE2 in linear
  time: checked in a subprocess with a generous time-out, so a backtracking engine would fail the test by
  hanging (about 2^100 steps here) rather than by a timed assertion.
- A lookaround regex is refused by ``toolchoice validate`` (exit 2, file, line and field).
- Remote, circular and dangling ``$ref`` s in a catalog are ``validate`` errors naming file, line and field;
  a remote ``$ref`` met by the judge is never retrieved (a server on 127.0.0.1 counts requests).
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import yaml

from toolchoice_pipeline.cli import cli
from toolchoice_pipeline.cli.common import run_guarded
from toolchoice_pipeline.providers.offline_judge.arguments import schema_problems as judge_schema_problems
from toolchoice_pipeline.suites.catalog_files import schema_problems as catalog_schema_problems

EVIL = "^(a+)+$"
VICTIM = "a" * 100 + "!"


def _run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_a_pathological_matcher_regex_finishes_and_does_not_match():
    done = _run_python(
        "from toolchoice_pipeline.scoring.matching.key_args import key_argument_mismatch\n"
        f"print(key_argument_mismatch({{'q': {{'regex': {EVIL!r}}}}}, {{'q': {VICTIM!r}}}))\n"
        f"print(key_argument_mismatch({{'q': {{'regex': {EVIL!r}}}}}, {{'q': 'aaaa'}}))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["key argument 'q' does not match", "None"]


def test_a_pathological_schema_pattern_finishes_and_fails_only_that_argument():
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string", "pattern": EVIL}},
        "patternProperties": {EVIL: {"type": "string"}},
    }
    done = _run_python(
        "from toolchoice_pipeline.providers.offline_judge.arguments import schema_problems\n"
        f"print([p.message for p in schema_problems({schema!r}, {{'q': {VICTIM!r}, {VICTIM!r}: 1}})])"
    )
    assert done.returncode == 0, done.stderr
    assert f"q: '{VICTIM}' does not match '{EVIL}'" in done.stdout
    assert done.stdout.count("does not match") == 1  # the pattern property key did not match either


def _catalog_with(demo_copy, parameters: dict) -> None:
    path = demo_copy / "data" / "suites" / "coding_agent" / "catalog.yaml"
    tools = yaml.safe_load(path.read_text())
    tools.append({"name": "Fetch", "description": "Fetch a thing by its id.", "parameters": parameters})
    path.write_text(yaml.safe_dump(tools, sort_keys=False))


def _validate_errors(demo_copy) -> tuple[int, list[str]]:
    """``toolchoice validate`` run in this process from ``demo_copy`` (a refusal needs no process of its own)."""
    shown = io.StringIO()
    with contextlib.chdir(demo_copy), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(shown):
        code = run_guarded(cli, ["validate", "--suite", "coding_agent", "--data-dir", "data"])
    assert "Traceback" not in shown.getvalue()
    return code, shown.getvalue().splitlines()


def test_validate_refuses_a_remote_ref_naming_file_line_and_field(demo_copy):
    _catalog_with(demo_copy, {"type": "object", "properties": {"id": {"$ref": "https://example.invalid/id.json"}}})
    code, errors = _validate_errors(demo_copy)
    assert code == 2
    assert len(errors) == 1 and errors[0].startswith("error: data/suites/coding_agent/catalog.yaml:")
    assert ": [10].parameters.properties.id.$ref: $ref 'https://example.invalid/id.json' points outside" in errors[0]


def test_validate_refuses_circular_and_dangling_refs(demo_copy):
    _catalog_with(
        demo_copy,
        {
            "type": "object",
            "properties": {"id": {"$ref": "#/$defs/a"}, "tag": {"$ref": "#/$defs/missing"}},
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        },
    )
    code, errors = _validate_errors(demo_copy)
    assert code == 2
    assert any(
        "[10].parameters.properties.id.$ref: $ref '#/$defs/a' is circular (#/$defs/a -> #/$defs/b -> #/$defs/a)" in e
        for e in errors
    )
    assert any("[10].parameters.properties.tag.$ref: $ref '#/$defs/missing' resolves to nothing" in e for e in errors)
    assert all(e.startswith("error: data/suites/coding_agent/catalog.yaml:") for e in errors)


def test_a_recursive_schema_that_consumes_input_is_fine():
    tree = {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}
    assert catalog_schema_problems(tree) == []
    assert judge_schema_problems(tree, {"children": [{"children": []}]}) == []


def test_validate_refuses_a_lookaround_pattern_in_a_schema(demo_copy):
    _catalog_with(demo_copy, {"type": "object", "properties": {"id": {"type": "string", "pattern": "(?<!x)y"}}})
    code, errors = _validate_errors(demo_copy)
    assert code == 2 and len(errors) == 1
    assert '[10].parameters.properties.id.pattern: regex "(?<!x)y" does not compile: invalid perl operator' in errors[0]


def test_the_judge_never_retrieves_a_remote_ref():
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server name
            requests.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"type": "integer"}')

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/id.json"
        problems = judge_schema_problems({"type": "object", "properties": {"id": {"$ref": url}}}, {"id": 1})
    finally:
        server.shutdown()
    assert requests == []
    assert [p.message for p in problems] == [
        f"the tool's parameter schema cannot be used ($ref '{url}' does not resolve inside the schema)"
    ]
