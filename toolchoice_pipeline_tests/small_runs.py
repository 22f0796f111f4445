"""Helpers of the tests that make whole ``toolchoice run``s of a trimmed demo (``pipeline_helpers.trim_tasks``): the
judge's polls in a copy's ``toolchoice.yaml``, and a ``toolchoice`` command run in this process through the CLI's
guard (the exit code and words the console script gives, without a new interpreter importing Dagster and LiteLLM
again). Tests of what only a real process shows (signals, the shell's exit code, no traceback on stderr) use
``pipeline_helpers.toolchoice`` instead.
"""

from __future__ import annotations

import io
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml

from toolchoice_pipeline_tests.pipeline_helpers import toolchoice_in_process


def set_judge_polls(data_dir: Path, polls: int) -> None:
    """Set ``judge.polls`` (ChainPoll's verdicts per episode) in ``data_dir/toolchoice.yaml``."""
    path = data_dir / "toolchoice.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["judge"]["polls"] = polls
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def toolchoice_here(capsys: pytest.CaptureFixture[str] | None, *args: str) -> subprocess.CompletedProcess:
    """``toolchoice <args>`` in this process (:func:`pipeline_helpers.toolchoice_in_process`). Returns the exit
    code and what it printed (read with ``capsys``; without it, from ``sys.stdout`` and ``sys.stderr``
    redirected, as a module fixture has no ``capsys``), as a ``CompletedProcess``."""
    if capsys is None:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = toolchoice_in_process(*args)
        return subprocess.CompletedProcess(["toolchoice", *args], code, out.getvalue(), err.getvalue())
    capsys.readouterr()
    code = toolchoice_in_process(*args)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["toolchoice", *args], code, out, err)
