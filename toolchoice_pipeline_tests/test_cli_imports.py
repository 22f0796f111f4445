"""Imports that cost what they use: the CLI's start, ``toolchoice --help``, ``validate`` and ``schema`` load
neither LiteLLM, Dagster, DuckDB, NumPy nor Arrow (checked in a fresh interpreter: this process has imported them already)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from toolchoice_pipeline.cli import COMMANDS, cli, load_command

REPO_DATA = Path(__file__).resolve().parents[1] / "data"
# numpy and pyarrow too: the release-table modules brought them into every start before commands were lazy
HEAVY = ("litellm", "dagster", "duckdb", "numpy", "pyarrow")

PROBE = textwrap.dedent(
    """
    import contextlib, io, json, sys

    heavy = {heavy!r}
    loaded = {{}}

    def step(name, argv):
        from toolchoice_pipeline.cli import main
        if argv is not None:
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                try:
                    main(argv)
                except SystemExit as exc:
                    loaded[name + " exit"] = exc.code
            loaded[name + " output"] = out.getvalue()
        loaded[name] = sorted(m for m in sys.modules if m.split(".")[0] in heavy)

    import toolchoice_pipeline
    loaded["import toolchoice_pipeline"] = sorted(m for m in sys.modules if m.split(".")[0] in heavy)
    step("import cli", None)
    step("--help", ["--help"])
    step("validate", ["validate", "--suite", "coding_agent", "--data-dir", {data!r}])
    step("schema", ["schema", "task"])
    print(json.dumps(loaded))
    """
)


@pytest.mark.slow
def test_cli_start_help_validate_and_schema_never_import_litellm_dagster_duckdb_or_arrow():
    code = PROBE.format(heavy=HEAVY, data=str(REPO_DATA))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env={**os.environ})
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.splitlines()[-1])
    # the commands really ran: --help listed the commands, validate read the demo suite, schema printed JSON
    assert loaded["--help exit"] == 0 and "validate" in loaded["--help output"]
    assert loaded["validate exit"] == 0 and "suite coding_agent:" in loaded["validate output"]
    assert loaded["schema exit"] == 0 and json.loads(loaded["schema output"])["type"] == "object"
    for step in ("import toolchoice_pipeline", "import cli", "--help"):
        assert loaded[step] == [], f"{step} imported {loaded[step]}"
    # validate runs the catalog lint, whose TF-IDF similarity is NumPy's (schema runs after it in this process)
    for step in ("validate", "schema"):
        heavy = [m for m in loaded[step] if m.split(".")[0] != "numpy"]
        assert heavy == [], f"{step} imported {heavy}"


def test_lazy_help_table_matches_each_commands_own_help():
    """``toolchoice --help`` lists the commands from ``COMMANDS`` without importing them; each line must be the
    command's own (its docstring's first paragraph), and each ``module:attr`` must name a click command."""
    for name, (_, help_text) in COMMANDS.items():
        command = load_command(name)
        assert command.name == name
        assert help_text == command.get_short_help_str(limit=10_000)


def test_the_lazy_help_is_what_click_prints_with_every_command_imported():
    eager = click.Group(name="toolchoice", help=cli.help, context_settings=cli.context_settings, params=cli.params)
    for name in COMMANDS:
        eager.add_command(load_command(name))
    runner = CliRunner()
    shown = [runner.invoke(group, ["--help"], prog_name="toolchoice").output for group in (cli, eager)]
    assert "Commands:" in shown[0] and shown[0] == shown[1]
