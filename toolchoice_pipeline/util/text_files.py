"""Reading input files: regular files only (never a device or a pipe), bounded in size, UTF-8 with the line of
a bad byte."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from toolchoice_pipeline.util.errors import InputError, Problem, display_path

# A whole-file read (a catalog, a configuration, a JSON document) larger than this is refused before reading.
MAX_INPUT_BYTES = 512 * 1024 * 1024


def open_input(path: Path) -> BinaryIO:
    """``path`` opened for reading bytes. Raises :class:`InputError` when it is missing, a directory, or not a
    regular file (a device such as ``/dev/zero``, a pipe, a socket: checked before opening, which for a pipe
    would wait for a writer, and before reading, which for ``/dev/zero`` would never end)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError(Problem(file=display_path(path), message="file not found")) from None
    if stat.S_ISDIR(mode):
        raise InputError(Problem(file=display_path(path), message="is a directory, not a file"))
    if not stat.S_ISREG(mode):
        raise InputError(
            Problem(file=display_path(path), message="not a regular file (a device, pipe or socket): give a file")
        )
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise InputError(Problem(file=display_path(path), message="file not found")) from None
    except IsADirectoryError:
        raise InputError(Problem(file=display_path(path), message="is a directory, not a file")) from None


def read_utf8(path: Path, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The text of a UTF-8 file. Raises :class:`InputError` when it is missing, not a regular file, larger than
    ``max_bytes`` (checked before reading) or not UTF-8 (naming the line)."""
    with open_input(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes:
            raise InputError(
                Problem(
                    file=display_path(path),
                    message=f"{size:,} bytes: larger than the {max_bytes:,}-byte limit for this input",
                )
            )
        # Read what fstat said is there (plus one byte, to see growth): read(n) allocates n bytes up front, so
        # asking for the limit would reserve 512 MiB for every small file.
        raw = handle.read(size + 1)
        if len(raw) > size:  # the file grew since fstat: read on, still bounded
            raw += handle.read(max_bytes + 1 - len(raw))
            if len(raw) > max_bytes:
                raise InputError(
                    Problem(file=display_path(path), message=f"larger than the {max_bytes:,}-byte limit for this input")
                )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(utf8_problem(exc, raw, display_path(path))) from None


def utf8_problem(exc: UnicodeDecodeError, raw: bytes, file: str, line: int | None = None) -> Problem:
    """The problem for bytes that are not UTF-8: the line (counted in ``raw`` unless given) and the byte."""
    if line is None:
        line = raw.count(b"\n", 0, exc.start) + 1
    column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
    return Problem(
        file=file,
        line=line,
        message=f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at column {column} "
        f"({exc.reason}); save the file as UTF-8",
    )
