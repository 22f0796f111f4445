"""OTLP/JSON export files: the documents in a file, and the spans and log records in a document.

A file holds ``ExportTraceServiceRequest`` (``resourceSpans``) and/or ``ExportLogsServiceRequest``
(``resourceLogs``) documents in the OTLP/JSON encoding: one per line as the OpenTelemetry Collector's file
exporter writes them, one pretty-printed document, or several pretty-printed documents one after another.
Attribute values are ``AnyValue`` objects (``{"stringValue": ...}``, ``{"arrayValue": {"values": [...]}}``...).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolchoice_pipeline.ingest.jsonl import Warnings, read_json_lines
from toolchoice_pipeline.ingest.otlp_stream import streamed_documents
from toolchoice_pipeline.util.json_text import bounded_lines


def any_value(value: Any) -> Any:
    """A Python value from an OTLP/JSON ``AnyValue`` (``stringValue``, ``intValue``, ``arrayValue``...)."""
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "doubleValue" in value:
        return value["doubleValue"]
    if "arrayValue" in value:
        return [any_value(item) for item in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return {kv.get("key"): any_value(kv.get("value")) for kv in (value["kvlistValue"] or {}).get("values", [])}
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def attributes(record: dict[str, Any]) -> dict[str, Any]:
    """A span's, event's or log record's ``attributes`` as a plain dict."""
    # A nameless entry (no key; not valid OTLP) is kept under "".
    return {
        kv.get("key") or "": any_value(kv.get("value")) for kv in record.get("attributes") or [] if isinstance(kv, dict)
    }


@dataclass
class Record:
    """One span or log record with where it came from. ``kind`` is ``span`` or ``log``; ``scope`` the
    instrumentation scope name; ``time`` nanoseconds since the epoch (start time of a span)."""

    kind: str
    trace_id: str
    span_id: str
    scope: str
    time: int
    data: dict[str, Any]
    line: int | None
    attributes: dict[str, Any] = field(default_factory=dict)


def documents(path: Path, shown: str, warnings: Warnings) -> Iterator[tuple[dict[str, Any], int | None]]:
    """The export documents of one file with their line numbers: each line's document for JSON Lines; for
    pretty-printed documents one small document per span and log record (line None, :mod:`.otlp_stream`).

    Raises :class:`InputError` when the file is not JSON (Lines) at all, naming the line.
    """
    if not _is_pretty(path):
        for number, payload in read_json_lines(path, shown, warnings):
            if "resourceSpans" not in payload and "resourceLogs" not in payload:
                warnings.add(shown, number, "line skipped: no resourceSpans or resourceLogs (not an OTLP export)")
                continue
            yield payload, number
        return
    # Pretty-printed: streamed, one span or log record at a time (a multi-line export can be any size).
    yield from streamed_documents(path, shown)


def records(payload: dict[str, Any], line: int | None) -> Iterator[Record]:
    """The spans and log records of one export document, in document order."""
    for resource_spans in payload.get("resourceSpans") or []:
        for scope_spans in (resource_spans or {}).get("scopeSpans") or []:
            scope = str(((scope_spans or {}).get("scope") or {}).get("name") or "")
            for span in (scope_spans or {}).get("spans") or []:
                if isinstance(span, dict):
                    yield Record(
                        "span",
                        str(span.get("traceId") or ""),
                        str(span.get("spanId") or ""),
                        scope,
                        _int(span.get("startTimeUnixNano")),
                        span,
                        line,
                        attributes(span),
                    )
    for resource_logs in payload.get("resourceLogs") or []:
        for scope_logs in (resource_logs or {}).get("scopeLogs") or []:
            scope = str(((scope_logs or {}).get("scope") or {}).get("name") or "")
            for log in (scope_logs or {}).get("logRecords") or []:
                if isinstance(log, dict):
                    yield Record(
                        "log",
                        str(log.get("traceId") or ""),
                        str(log.get("spanId") or ""),
                        scope,
                        _int(log.get("timeUnixNano") or log.get("observedTimeUnixNano")),
                        log,
                        line,
                        attributes(log),
                    )


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _is_pretty(path: Path) -> bool:
    """True when the first non-blank line is not a whole JSON value (a pretty-printed export)."""
    with path.open("rb") as handle:
        for _, raw in bounded_lines(handle):
            if raw is None:  # a first line too long to read: JSON Lines, whose reader refuses that line
                return False
            if raw.strip():
                try:
                    json.loads(raw)
                except (ValueError, UnicodeDecodeError):
                    return raw.strip().startswith((b"{", b"["))
                return False
    return False
