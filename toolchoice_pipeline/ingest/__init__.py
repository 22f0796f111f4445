"""Ingesting recorded agent sessions (Claude Code, Codex CLI, OpenTelemetry GenAI traces) as suites.

Opt-in: nothing is read except the files named to :func:`ingest_sessions` (``toolchoice ingest ...``). Every
text is sanitised (:mod:`.sanitise`) before it is stored or could be shown to a judge. See ``docs/ingest.md``.
"""

from typing import TYPE_CHECKING

from toolchoice_pipeline.util.lazy import lazy_exports

if TYPE_CHECKING:
    from toolchoice_pipeline.ingest.pipeline import (
        IngestOptions,
        IngestReport,
        ingest_claude_code,
        ingest_codex,
        ingest_otel,
        ingest_sessions,
    )
    from toolchoice_pipeline.util.sanitise import Sanitiser, sanitise

# Re-exported on first use (util/lazy.py): importing one light module of the package imports nothing else.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "IngestOptions": ".pipeline",
        "IngestReport": ".pipeline",
        "ingest_claude_code": ".pipeline",
        "ingest_codex": ".pipeline",
        "ingest_otel": ".pipeline",
        "ingest_sessions": ".pipeline",
        "Sanitiser": "toolchoice_pipeline.util.sanitise",
        "sanitise": "toolchoice_pipeline.util.sanitise",
    },
)

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
