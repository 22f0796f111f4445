"""``toolchoice gate``'s summary: rendered by Rich on a terminal (a real pseudo-terminal here), plain Markdown in a
pipe and in ``--markdown FILE``. The releases are published from records (real Parquet, DuckDB, scores.json);
the command runs in-process with stdout on the pty's slave side, or captured by pytest (not a terminal).
"""

from __future__ import annotations

import os
import pty
import sys
import threading

import pytest

from toolchoice_pipeline.cli import cli
from toolchoice_pipeline.cli.common import EXIT_GATE_FAILED, run_guarded
from toolchoice_pipeline_tests.release_helpers import make_suite, publish

HEADING = "## Gate FAILED: release `r2` against baseline `r1` (suite `unit`)"
TABLE_RULE = "|---|---|---|---|---|"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """r1 and r2 (its gate failed), published once for the module: ``gate`` only reads them."""
    root = tmp_path_factory.mktemp("gate_markdown")
    suite = make_suite(40)
    publish(root, suite, "r1")
    failed = publish(root, suite, "r2", models={"local/a": {"wrong_tool": {"t03", "t07"}}, "local/b": {}})
    assert not failed.gate.passed
    return root


def gate_on_a_terminal(argv: list[str], monkeypatch) -> tuple[int, str]:
    """Run ``toolchoice`` with stdout on a pseudo-terminal 120 columns wide; its exit code and what it showed."""
    master, slave = pty.openpty()
    shown = bytearray()

    def drain() -> None:  # a pty's buffer is small: read while the command writes
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the slave side closed
                return
            if not chunk:
                return
            shown.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    terminal = os.fdopen(slave, "w", encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("TERM", "xterm-256color")
    for variable in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(variable, raising=False)
    try:
        code = run_guarded(cli, argv)
        terminal.flush()
    finally:
        monkeypatch.setattr(sys, "stdout", sys.__stdout__)
        terminal.close()
        reader.join(timeout=10)
        os.close(master)
    return code, shown.decode("utf-8")


def test_on_a_terminal_the_summary_is_rendered_and_the_markdown_file_stays_plain(data_dir, tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    code, shown = gate_on_a_terminal(
        ["gate", "r2", "--data-dir", str(data_dir), "--markdown", str(summary)], monkeypatch
    )
    assert code == EXIT_GATE_FAILED
    assert "\x1b[" in shown  # styled by Rich
    assert "Gate FAILED: release" in shown and "local/a" in shown
    # rendered: no Markdown markup reaches the terminal, the table has box-drawing rules
    assert HEADING not in shown and TABLE_RULE not in shown and "`r1`" not in shown and "### " not in shown
    assert "─" in shown
    written = summary.read_text(encoding="utf-8")
    assert written.startswith(HEADING + "\n") and TABLE_RULE in written and "### Failures" in written
    assert "\x1b[" not in written


def test_off_a_terminal_stdout_is_the_plain_markdown_the_file_gets(data_dir, tmp_path, capsys):
    summary = tmp_path / "summary.md"
    code = run_guarded(cli, ["gate", "r2", "--data-dir", str(data_dir), "--markdown", str(summary)])
    shown = capsys.readouterr().out
    assert code == EXIT_GATE_FAILED
    assert shown.startswith(HEADING + "\n") and TABLE_RULE in shown and "\x1b[" not in shown
    assert shown == summary.read_text(encoding="utf-8")
