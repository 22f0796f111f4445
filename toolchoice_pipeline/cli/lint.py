"""``toolchoice lint``: the catalog lint (:mod:`toolchoice_pipeline.suites.lint`) of a suite, before anything runs.

Warnings are not errors: exit 0 with warnings printed, 1 with ``--strict`` when there are warnings, 2 on bad input
(the suite does not load). Imports neither LiteLLM, Dagster nor DuckDB: it answers in about a second.
"""

from __future__ import annotations

from pathlib import Path

import click

from toolchoice_pipeline.cli.common import EXIT_GATE_FAILED, EXIT_OK, data_dir_option

#: Warnings printed by ``toolchoice lint`` unless ``--max`` says otherwise (``--json`` prints every one).
DEFAULT_SHOWN = 50


@click.command("lint")
@click.option("--suite", "suite_name", default="coding_agent", show_default=True, help="Suite whose catalogs to lint.")
@data_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (every warning; docs/formats.md).")
@click.option("--strict", is_flag=True, help="Exit 1 when there is any warning (for CI).")
@click.option(
    "--max",
    "max_shown",
    type=click.IntRange(min=0),
    default=DEFAULT_SHOWN,
    show_default=True,
    help="Warnings to print (0: all); the counts by kind are always printed.",
)
def lint_command(suite_name: str, data_dir: Path, as_json: bool, strict: bool, max_shown: int) -> int:
    """Warn about what in a suite's tool catalogs will make a model pick the wrong tool: descriptions or names
    too alike, empty or too short descriptions, descriptions naming another tool, parameters without a
    description, enums whose values mean nothing. Each warning names the file, the line and the tool."""
    from toolchoice_pipeline.suites.lint import lint_suite
    from toolchoice_pipeline.suites.suite import load_suite

    report = lint_suite(load_suite(data_dir, suite_name))
    if as_json:
        click.echo(report.model_dump_json(indent=2))
    else:
        echo_lint(report, max_shown or None)
    return EXIT_GATE_FAILED if strict and report.warnings else EXIT_OK


def echo_lint(report, limit: int | None) -> None:
    """Print a :class:`~toolchoice_pipeline.suites.lint.LintReport`: one summary line, then up to ``limit``
    warnings (all when None), one per line as ``file:line: tool: message [kind]``."""
    click.echo(lint_summary(report))
    shown = report.warnings if limit is None else report.warnings[:limit]
    for warning in shown:
        click.echo(str(warning))
    if len(shown) < len(report.warnings):
        click.echo(
            f"... {len(report.warnings) - len(shown)} more (toolchoice lint --suite {report.suite} --max 0, or --json)"
        )


def lint_summary(report) -> str:
    """``lint: 9 warnings (1 similar_descriptions, 8 description_names_tool) in 1 catalog of 10 tools``."""
    if not report.warnings:
        return f"lint: no warnings in {_catalogs(report)}"
    counts = ", ".join(f"{n} {kind}" for kind, n in report.counts.items())
    plural = "s" if len(report.warnings) != 1 else ""
    return f"lint: {len(report.warnings)} warning{plural} ({counts}) in {_catalogs(report)}"


def _catalogs(report) -> str:
    catalogs = f"{report.catalogs} catalog{'s' if report.catalogs != 1 else ''}"
    return f"{catalogs} of {report.tools} distinct tool{'s' if report.tools != 1 else ''}"
