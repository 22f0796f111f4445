"""The ``toolchoice`` command line.

Exit codes (DESIGN §3): 0 = success / gate passed, 1 = gate failed, 2 = bad input or usage. Every command
takes ``--data-dir`` (default ``./data``, environment variable ``TOOLCHOICE_DATA_DIR``).
"""

from __future__ import annotations

import gc
import importlib
import sys
import warnings

import click

from toolchoice_pipeline.cli.common import EXIT_BAD_INPUT, run_guarded
from toolchoice_pipeline.util.collector import BATCH_THRESHOLDS, freeze_before_exit

# name -> ("module:attribute" of the click command, its one-line help for ``toolchoice --help``). A command's
# module is imported only when that command runs (or its own --help is asked), so ``toolchoice --help`` imports
# click and nothing of LiteLLM, Dagster, DuckDB or Arrow. The one-line help is kept here for the same reason;
# a test checks it equals the command's own. A new command is one more line.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": (
        "toolchoice_pipeline.cli.run:run_command",
        "Evaluate a release: run every model on every task, judge, score, store, and gate against the baseline.",
    ),
    "gate": (
        "toolchoice_pipeline.cli.gate:gate_command",
        "Re-check stored release RELEASE against its baseline: exit 0 passed, 1 failed, 2 bad input.",
    ),
    "report": (
        "toolchoice_pipeline.cli.report:report_command",
        "Show right-tool and right-arguments shares (points) per model over releases, one table and chart per suite, "
        "and the confusion heatmaps of the newest release (or --release); --html writes that release's report.",
    ),
    "validate": (
        "toolchoice_pipeline.cli.validate:validate_command",
        "Load and check a suite and the run configuration; print the task count, versions, models and the judge's "
        "canary (exit 2 on problems; warnings are printed on stderr and keep exit 0).",
    ),
    "lint": (
        "toolchoice_pipeline.cli.lint:lint_command",
        "Warn about what in a suite's tool catalogs will make a model pick the wrong tool: descriptions or names too alike, empty or too short descriptions, descriptions naming another tool, parameters without a description, enums whose values mean nothing.",
    ),
    "schema": (
        "toolchoice_pipeline.cli.validate:schema_command",
        "Print the JSON Schemas of the task, catalog, suite and run-configuration formats (for editors and CI).",
    ),
    "import": (
        "toolchoice_pipeline.cli.import_cmd:import_command",
        "Import eval tasks from other benchmarks as suites.",
    ),
    "ingest": (
        "toolchoice_pipeline.cli.ingest:ingest_command",
        "Turn recorded agent sessions into a suite: each user prompt a task, the recorded first step its replay.",
    ),
}


def load_command(name: str) -> click.Command:
    """Import the click command registered as ``name`` in :data:`COMMANDS` (``KeyError`` for an unknown name)."""
    module_name, attribute = COMMANDS[name][0].split(":")
    return getattr(importlib.import_module(module_name), attribute)


class LazyGroup(click.Group):
    """A click group whose commands are imported on use (click's documented lazy-loading pattern), listing them
    in ``--help`` from :data:`COMMANDS` without importing them. A command added the usual way
    (``cli.add_command``) is listed and run too."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})  # click's order: by name

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return load_command(cmd_name) if cmd_name in COMMANDS else super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [
            (name, click.Command(name, help=COMMANDS[name][1]).get_short_help_str(limit))
            if name in COMMANDS
            else (name, self.commands[name].get_short_help_str(limit))
            for name in names
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="toolchoice-pipeline")
def cli() -> None:
    """Evaluate how well LLM agents choose their tools, and gate each release on it."""


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


__all__ = ["COMMANDS", "EXIT_BAD_INPUT", "cli", "load_command", "main"]
