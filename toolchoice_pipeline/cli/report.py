"""``toolchoice report``: the trend of each share per model over releases (terminal table + chart image)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from ..errors import InputError, Problem, display_path
from ..report import load_trend, render_chart
from .common import EXIT_OK, data_dir_option


@click.command("report")
@click.option("--suite", "suite_name", default=None, help="Only releases of this suite (default: all suites).")
@click.option("--chart", "chart_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the chart (default: releases/<latest>/trend.png).")
@data_dir_option
def report_command(suite_name: str | None, chart_path: Path | None, data_dir: Path) -> int:
    """Show right-tool and right-arguments shares (points) per model over releases, and write a chart."""
    points = load_trend(data_dir, suite_name)
    if not points:
        where = f"suite {suite_name}" if suite_name else display_path(data_dir / "releases")
        raise InputError(Problem(file=display_path(data_dir / "releases"),
                                 message=f"no scored release found for {where}: run `toolchoice run` first"))
    models = list(dict.fromkeys(p.model for p in points))
    table = Table(title="tool choice over releases (right tool % / right args %)")
    table.add_column("release")
    table.add_column("kind")
    table.add_column("gate")
    for model in models:
        table.add_column(model, justify="right")
    for release_id in dict.fromkeys(p.release_id for p in points):
        rows = {p.model: p for p in points if p.release_id == release_id}
        first = next(iter(rows.values()))
        gate = "–" if first.gate_passed is None else ("pass" if first.gate_passed else "FAIL")
        cells = [f"{_pct(rows[m].right_tool_pct)} / {_pct(rows[m].right_args_pct)}" if m in rows else ""
                 for m in models]
        table.add_row(release_id, first.kind, gate, *cells)
    console = Console()
    console.print(table)
    target = chart_path or data_dir / "releases" / points[-1].release_id / "trend.png"
    title = f"{suite_name}: tool choice over releases" if suite_name else "tool choice over releases"
    render_chart(points, target, title=title)
    console.print(f"chart: {display_path(target)}")
    return EXIT_OK


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"
