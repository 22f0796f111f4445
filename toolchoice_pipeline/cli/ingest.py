"""``toolchoice ingest claude-code|codex|otel FILE... --suite S``: recorded sessions into a suite (opt-in)."""

from __future__ import annotations

from pathlib import Path

import click

from toolchoice_pipeline.cli.common import EXIT_OK, data_dir_option
from toolchoice_pipeline.ingest.conversation import DEFAULT_MAX_CONTEXT_CHARS
from toolchoice_pipeline.ingest.pipeline import CATALOG_FROM, IngestOptions, IngestReport, ingest_sessions
from toolchoice_pipeline.util.sanitise import DEFAULT_MAX_TOOL_RESULT_BYTES

SHOWN_WARNINGS = 20


@click.group("ingest")
def ingest_command() -> None:
    """Turn recorded agent sessions into a suite: each user prompt a task, the recorded first step its replay.

    Only the files named are read. Secrets, e-mail addresses and home-directory user names are redacted before
    anything is stored. Run the result with `toolchoice run --suite S` (the suite lists its replay model).
    """


def _options(command):
    for option in reversed(
        [
            click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path)),
            click.option("--suite", required=True, help="Suite to write (data/suites/<suite>/)."),
            click.option(
                "--catalog",
                "catalog",
                type=click.Path(path_type=Path),
                default=None,
                help="Curated catalog (YAML/JSON) the sessions are ingested against "
                "[default: the demo suite's catalog.yaml].",
            ),
            click.option(
                "--catalog-dump",
                "catalog_dumps",
                multiple=True,
                type=click.Path(path_type=Path),
                help="Live catalog dump (JSON: tool list, OpenAI tools, MCP tools/list); curated wins. Repeatable.",
            ),
            click.option(
                "--catalog-from",
                "catalog_from",
                type=click.Choice(CATALOG_FROM),
                default=None,
                help="otel: grade calls whose trace records no tool definitions against this catalog "
                "(curated: the demo suite's) instead of refusing them.",
            ),
            click.option(
                "--labels",
                type=click.Path(path_type=Path),
                default=None,
                help='Expected calls per turn, JSONL: {"session", "turn", "expected"}.',
            ),
            data_dir_option,
            click.option(
                "--max-tool-result-bytes",
                type=click.IntRange(min=64),
                default=DEFAULT_MAX_TOOL_RESULT_BYTES,
                show_default=True,
                help="Tool results longer than this (UTF-8 bytes) are truncated.",
            ),
            click.option(
                "--max-context-chars",
                type=click.IntRange(min=1000),
                default=DEFAULT_MAX_CONTEXT_CHARS,
                show_default=True,
                help="Budget of the conversation kept before each prompt (characters).",
            ),
            click.option("--force", is_flag=True, help="Replace the suite if it exists."),
        ]
    ):
        command = option(command)
    return command


def _run(source: str, files: tuple[Path, ...], **kwargs) -> int:
    report = ingest_sessions(source, list(files), IngestOptions(**kwargs))
    _print(report)
    return EXIT_OK


def _print(report: IngestReport) -> None:
    for warning in report.warnings.items[:SHOWN_WARNINGS]:
        click.echo(f"warning: {warning}", err=True)
    if report.warnings.count > SHOWN_WARNINGS:
        click.echo(f"warning: {report.warnings.count - SHOWN_WARNINGS} more warnings (see ingest.json)", err=True)
    click.echo(
        f"suite {report.suite}: {report.tasks} tasks ({report.labelled} labelled) from {report.turns} turns "
        f"in {len(report.sessions)} sessions -> {report.suite_dir}"
    )
    click.echo(
        f"catalog_version {report.catalog_version} ({report.catalog_size} tools"
        + (f"; added for called tools: {', '.join(report.added_tools)}" if report.added_tools else "")
        + ")"
    )
    redacted = ", ".join(f"{kind} x{count}" for kind, count in sorted(report.redactions.items()))
    click.echo(f"redacted: {redacted or 'nothing'}")
    if report.hallucinated.tasks or report.hallucinated.results_dropped:
        found = report.hallucinated
        click.echo(
            f"hallucinated tools: {found.tasks} tasks call a tool outside their catalog "
            f"({', '.join(sorted(found.tools))}; tagged flag:hallucinated_tool); "
            f"{found.results_dropped} recorded results of such calls dropped"
        )


@ingest_command.command("claude-code")
@_options
def claude_code_command(files: tuple[Path, ...], **kwargs) -> int:
    """Claude Code session files (~/.claude/projects/<project>/<session>.jsonl, subagents/agent-<id>.jsonl)."""
    return _run("claude-code", files, **kwargs)


@ingest_command.command("codex")
@_options
def codex_command(files: tuple[Path, ...], **kwargs) -> int:
    """Codex CLI rollouts (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl)."""
    return _run("codex", files, **kwargs)


@ingest_command.command("otel")
@_options
def otel_command(files: tuple[Path, ...], **kwargs) -> int:
    """OpenTelemetry GenAI traces exported as OTLP JSON (one request per line, or one whole document)."""
    return _run("otel", files, **kwargs)
