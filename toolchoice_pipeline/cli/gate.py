"""`toolchoice gate` (placeholder until its issue lands)."""

from __future__ import annotations

import click


@click.command("gate")
def gate_command() -> None:
    """Not available yet."""
    raise click.ClickException("toolchoice gate is not available yet")
