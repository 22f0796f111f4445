"""`toolchoice report` (placeholder until its issue lands)."""

from __future__ import annotations

import click


@click.command("report")
def report_command() -> None:
    """Not available yet."""
    raise click.ClickException("toolchoice report is not available yet")
