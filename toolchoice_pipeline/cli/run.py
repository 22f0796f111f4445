"""`toolchoice run` (placeholder until its issue lands)."""

from __future__ import annotations

import click


@click.command("run")
def run_command() -> None:
    """Not available yet."""
    raise click.ClickException("toolchoice run is not available yet")
