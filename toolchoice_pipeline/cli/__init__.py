"""The ``toolchoice`` command line.

Exit codes (DESIGN §3): 0 = success / gate passed, 1 = gate failed, 2 = bad input or usage. Every command
takes ``--data-dir`` (default ``./data``, environment variable ``TOOLCHOICE_DATA_DIR``).
"""

from __future__ import annotations

import gc
import sys
import warnings

import click

from toolchoice_pipeline.cli.common import EXIT_BAD_INPUT, run_guarded
from toolchoice_pipeline.cli.gate import gate_command
from toolchoice_pipeline.cli.import_cmd import import_command
from toolchoice_pipeline.cli.ingest import ingest_command
from toolchoice_pipeline.cli.lint import lint_command
from toolchoice_pipeline.cli.report import report_command
from toolchoice_pipeline.cli.run import run_command
from toolchoice_pipeline.cli.validate import schema_command, validate_command
from toolchoice_pipeline.util.collector import BATCH_THRESHOLDS, freeze_before_exit


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="toolchoice-pipeline")
def cli() -> None:
    """Evaluate how well LLM agents choose their tools, and gate each release on it."""


for command in (
    run_command,
    gate_command,
    report_command,
    validate_command,
    lint_command,
    schema_command,
    import_command,
    ingest_command,
):
    cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: runs the group, mapping bad input to exit code 2."""
    # Dagster flags the APIs we use (data versions, partitioned checks) as beta/preview on every run;
    # users of the CLI can do nothing about it.
    warnings.filterwarnings("ignore", message=r".*is currently in (beta|preview)")
    # A command is a batch: the collector runs less often while LiteLLM and Dagster are imported and the command
    # works (util/collector.py; a run's steps also freeze what the imports left)
    gc.set_threshold(*BATCH_THRESHOLDS)
    code = run_guarded(cli, argv)
    if argv is None:  # called as the program (the console script): the process ends here
        freeze_before_exit()
    sys.exit(code)


__all__ = ["cli", "main", "EXIT_BAD_INPUT"]
