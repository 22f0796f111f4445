"""Helpers of the tests that make whole ``toolchoice run``s of a trimmed demo (``pipeline_helpers.trim_tasks``): the
judge's polls in a copy's ``toolchoice.yaml``, and a ``toolchoice`` command run in this process through the CLI's
guard (the exit code and words the console script gives, without a new interpreter importing Dagster and LiteLLM
again). Tests of what only a real process shows (signals, the shell's exit code, no traceback on stderr) use
``pipeline_helpers.toolchoice`` instead.
"""

from __future__ import annotations

import io
import os
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml

#: Variables a run sets in its process (``cli/run.py``) or the console-script helper sets for it.
_RUN_ENVIRONMENT = ("DAGSTER_HOME", "TOOLCHOICE_DATA_DIR", "LITELLM_OFFLINE_MODE", "COLUMNS")


def set_judge_polls(data_dir: Path, polls: int) -> None:
    """Set ``judge.polls`` (ChainPoll's verdicts per episode) in ``data_dir/toolchoice.yaml``."""
    path = data_dir / "toolchoice.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["judge"]["polls"] = polls
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def toolchoice_here(capsys: pytest.CaptureFixture[str] | None, *args: str) -> subprocess.CompletedProcess:
    """``toolchoice <args>`` in this process (``run_guarded``, what ``main`` calls, without ``main``'s process-wide
    collector settings), with the environment ``pipeline_helpers.toolchoice`` gives the console script; the
    variables the command sets are restored after it. Returns the exit code and what it printed (read with
    ``capsys``; without it, from ``sys.stdout`` and ``sys.stderr`` redirected, as a module fixture has no
    ``capsys``), as a ``CompletedProcess``."""
    if capsys is None:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = _run_here(args)
        return subprocess.CompletedProcess(["toolchoice", *args], code, out.getvalue(), err.getvalue())
    capsys.readouterr()
    code = _run_here(args)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["toolchoice", *args], code, out, err)


def _run_here(args: tuple[str, ...]) -> int:
    from toolchoice_pipeline.cli import cli
    from toolchoice_pipeline.cli.common import run_guarded

    saved = {name: os.environ.get(name) for name in _RUN_ENVIRONMENT}
    os.environ.update({"LITELLM_OFFLINE_MODE": "true", "COLUMNS": "200"})
    os.environ.pop("TOOLCHOICE_DATA_DIR", None)
    try:
        return run_guarded(cli, list(args))
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
