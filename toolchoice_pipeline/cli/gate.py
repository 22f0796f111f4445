"""``toolchoice gate RELEASE``: re-check a stored release against its baseline (DESIGN §3).

Exit codes: 0 the gate passed, 1 it failed, 2 bad input (an unknown release or baseline, say). The stored
release is not changed: the Markdown summary goes to stdout (rendered by Rich on a terminal, plain Markdown in a pipe
or a CI log) and, always as plain Markdown, to ``--markdown PATH``; JUnit XML to ``--junit``.
"""

from __future__ import annotations

from pathlib import Path

import click

from toolchoice_pipeline.cli.common import (
    EXIT_GATE_FAILED,
    EXIT_OK,
    check_output_file,
    data_dir_option,
    echo_markdown,
)
from toolchoice_pipeline.util.atomic import write_file_atomically
from toolchoice_pipeline.util.errors import InputError, Problem


@click.command("gate")
@click.argument("release")
@click.option(
    "--baseline",
    "baseline_id",
    default=None,
    help="Release to compare with (default: the baseline the release was gated against).",
)
@click.option(
    "--junit",
    "junit_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the verdict as JUnit XML to this file (one test case per model).",
)
@click.option(
    "--markdown",
    "markdown_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the Markdown summary to this file (e.g. $GITHUB_STEP_SUMMARY).",
)
@click.option(
    "--gate-models",
    "gate_models",
    multiple=True,
    metavar="MODEL[,MODEL...]",
    help="Only these models gate the verdict; the others are reported as 'not gated' (default: as the release "
    "was gated).",
)
@data_dir_option
def gate_command(
    release: str,
    baseline_id: str | None,
    junit_path: Path | None,
    markdown_path: Path | None,
    gate_models: tuple[str, ...],
    data_dir: Path,
) -> int:
    """Re-check stored release RELEASE against its baseline: exit 0 passed, 1 failed, 2 bad input."""
    # Imported here, not at the top: `toolchoice --help` and the other commands do not pay for the warehouse.
    from toolchoice_pipeline.cli.run import split_models
    from toolchoice_pipeline.releases.gate import gate_markdown
    from toolchoice_pipeline.releases.gate_scope import failed_models
    from toolchoice_pipeline.releases.gating import write_junit
    from toolchoice_pipeline.releases.regate import regate
    from toolchoice_pipeline.releases.store import ReleaseStore

    for path, option in ((markdown_path, "--markdown"), (junit_path, "--junit")):
        if path is not None:
            check_output_file(path, option)
    stored = ReleaseStore(data_dir).read_scores(release)
    ungated = None
    if gate_models:
        gating = split_models(gate_models, "--gate-models")
        unknown = sorted(set(gating) - set(stored.models))
        if unknown or not gating:
            raise InputError(
                Problem(
                    file="<command line>",
                    field="--gate-models",
                    message=f"not a model of release {release}: {', '.join(unknown) or '(none given)'} "
                    f"(models: {', '.join(stored.models)})",
                )
            )
        ungated = [model for model in stored.models if model not in gating]
    result, baseline_models = regate(data_dir, release, baseline_id, ungated=ungated, stored=stored)
    summary = gate_markdown(result, stored.models, baseline_models, stored.suite)
    echo_markdown(summary)
    if markdown_path is not None:
        write_file_atomically(markdown_path, summary)
    if junit_path is not None:
        write_junit(junit_path, result, stored.suite)
    if not result.passed:
        click.echo(f"gate failed for {', '.join(failed_models(result))} (exit {EXIT_GATE_FAILED})", err=True)
    return EXIT_OK if result.passed else EXIT_GATE_FAILED
