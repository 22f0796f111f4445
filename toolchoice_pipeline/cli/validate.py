"""``toolchoice validate`` and ``toolchoice schema``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from toolchoice_pipeline.cli.common import EXIT_OK, data_dir_option
from toolchoice_pipeline.ingest.canary import describe_canary
from toolchoice_pipeline.util.errors import InputError


@click.command("validate")
@click.option("--suite", "suite_name", default="coding_agent", show_default=True, help="Suite to check.")
@data_dir_option
def validate_command(suite_name: str, data_dir: Path) -> int:
    """Load and check a suite and the run configuration; print the task count, versions, models and the judge's
    canary (exit 2 on problems; warnings are printed on stderr and keep exit 0)."""
    from toolchoice_pipeline.suites.config import load_run_config
    from toolchoice_pipeline.suites.suite import load_suite

    problems = []
    config = suite = None
    try:
        config = load_run_config(data_dir)
    except InputError as exc:
        problems.extend(exc.problems)
    try:
        suite = load_suite(data_dir, suite_name)
    except InputError as exc:
        problems.extend(exc.problems)
    if config is not None and suite is not None:
        problems.extend(_models_and_suite_warnings(config, suite, data_dir))
    if problems:
        raise InputError(problems)
    assert config is not None and suite is not None  # a load that failed added its problems
    catalog = suite.catalog
    inline = sum(1 for task in suite.tasks if task.tools is not None)
    tools = (
        f"{len(catalog)} tools ({len(suite.live)} from live dumps)"
        if not inline
        else f"{len(catalog)} suite tools; {inline} tasks carry their own catalog "
        f"({len(suite.all_tools()) - len(catalog)} distinct inline tools)"
    )
    click.echo(f"suite {suite.name}: {len(suite.tasks)} tasks, {tools}, match profile {suite.match_profile}")
    click.echo(f"catalog_version {suite.catalog_version}")
    click.echo(f"fixture_version {suite.fixture_version}")
    models = config.for_suite(None, suite.spec.models).model_names()
    click.echo(f"models {', '.join(models)}; judge {config.judge.model.model} x{config.judge.polls} polls")
    from toolchoice_pipeline.cli.lint import echo_lint
    from toolchoice_pipeline.suites.lint import lint_suite

    echo_lint(lint_suite(suite), limit=5)  # warnings only: `toolchoice lint` lists them all
    click.echo(describe_canary(data_dir))
    return EXIT_OK


MAX_WARNINGS_SHOWN = 20


def _models_and_suite_warnings(config, suite, data_dir: Path) -> list:
    """Check the models and judge as ``run`` does (:mod:`~toolchoice_pipeline.execution.config_checks`), print
    every warning about them and the suite on stderr (at most :data:`MAX_WARNINGS_SHOWN`), return the errors."""
    from toolchoice_pipeline.execution.config_checks import config_findings
    from toolchoice_pipeline.suites.validate import suite_warnings

    errors, warnings = config_findings(config, suite, data_dir)
    warnings = suite_warnings(suite) + warnings
    for warning in warnings[:MAX_WARNINGS_SHOWN]:
        click.echo(f"warning: {warning}", err=True)
    if len(warnings) > MAX_WARNINGS_SHOWN:
        click.echo(f"warning: ... and {len(warnings) - MAX_WARNINGS_SHOWN} more warnings", err=True)
    return errors


@click.command("schema")
@click.argument("which", type=click.Choice(["all", "task", "catalog", "suite", "config"]), default="all")
def schema_command(which: str) -> int:
    """Print the JSON Schemas of the task, catalog, suite and run-configuration formats (for editors and CI)."""
    from toolchoice_pipeline.suites.formats_schema import format_schemas

    schemas = format_schemas()
    click.echo(json.dumps(schemas if which == "all" else schemas[which], indent=2))
    return EXIT_OK
