"""YAML loading that remembers the line of every node, so a problem can name its line.

PyYAML composes a node tree with start marks; we build the plain data and a map from a field path
(a tuple of keys and indexes) to its 1-based line.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from toolchoice_pipeline.util.errors import InputError, Problem, display_path, field_path
from toolchoice_pipeline.util.json_text import load_json
from toolchoice_pipeline.util.text_files import read_utf8
from toolchoice_pipeline.util.yaml_fast import DECLINED, load_yaml_fast

Lines = Mapping[tuple, int]


def load_yaml(path: Path) -> tuple[Any, Lines]:
    """Load a YAML (or JSON) file; return the data and the line of each node by its path.

    Raises :class:`InputError` naming the file and line when the file is missing, not UTF-8, not valid YAML, or
    repeats a key in a mapping (YAML would silently keep the last one).

    A JSON document (a YAML file whose text is JSON, as catalogs written by tools often are) takes the strict JSON
    reader (:func:`.json_text.load_json`: duplicate keys refused too); other YAML is read by rapidyaml when its
    values are exactly PyYAML's (:func:`.yaml_fast.load_yaml_fast`: a 10,000-tool catalog in well under a
    second), and otherwise, as always, composed by libyaml (PyYAML's C loader, when built with it) and
    constructed from that node tree, which words every problem. The line map is built only when a problem asks
    for a line (:class:`NodeLines`).
    """
    shown = display_path(path)
    text = read_utf8(path)
    if text.lstrip("\ufeff \t\r\n")[:1] in ("[", "{"):
        data = _json_or_none(text, shown)
        if data is not _NOT_JSON:
            return data, NodeLines(text=text)
    data = load_yaml_fast(text, MAX_NODES)
    if data is not DECLINED:
        return data, NodeLines(text=text)
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, NodeLines(node=None)
        duplicates = _check_nodes(node, shown)
        if duplicates:
            raise InputError(duplicates)
        data = loader.construct_document(node)
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):
            raise InputError(Problem(file=shown, message="bad YAML: nested too deeply")) from None
        exc = _python_parser_error(text) or exc  # PyYAML's own parser words its errors better than libyaml
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(exc, "problem", None) or str(exc)
        column = f" (column {mark.column + 1})" if mark is not None else ""
        hint = _YAML_HINTS.get(reason, "")
        raise InputError(Problem(file=shown, line=line, message=f"bad YAML: {reason}{column}{hint}")) from None
    except RecursionError:
        raise InputError(Problem(file=shown, message="bad YAML: nested too deeply")) from None
    except _TooLarge:
        raise InputError(
            Problem(
                file=shown, message=f"bad YAML: more than {MAX_NODES:,} values once its aliases (*name) are expanded"
            )
        ) from None
    finally:
        loader.dispose()
    return data, NodeLines(node=node)


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _python_parser_error(text: str) -> yaml.YAMLError | None:
    """The error PyYAML's pure-Python parser gives for ``text`` (only called once libyaml has failed)."""
    try:
        yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        return exc
    except RecursionError:
        return None
    return None


_NOT_JSON = object()


def _json_or_none(text: str, shown: str) -> Any:
    """The strict JSON value of ``text``; ``_NOT_JSON`` when it is not JSON (then it is read as YAML, whose flow
    style also starts with ``[`` or ``{``). A JSON problem YAML would hide (a repeated key) is raised."""
    try:
        return load_json(text.removeprefix("\ufeff"), shown)
    except InputError as exc:
        if any("duplicate key" in p.message for p in exc.problems):
            raise
        return _NOT_JSON


def _check_nodes(root: yaml.Node, shown: str) -> list[Problem]:
    """Duplicate keys (one problem each, with the field path of the first place the mapping is reached) and the
    expanded size (aliases counted each time they are used; :class:`_TooLarge` past :data:`MAX_NODES`), in one
    pass over the distinct nodes: linear even for a file of nested aliases."""
    duplicates: list[Problem] = []
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, tuple, bool]] = [(root, (), False)]
    while stack:
        node, path, children_done = stack.pop()
        key = id(node)
        if children_done:
            if isinstance(node, yaml.MappingNode):
                size = 1 + sum(sizes.get(id(value), 1) for _, value in node.value)
            elif isinstance(node, yaml.SequenceNode):
                size = 1 + sum(sizes.get(id(item), 1) for item in node.value)
            else:
                size = 1
            if size > MAX_NODES:
                raise _TooLarge
            sizes[key] = size
            continue
        if key in sizes:
            continue
        sizes[key] = 1  # provisional: a node reached again through an alias while open (a cycle) counts once
        stack.append((node, path, True))
        if isinstance(node, yaml.MappingNode):
            first: dict = {}
            for key_node, value_node in node.value:
                name = key_node.value
                if isinstance(name, str) and name in first and name != "<<":
                    duplicates.append(
                        Problem(
                            file=shown,
                            line=key_node.start_mark.line + 1,
                            field=field_path((*path, name)),
                            message=f"duplicate key '{name}' (first on line {first[name]})",
                        )
                    )
                    continue
                if isinstance(name, str):
                    first[name] = key_node.start_mark.line + 1
                if id(value_node) not in sizes:
                    stack.append((value_node, (*path, name), False))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                if id(item) not in sizes:
                    stack.append((item, (*path, index), False))
    return duplicates


class NodeLines(Mapping):
    """The line of each node by its field path, built on first use (only a problem to report needs one): from
    the composed node tree, or by composing ``text`` (the JSON fast path keeps no tree)."""

    def __init__(self, node: yaml.Node | None = None, text: str | None = None):
        self._node, self._text = node, text
        self._lines: dict[tuple, int] | None = None

    def _map(self) -> dict[tuple, int]:
        if self._lines is None:
            if self._text is not None:
                self._lines = dict(node_lines(self._text) or {})
            else:
                self._lines = {}
                if self._node is not None:
                    try:
                        _walk(self._node, (), self._lines, [], "", [MAX_NODES])
                    except _TooLarge:
                        pass
            self._node = self._text = None
        return self._lines

    def __getitem__(self, path: tuple) -> int:
        return self._map()[path]

    def __iter__(self) -> Iterator[tuple]:
        return iter(self._map())

    def __len__(self) -> int:
        return len(self._map())


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
        node = yaml.compose(text, Loader=_LOADER)
    except (yaml.YAMLError, RecursionError):
        return None
    lines: dict[tuple, int] = {}
    if node is not None:
        try:
            _walk(node, (), lines, [], "", [MAX_NODES])
        except _TooLarge:
            return None
    return lines


def _walk(
    node: yaml.Node, path: tuple, lines: dict[tuple, int], duplicates: list[Problem], shown: str, budget: list[int]
) -> None:
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
                duplicates.append(
                    Problem(
                        file=shown,
                        line=line,
                        field=field_path((*path, key)),
                        message=f"duplicate key '{key}' (first on line {first[key]})",
                    )
                )
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
