"""`toolchoice ingest` (placeholder until its issue lands)."""

from __future__ import annotations

import click


@click.group("ingest")
def ingest_command() -> None:
    """Not available yet."""
    raise click.ClickException("toolchoice ingest is not available yet")
