"""JSON from input files (tasks, replays, labels, live dumps, BFCL files), read strictly.

``json.loads`` alone accepts what a careful reader should not, and fails on some input with exceptions that are
not about JSON syntax. :func:`load_json` turns each of these into one :class:`~.errors.Problem`:

- a syntax error (with its column);
- ``NaN``, ``Infinity`` and ``-Infinity``, which are not JSON (RFC 8259 §6) and never equal anything, and
  numbers too large for a float (``1e999``, read as infinity);
- a key repeated in one object (``json.loads`` silently keeps the last one; our YAML loader refuses it too);
- nesting deeper than Python's recursion limit (``RecursionError``), and integers longer than Python's
  int-to-string limit (``ValueError``);
- a lone UTF-16 surrogate escape (``"\\ud800"``): valid JSON syntax, but not Unicode text, so it can be neither
  hashed nor stored.

:func:`json_lines` reads the lines of a JSON Lines file (tasks, replays, labels, BFCL files) the one way they
are all read; :func:`json_objects` parses them too, for files whose every line is an object.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from toolchoice_pipeline.util.errors import InputError, Problem, display_path
from toolchoice_pipeline.util.text_files import open_input, utf8_problem

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class _Rejected(ValueError):
    """JSON that parses but is not strict; ``msg`` as :class:`json.JSONDecodeError` has it."""

    def __init__(self, msg: str):
        super().__init__(msg)
        self.msg = msg


def _no_constant(name: str) -> Any:
    raise _Rejected(f"{name} is not valid JSON (write a number or null)")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Rejected(f"the number {text[:40]} is too large for a float")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)  # built in C; the loop below runs only for an object that repeats a key
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Rejected(f"duplicate key {json.dumps(key, ensure_ascii=False)} in one object")
            seen.add(key)
    return result


def strict_decoder() -> json.JSONDecoder:
    """A :class:`json.JSONDecoder` refusing what :func:`load_json` refuses (``NaN``, ``Infinity``, ``1e999``, a
    repeated key) with a ``ValueError`` whose ``msg`` says why: for readers that report problems their own way
    (sessions, OTel exports, attribute values holding JSON) or need ``raw_decode``."""
    return json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float, object_pairs_hook=_unique_keys)


def load_json(text: str, file: str, line: int | None = None) -> Any:
    """Parse ``text`` as strict JSON (see the module doc).

    ``line`` is the line of ``text`` in ``file`` (one JSON Lines record); None for a whole JSON document, whose
    problem then names the line where the parser stopped. Raises :class:`InputError` with one problem.
    """
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise InputError(
            Problem(
                file=file,
                line=line if line is not None else exc.lineno,
                message=f"bad JSON: {exc.msg} (column {exc.colno})",
            )
        ) from None
    except _Rejected as exc:
        raise InputError(Problem(file=file, line=line, message=f"bad JSON: {exc}")) from None
    except RecursionError:
        raise InputError(Problem(file=file, line=line, message="bad JSON: nested too deeply")) from None
    except ValueError:  # an integer longer than Python's int-to-string limit
        raise InputError(
            Problem(
                file=file, line=line, message=f"bad JSON: a number has more than {sys.get_int_max_str_digits()} digits"
            )
        ) from None
    if _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InputError(
                Problem(
                    file=file,
                    line=line,
                    message=f"bad JSON: the escape \\u{ord(exc.object[exc.start]):04x} is a lone "
                    "UTF-16 surrogate, not a Unicode character",
                )
            ) from None
    return value


#: The longest line a JSON Lines reader takes (tasks, replays, labels, BFCL files, sessions, OTel exports): a
#: longer one is refused by line number without being held in memory (a 1 GB single line costs 32 MiB at most).
MAX_LINE_BYTES = 32 * 1024 * 1024
_SKIP_CHUNK = 1024 * 1024


def bounded_lines(handle: BinaryIO, limit: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, bytes)`` for each line of the binary ``handle`` (1-based, the ``\n`` kept), or
    ``(line number, None)`` for a line longer than ``limit`` bytes, which is skipped in chunks and never held
    whole in memory."""
    number = 0
    while True:
        chunk = handle.readline(limit + 1)
        if not chunk:
            return
        number += 1
        if len(chunk) <= limit or chunk.endswith(b"\n") and len(chunk) == limit + 1:
            yield number, chunk
            continue
        while chunk and not chunk.endswith(b"\n"):
            chunk = handle.readline(_SKIP_CHUNK)
        yield number, None


def too_long(file: str, line: int, limit: int = MAX_LINE_BYTES) -> Problem:
    """The problem of a line longer than ``limit`` bytes."""
    return Problem(
        file=file,
        line=line,
        message=f"the line is longer than {limit // (1024 * 1024) or limit} "
        f"{'MiB' if limit >= 1024 * 1024 else 'bytes'}: not read (one JSON value per line)",
    )


def json_lines(path: Path, problems: list[Problem]) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` for each non-blank line of the JSON Lines file at ``path`` (1-based numbers), for
    :func:`load_json`.

    Lines are split on ``\\n`` only (U+2028 inside a JSON string is not a line break) and decoded one by one, so a
    line that is not UTF-8 adds its problem (file, line, byte) to ``problems`` and the other lines are still
    read; a line longer than :data:`MAX_LINE_BYTES` adds its problem unread. A byte-order mark before the first line and a ``\\r`` before each ``\\n`` are dropped. The file is
    streamed: memory does not grow with its length. Raises :class:`InputError` when the file cannot be opened
    (missing, a directory).
    """
    shown = display_path(path)
    with open_input(path) as handle:
        for number, chunk in bounded_lines(handle):
            if chunk is None:
                problems.append(too_long(shown, number))
                continue
            try:
                text = chunk.decode("utf-8").removesuffix("\n").rstrip("\r")
            except UnicodeDecodeError as exc:
                problems.append(utf8_problem(exc, chunk, shown, line=number))
                continue
            if number == 1:
                text = text.removeprefix("\ufeff")
            if text.strip():
                yield number, text


def json_objects(path: Path, problems: list[Problem], what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each line of :func:`json_lines` that parses (:func:`load_json`) to a JSON
    object. A line that does not adds its problem to ``problems``: bad JSON, or "``<what>`` must be a JSON
    object" (``what`` e.g. ``"a label"``). Raises :class:`InputError` as :func:`json_lines` does."""
    shown = display_path(path)
    for number, text in json_lines(path, problems):
        try:
            data = load_json(text, shown, number)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        if not isinstance(data, dict):
            problems.append(Problem(file=shown, line=number, message=f"{what} must be a JSON object"))
            continue
        yield number, data
