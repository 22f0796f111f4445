"""A pretty-printed OTLP/JSON export read as a stream: one span or log record in memory at a time.

The file is parsed by ijson (yajl's C parser: strict JSON, no NaN, no number overflow) as events; the documents
are rebuilt without their spans and log records, each of which is handed on as soon as it is complete, wrapped
in a document of its own (its scope's name kept), so the readers downstream see the same documents and
:func:`~toolchoice_pipeline.ingest.otlp_json.records` works unchanged. Memory is bounded by the largest span or
log record, not by the file. A key given twice in one object is refused, as the other readers do.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from toolchoice_pipeline.util.errors import InputError, Problem

# Where a span and a log record sit in a document, as keys and "item" for an array's elements.
_SPAN = ("resourceSpans", "item", "scopeSpans", "item", "spans", "item")
_LOG = ("resourceLogs", "item", "scopeLogs", "item", "logRecords", "item")
_READ_BYTES = 64 * 1024
#: A refused file up to this size is read again whole to name the line of its problem.
LOCATED_BYTES = 32 * 1024 * 1024


class _Frame:
    """An object or array being built: its value, its path, the key waiting for a value (objects), and the
    records waiting for their scope (a scope object that comes after its spans)."""

    __slots__ = ("value", "path", "key", "waiting")

    def __init__(self, value: Any, path: tuple[str, ...]):
        self.value, self.path, self.key = value, path, ""
        self.waiting: list[Any] = []


def streamed_documents(path: Path, shown: str) -> Iterator[tuple[dict[str, Any], None]]:
    """One small document per span and log record of the pretty-printed export(s) in ``path`` (see the module
    doc). Raises :class:`InputError` naming the file when it is not strict JSON or a document is not an OTLP
    trace or logs export."""
    import ijson

    frames: list[_Frame] = []
    with path.open("rb") as handle:
        events = ijson.basic_parse(handle, use_float=True, multiple_values=True, buf_size=_READ_BYTES)
        try:
            for event, value in events:
                if event == "map_key":
                    top = frames[-1]
                    if value in top.value:
                        raise _refused(path, shown, f'duplicate key "{value}" in one object')
                    top.key = value
                elif event in ("start_map", "start_array"):
                    frames.append(_Frame({} if event == "start_map" else [], _child_path(frames)))
                elif event in ("end_map", "end_array"):
                    done = frames.pop()
                    yield from _finished(frames, done, shown)
                else:
                    yield from _finished(frames, _Frame(value, _child_path(frames)), shown)
        except ijson.JSONError as exc:
            raise _refused(path, shown, _first_line(exc)) from None


def _child_path(frames: list[_Frame]) -> tuple[str, ...]:
    if not frames:
        return ()
    parent = frames[-1]
    return (*parent.path, parent.key if isinstance(parent.value, dict) else "item")


def _finished(frames: list[_Frame], done: _Frame, shown: str) -> Iterator[tuple[dict[str, Any], None]]:
    """``done`` is complete: hand it on (a span or log record), or put it in its parent (or end a document)."""
    if not frames:
        document = done.value
        if not isinstance(document, dict) or ("resourceSpans" not in document and "resourceLogs" not in document):
            raise InputError(
                Problem(file=shown, field="resourceSpans", message="not an OTLP JSON trace or logs export")
            )
        return
    if done.path in (_SPAN, _LOG):
        scope_frame = frames[-2]  # the scopeSpans / scopeLogs element the record belongs to
        if "scope" in scope_frame.value:
            yield _wrapped(done.path, scope_frame.value["scope"], done.value), None
        else:
            scope_frame.waiting.append(done.value)
        return
    if done.waiting:  # a scopeSpans / scopeLogs element whose scope came after its records
        scope = done.value.get("scope") if isinstance(done.value, dict) else None
        for record in done.waiting:
            yield _wrapped(done.path, scope, record), None
    parent = frames[-1]
    if isinstance(parent.value, dict):
        parent.value[parent.key] = done.value
    else:
        parent.value.append(done.value)


def _wrapped(path: tuple[str, ...], scope: Any, record: Any) -> dict[str, Any]:
    if path[0] == "resourceSpans":
        return {"resourceSpans": [{"scopeSpans": [{"scope": scope, "spans": [record]}]}]}
    return {"resourceLogs": [{"scopeLogs": [{"scope": scope, "logRecords": [record]}]}]}


def _first_line(exc: Exception) -> str:
    text = exc.args[0] if exc.args else str(exc)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return str(text).strip().splitlines()[0] if str(text).strip() else type(exc).__name__


def _refused(path: Path, shown: str, message: str) -> InputError:
    """The problem of a file the stream parser refused, with the line the standard library's strict decoder
    names (its messages too) when the file is at most :data:`LOCATED_BYTES` long: the events carry no
    position. A longer file's problem names no line."""
    if path.stat().st_size <= LOCATED_BYTES:
        located = _located(path, shown)
        if located is not None:
            return InputError(located)
    return InputError(Problem(file=shown, message=f"not OTLP JSON: {message}"))


def _located(path: Path, shown: str) -> Problem | None:
    from toolchoice_pipeline.util.json_text import strict_decoder

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return Problem(file=shown, message="not OTLP JSON: not UTF-8 text")
    decoder, position = strict_decoder(), 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            return None
        try:
            _, position = decoder.raw_decode(text, position)
        except ValueError as exc:
            line = getattr(exc, "lineno", None)
            return Problem(file=shown, line=line, message=f"not OTLP JSON: {getattr(exc, 'msg', exc)}")
