"""YAML loading that remembers the line of every node, so a problem can name its line.

PyYAML composes a node tree with start marks; we build the plain data and a map from a field path
(a tuple of keys and indexes) to its 1-based line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import InputError, Problem, display_path

Lines = dict[tuple, int]


def load_yaml(path: Path) -> tuple[Any, Lines]:
    """Load a YAML (or JSON) file; return the data and the line of each node by its path.

    Raises :class:`InputError` naming the file and line when the file is missing or not valid YAML.
    """
    shown = display_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(Problem(file=shown, message="file not found")) from None
    except UnicodeDecodeError as exc:
        raise InputError(Problem(file=shown, message=f"not UTF-8 text ({exc.reason})")) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(exc, "problem", None) or str(exc)
        raise InputError(Problem(file=shown, line=line, message=f"bad YAML: {reason}")) from None
    lines: Lines = {}
    if node is not None:
        _walk(node, (), lines)
    return data, lines


def _walk(node: yaml.Node, path: tuple, lines: Lines) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            lines[(*path, key)] = key_node.start_mark.line + 1
            _walk(value_node, (*path, key), lines)
            lines[(*path, key)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), lines)


def line_of(lines: Lines, path: tuple) -> int | None:
    """The line of the deepest known node on ``path`` (a field path from a validation error)."""
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return None
