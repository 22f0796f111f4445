"""`toolchoice import` (placeholder until its issue lands)."""

from __future__ import annotations

import click


@click.group("import")
def import_command() -> None:
    """Not available yet."""
    raise click.ClickException("toolchoice import is not available yet")
