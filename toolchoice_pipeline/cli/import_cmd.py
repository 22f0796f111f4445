"""``toolchoice import``: eval tasks from other benchmarks, as suites (``import bfcl``)."""

from __future__ import annotations

from pathlib import Path

import click

from toolchoice_pipeline.cli.common import EXIT_OK, data_dir_option


@click.group("import")
def import_command() -> None:
    """Import eval tasks from other benchmarks as suites."""


@import_command.command("bfcl")
@click.argument("questions", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("answers", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--suite", "suite_name", required=True, help="Name of the suite to write (data/suites/<suite>/).")
@click.option("--force", is_flag=True, help="Replace the suite if it exists.")
@click.option(
    "--skip-bad",
    is_flag=True,
    help="Leave out entries BFCL's checker can never pass and entries without tools (default: keep them, "
    "tagged flag:unpassable / flag:no_tools).",
)
@data_dir_option
def import_bfcl_command(
    questions: Path, answers: Path | None, suite_name: str, force: bool, skip_bad: bool, data_dir: Path
) -> int:
    """Write a `bfcl`-profile suite from a BFCL QUESTIONS file and its possible ANSWERS (JSON Lines).

    Irrelevance categories have no ANSWERS (their tasks expect no call), nor relevance ones (any call is right).
    Exit 2 on bad input.
    """
    from toolchoice_pipeline.ingest.bfcl import import_bfcl

    result = import_bfcl(questions, answers, suite_name, data_dir, force=force, skip_bad=skip_bad)
    categories = ", ".join(f"{name} {count}" for name, count in sorted(result.categories.items()))
    click.echo(
        f"suite {result.suite}: {result.tasks} tasks ({categories}), match profile bfcl, written to {result.directory}"
    )
    summary = result.summary()
    if summary is not None:
        click.echo(f"odd entries: {summary}")
    return EXIT_OK
