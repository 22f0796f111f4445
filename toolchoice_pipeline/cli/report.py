"""``toolchoice report``: the trend of each share per model over releases (terminal table + chart image).

The chart is the report's own file (``<data-dir>/reports/<suite>/trend.png`` unless ``--chart``): a run's chart
(``releases/<id>/trend.png``, written by ``toolchoice run --chart``) is never overwritten.
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from toolchoice_pipeline.cli.common import EXIT_OK, data_dir_option, stdout_console
from toolchoice_pipeline.releases.report import TREND_WINDOW, TrendPoint, load_trend, render_chart, trend_rows
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.util.errors import InputError, Problem, display_path


@click.command("report")
@click.option("--suite", "suite_name", default=None, help="Only releases of this suite (default: every suite).")
@click.option(
    "--chart",
    "chart_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write the chart (default: <data-dir>/reports/<suite>/trend.png).",
)
@click.option(
    "--last",
    type=click.IntRange(min=1),
    default=TREND_WINDOW,
    show_default=True,
    help="Show the most recently written releases only (with --suite: of that suite).",
)
@data_dir_option
def report_command(suite_name: str | None, chart_path: Path | None, last: int, data_dir: Path) -> int:
    """Show right-tool and right-arguments shares (points) per model over releases, one table and chart per suite."""
    points = load_trend(data_dir, suite_name, last=last)
    releases = display_path(str(ReleaseStore(data_dir).root))
    if not points:
        what = f"suite {suite_name}" if suite_name else releases
        raise InputError(
            Problem(file=releases, message=f"no scored release found for {what}: run `toolchoice run` first")
        )
    suites = list(dict.fromkeys(p.suite for p in points))
    if chart_path is not None and len(suites) > 1:
        raise InputError(
            Problem(
                file="<command line>",
                field="--chart",
                message=f"releases of {len(suites)} suites ({', '.join(suites)}): give --suite to chart one of them",
            )
        )
    console = stdout_console()
    store = ReleaseStore(data_dir)
    for suite in suites:
        of_suite = [p for p in points if p.suite == suite]
        baseline = store.baseline(suite)
        console.print(trend_table(suite, of_suite, baseline))
        target = chart_path or data_dir / "reports" / suite / "trend.png"
        render_chart(of_suite, target, title=f"{suite}: tool choice over releases", baseline=baseline)
        console.print(f"chart: {display_path(target)}\n")
    return EXIT_OK


def trend_table(suite: str, points: list[TrendPoint], baseline: str | None = None) -> Table:
    """One row per release (oldest first), one column per model: right tool % / right args % (:func:`trend_rows`)."""
    models, rows = trend_rows(points, baseline)
    table = Table(title=f"suite {suite}: right tool % / right args % per release")
    table.add_column("release", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("gate")
    table.add_column("calibration")
    for model in models:
        table.add_column(model, justify="right")
    for row in rows:
        table.add_row(*row)
    return table
