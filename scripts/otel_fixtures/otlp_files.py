"""Span and log exporters writing OTLP JSON Lines, as the OpenTelemetry Collector's file exporter does.

Runs inside a producer's virtual environment. The requests are built by the OpenTelemetry SDK's own OTLP
encoder (``opentelemetry-exporter-otlp-proto-common``, the code behind the OTLP exporters) and written in the
OTLP/JSON encoding (camelCase fields, hex trace and span ids, integer enums): one export request per line.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

_ID_FIELDS = {"traceId", "spanId", "parentSpanId"}


def _hex_ids(value):
    if isinstance(value, dict):
        return {
            k: (base64.b64decode(v).hex() if k in _ID_FIELDS and isinstance(v, str) else _hex_ids(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


def _write(path: Path, message) -> None:
    payload = _hex_ids(MessageToDict(message, use_integers_for_enums=True))
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(payload, ensure_ascii=False) + "\n")


class FileSpanExporter(SpanExporter):
    def __init__(self, path: Path):
        self.path = path

    def export(self, spans) -> SpanExportResult:
        _write(self.path, encode_spans(spans))
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def file_log_exporter(path: Path):
    """A log exporter writing OTLP JSON Lines (built lazily: the logs SDK is still experimental)."""
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.sdk._logs.export import LogExporter, LogExportResult

    class FileLogExporter(LogExporter):
        def export(self, batch):
            _write(path, encode_logs(batch))
            return LogExportResult.SUCCESS

        def force_flush(self, timeout_millis: int = 30_000) -> bool:
            return True

        def shutdown(self):
            pass

    return FileLogExporter()
