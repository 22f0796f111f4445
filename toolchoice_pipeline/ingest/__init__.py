"""Ingesting recorded agent sessions (Claude Code, Codex CLI, OpenTelemetry GenAI traces) as suites.

Opt-in: nothing is read except the files named to :func:`ingest_sessions` (``toolchoice ingest ...``). Every
text is sanitised (:mod:`.sanitise`) before it is stored or could be shown to a judge. See ``docs/ingest.md``.
"""

from toolchoice_pipeline.ingest.pipeline import (
    IngestOptions,
    IngestReport,
    ingest_claude_code,
    ingest_codex,
    ingest_otel,
    ingest_sessions,
)
from toolchoice_pipeline.util.sanitise import Sanitiser, sanitise

__all__ = [
    "IngestOptions",
    "IngestReport",
    "Sanitiser",
    "ingest_claude_code",
    "ingest_codex",
    "ingest_otel",
    "ingest_sessions",
    "sanitise",
]
