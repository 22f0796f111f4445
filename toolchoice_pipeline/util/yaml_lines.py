"""YAML loading that remembers the line of every node, so a problem can name its line.

PyYAML composes a node tree with start marks; we build the plain data and a map from a field path
(a tuple of keys and indexes) to its 1-based line.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from toolchoice_pipeline.util.errors import InputError, Problem, display_path, field_path

Lines = dict[tuple, int]


def load_yaml(path: Path) -> tuple[Any, Lines]:
    """Load a YAML (or JSON) file; return the data and the line of each node by its path.

    Raises :class:`InputError` naming the file and line when the file is missing, not UTF-8, not valid YAML, or
    repeats a key in a mapping (YAML would silently keep the last one).
    """
    shown = display_path(path)
    text = read_utf8(path)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(exc, "problem", None) or str(exc)
        column = f" (column {mark.column + 1})" if mark is not None else ""
        hint = _YAML_HINTS.get(reason, "")
        raise InputError(Problem(file=shown, line=line, message=f"bad YAML: {reason}{column}{hint}")) from None
    except RecursionError:
        raise InputError(Problem(file=shown, message="bad YAML: nested too deeply")) from None
    lines: Lines = {}
    duplicates: list[Problem] = []
    if node is not None:
        try:
            _walk(node, (), lines, duplicates, shown, [MAX_NODES])
        except _TooLarge:
            raise InputError(Problem(file=shown, message=f"bad YAML: more than {MAX_NODES:,} values once its aliases "
                                                         "(*name) are expanded")) from None
    if duplicates:
        raise InputError(duplicates)
    return data, lines


# An input file's values, counted with every alias (*name) expanded: a few lines of nested aliases can expand to
# billions ("billion laughs"), which would hang every step that walks the data.
MAX_NODES = 1_000_000


class _TooLarge(Exception):
    pass


# The usual cause of PyYAML's most puzzling messages.
_YAML_HINTS = {
    "mapping values are not allowed here": "; quote a value that contains ': ' (description: \"Read: a file\")",
    "found character '\\t' that cannot start any token": "; indent with spaces, not tabs",
}


def node_lines(text: str) -> Lines | None:
    """The line of each node of a YAML or JSON text by its path; None when the text does not compose as YAML."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return None
    lines: Lines = {}
    if node is not None:
        try:
            _walk(node, (), lines, [], "", [MAX_NODES])
        except _TooLarge:
            return None
    return lines


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
        raise InputError(Problem(file=display_path(path), message="not a regular file (a device, pipe or socket): "
                                                                  "give a file"))
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
            raise InputError(Problem(file=display_path(path), message=f"{size:,} bytes: larger than the "
                                                                      f"{max_bytes:,}-byte limit for this input"))
        raw = handle.read(max_bytes + 1)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(utf8_problem(exc, raw, display_path(path))) from None


def utf8_problem(exc: UnicodeDecodeError, raw: bytes, file: str, line: int | None = None) -> Problem:
    """The problem for bytes that are not UTF-8: the line (counted in ``raw`` unless given) and the byte."""
    if line is None:
        line = raw.count(b"\n", 0, exc.start) + 1
    column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
    return Problem(file=file, line=line, message=f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at column {column} "
                                                  f"({exc.reason}); save the file as UTF-8")


def _walk(node: yaml.Node, path: tuple, lines: Lines, duplicates: list[Problem], shown: str,
          budget: list[int]) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooLarge
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        first: dict = {}
        for key_node, value_node in node.value:
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in first and key != "<<":
                duplicates.append(Problem(file=shown, line=line, field=field_path((*path, key)),
                                          message=f"duplicate key '{key}' (first on line {first[key]})"))
                continue
            first[key] = line
            _walk(value_node, (*path, key), lines, duplicates, shown, budget)
            lines[(*path, key)] = line
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), lines, duplicates, shown, budget)


def line_of(lines: Lines, path: tuple) -> int | None:
    """The line of the deepest known node on ``path`` (a field path from a validation error)."""
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return None
