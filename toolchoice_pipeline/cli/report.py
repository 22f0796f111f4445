"""``toolchoice report``: the trend of each share per model over releases (terminal table + chart image), the
confusion heatmaps of a release (one PNG per model, beside the change against its baseline) and, with
``--html``, the release's self-contained HTML report.

The pictures are the report's own files (``<data-dir>/reports/<suite>/trend.png`` and
``confusion-<model>.png`` unless ``--chart``: then ``<chart>`` and ``<chart stem>-confusion-<model>.png`` beside
it): a run's pictures (``releases/<id>/``, written by ``toolchoice run --chart``) are never overwritten.
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from toolchoice_pipeline.cli.common import EXIT_OK, check_output_file, data_dir_option, stdout_console
from toolchoice_pipeline.releases.confusion_chart import write_heatmaps
from toolchoice_pipeline.releases.html_report import collect, release_heatmaps, render_html
from toolchoice_pipeline.releases.report import TREND_WINDOW, TrendPoint, load_trend, render_chart, trend_rows
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.util.atomic import write_file_atomically
from toolchoice_pipeline.util.errors import InputError, Problem, display_path
from toolchoice_pipeline.util.extras import installed, missing_note, require


@click.command("report")
@click.option("--suite", "suite_name", default=None, help="Only releases of this suite (default: every suite).")
@click.option(
    "--chart",
    "chart_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write the chart (default: <data-dir>/reports/<suite>/trend.png); the confusion heatmaps go "
    "beside it as <stem>-confusion-<model>.png.",
)
@click.option(
    "--release",
    "release_id",
    default=None,
    help="The release whose confusion heatmaps (and --html report) are drawn (default: the newest of each suite).",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the release's report as one self-contained HTML file (opens from disk, no network).",
)
@click.option(
    "--last",
    type=click.IntRange(min=1),
    default=TREND_WINDOW,
    show_default=True,
    help="Show the most recently written releases only (with --suite: of that suite).",
)
@data_dir_option
def report_command(
    suite_name: str | None,
    chart_path: Path | None,
    release_id: str | None,
    html_path: Path | None,
    last: int,
    data_dir: Path,
) -> int:
    """Show right-tool and right-arguments shares (points) per model over releases, one table and chart per suite,
    and the confusion heatmaps of the newest release (or --release); --html writes that release's report.

    Without the charts extra the tables are printed and the pictures left out (a note on stderr says so);
    --chart and --html, which ask for pictures, are refused with exit 2 naming the extra."""
    if chart_path is not None:
        require("charts", "toolchoice report --chart")
    if html_path is not None:
        require("charts", "toolchoice report --html")
    pictures = installed("charts")
    if html_path is not None:
        check_output_file(html_path, "--html")
    store = ReleaseStore(data_dir)
    if release_id is not None:
        chosen = store.read_scores(release_id)
        if suite_name is not None and chosen.suite != suite_name:
            raise InputError(
                Problem(
                    file="<command line>",
                    field="--release",
                    message=f"release '{release_id}' is of suite '{chosen.suite}', not '{suite_name}'",
                )
            )
        suite_name = chosen.suite
    skipped: list[str] = []
    points = load_trend(data_dir, suite_name, last=last, skipped=skipped)
    for line in skipped:
        click.echo(f"warning: {line}", err=True)
    releases = display_path(str(ReleaseStore(data_dir).root))
    if not points:
        what = f"suite {suite_name}" if suite_name else releases
        also = f" ({len(skipped)} damaged scores.json left out, named above)" if skipped else ""
        raise InputError(
            Problem(file=releases, message=f"no scored release found for {what}{also}: run `toolchoice run` first")
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
    if html_path is not None and len(suites) > 1:
        raise InputError(
            Problem(
                file="<command line>",
                field="--html",
                message=f"releases of {len(suites)} suites ({', '.join(suites)}): give --suite or --release",
            )
        )
    console = stdout_console()
    for suite in suites:
        of_suite = [p for p in points if p.suite == suite]
        baseline = store.baseline(suite)
        console.print(trend_table(suite, of_suite, baseline))
        if not pictures:
            click.echo(missing_note("charts", "the trend chart and confusion heatmaps"), err=True)
            console.print()
            continue
        target = chart_path or data_dir / "reports" / suite / "trend.png"
        render_chart(of_suite, target, title=f"{suite}: tool choice over releases", baseline=baseline)
        console.print(f"chart: {display_path(target)}")
        # The newest release shown (or --release): its heatmaps, and the page reusing the pictures just drawn.
        data = collect(data_dir, release_id or of_suite[-1].release_id, pictures=False, calls=html_path is not None)
        data.heatmaps = release_heatmaps(data)
        prefix = f"{chart_path.stem}-confusion" if chart_path is not None else "confusion"
        written = write_heatmaps(data.heatmaps, target.parent, prefix)
        if written:
            console.print(
                f"confusion heatmaps of {data.document.release_id}: " + ", ".join(display_path(p) for p in written)
            )
        if html_path is not None:
            data.trend_png = target.read_bytes()
            write_file_atomically(html_path, render_html(data))
            console.print(f"HTML report of {data.document.release_id}: {display_path(html_path)}")
        console.print()
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
