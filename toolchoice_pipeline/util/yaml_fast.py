"""YAML read by rapidyaml (C++) when it gives exactly the values PyYAML gives: a 10,000-tool block-YAML catalog
in about a third of a second instead of about nine.

Every input file has always been read with PyYAML's safe loader, which follows YAML 1.1 (``yes``/``no``/``on``/
``off`` are booleans, ``017`` is octal, ``1_000`` is an integer, ``~`` is null, ``2001-12-14`` is a date);
rapidyaml parses YAML 1.2 into a tree, and its JSON emitter resolves plain scalars its own way (``1e3`` is a
number there, ``.5`` becomes ``0.5``, a tag is dropped). So the tree is emitted as JSON and read with the strict
JSON reader, and the result is used only when nothing in the document can read differently; otherwise
:func:`load_yaml_fast` returns :data:`DECLINED` and the caller reads the text with PyYAML, which also words
every error (file, line, field). Declined when:

- rapidyaml refuses the text, or cannot emit it as JSON (nesting deeper than its limit);
- the text holds a tab (the two read ``a:<tab>b`` differently) or a character PyYAML's reader refuses (a raw
  control character, U+FFFE);
- the stream does not hold exactly one document, or a node has a tag (``!!str``, ``!custom``), an anchor or an
  alias (PyYAML shares the aliased object; its own checks count the expanded size);
- the JSON is not strict JSON (a repeated key, a control character, ``+1``, a number too large);
- a number's text is not a YAML 1.1 number for PyYAML (``1e3`` is a string there), or may have been ``-.5``;
- a string (key or value) that PyYAML's implicit resolvers read as something else when plain (``yes``, ``~``,
  ``0x1f``, ``.inf``, ``2001-12-14``, ``<<``, ``=``): quoted or not, since the JSON no longer says which, so a
  quoted ``"10"`` declines too; a string starting with ``@``, `` ` `` or ``%`` (PyYAML refuses those plain) or
  holding `` #`` (rapidyaml takes a comment inside ``{...}`` as text).

A declined file is read exactly as before, only not faster. ``toolchoice_pipeline_tests/test_yaml_fast.py`` reads
a corpus of such documents both ways.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import tempfile
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import Any

import ryml  # rapidyaml
from yaml.resolver import Resolver

DECLINED: Any = object()

# Any of PyYAML's implicit resolvers (bool, int, float, null, timestamp, merge, value, ...) matching a plain
# scalar's whole text, so it is not read as a string; or a first character PyYAML refuses to start a plain
# scalar with (rapidyaml takes ``@x`` and `` `x `` as strings).
_RESOLVES_NOT_STR = re.compile(
    "|".join(dict.fromkeys(f"(?:{rx.pattern})" for rxs in Resolver.yaml_implicit_resolvers.values() for _, rx in rxs))
    + "|[@`%]",
    re.VERBOSE,
)
_FLOAT_11 = next(rx for tag, rx in Resolver.yaml_implicit_resolvers["1"] if tag.endswith(":float"))
# PyYAML's reader (yaml.reader.Reader.NON_PRINTABLE): characters it refuses anywhere in a file.
_NON_PRINTABLE = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_NEGATIVE_DOT = re.compile(r"-\.[0-9]")  # -.5 is a string for PyYAML, and rapidyaml writes it as -0.5
_MARKED = ryml.KEYTAG | ryml.VALTAG | ryml.KEYANCH | ryml.VALANCH | ryml.KEYREF | ryml.VALREF
# Where a tag (!), an anchor (&) or an alias (*) could start a node; only then is every node's type looked at.
_MAY_BE_MARKED = re.compile(r"(?:^|[\s\[{,:?-])[!&*]", re.MULTILINE)
# What rapidyaml's error handler prints to stderr before it raises.
_RYML_REPORT = re.compile(rb"ERROR: |\(detected here\)")


_STDERR_LOCK = threading.Lock()


class _Declined(Exception):
    pass


def load_yaml_fast(text: str, max_nodes: int) -> Any:
    """The value of the one YAML document in ``text``, as PyYAML's safe loader would construct it; or
    :data:`DECLINED` when rapidyaml's reading could differ (see the module doc), or when the document has more
    than ``max_nodes`` nodes (the caller's limit is then checked the caller's way). Never raises for bad input:
    bad input is declined and PyYAML reports it."""
    if "\t" in text or _NON_PRINTABLE.search(text):
        return DECLINED
    try:
        with _stderr_held():
            tree = ryml.parse_in_arena(text.encode("utf-8"))
            node, nodes = _document(tree, text, max_nodes)
            emitted = ryml.emit_json_malloc(tree, node)
        value = json.loads(emitted, parse_constant=_declined, parse_float=_checked_float(text))
        if _checked_count(value) != nodes:
            raise _Declined  # a key repeated in a mapping: JSON keeps one, PyYAML's reading names the line
    except (ryml.ExceptionBasic, _Declined, ValueError, RecursionError):
        return DECLINED
    return value


def _document(tree: Any, text: str, max_nodes: int) -> tuple[int, int]:
    """The id of the one document's node and the number of nodes in it; :class:`_Declined` for an empty stream,
    several documents, more than ``max_nodes`` nodes, or any node with a tag, an anchor or an alias."""
    nodes = tree.size()
    if nodes > max_nodes:
        raise _Declined
    root = tree.root_id()
    if tree.is_stream(root):
        if tree.num_children(root) != 1:
            raise _Declined
        root, nodes = tree.first_child(root), nodes - 1
    elif not (tree.is_container(root) or tree.is_val(root)):
        raise _Declined  # no document at all: PyYAML's None
    if any(mark in text for mark in "!&*") and _MAY_BE_MARKED.search(text):
        has_any = tree.type_has_any
        if any(has_any(i, _MARKED) for i in range(tree.size())):
            raise _Declined
    return root, nodes


def _declined(_: str) -> Any:
    raise _Declined


def _checked_float(text: str) -> Callable[[str], float]:
    def parse_float(literal: str) -> float:
        if not _FLOAT_11.match(literal) or (literal.startswith("-0.") and _NEGATIVE_DOT.search(text)):
            raise _Declined
        value = float(literal)
        if math.isinf(value):
            raise _Declined  # the strict JSON reader refuses it; PyYAML's reading says what it always said
        return value

    return parse_float


def _checked_count(value: Any) -> int:
    """The number of nodes in ``value`` (each container, key-value pair and item once); :class:`_Declined` when
    a key or string is one PyYAML would resolve to something other than a string if it were plain. The empty
    string is left alone: rapidyaml emits an empty plain scalar as null, as PyYAML reads it."""
    resolves = _RESOLVES_NOT_STR.match
    keys: set[str] = set()
    count = 1
    stack = [value]
    while stack:
        item = stack.pop()
        children: Collection[Any]
        if isinstance(item, dict):
            keys.update(item)
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            children = (item,)
            count -= 1
        count += len(children)
        for child in children:
            if isinstance(child, str):
                if child and (resolves(child) or " #" in child):
                    raise _Declined
            elif isinstance(child, dict | list):
                stack.append(child)
    if any(resolves(key) or " #" in key for key in keys):
        raise _Declined
    return count


@contextmanager
def _stderr_held() -> Iterator[None]:
    """File descriptor 2 sent to a temporary file while rapidyaml runs: its error handler prints each parse error
    to stderr before raising, and a declined file's problem is PyYAML's to report. Anything else written there
    meanwhile (by another thread) is written to stderr afterwards. One at a time: two overlapping redirections
    would restore each other's file."""
    with _STDERR_LOCK, tempfile.TemporaryFile() as held:
        try:
            sys.stderr.flush()
        except (AttributeError, OSError, ValueError):
            pass
        saved = os.dup(2)
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            rest = b"".join(line for line in held if not _RYML_REPORT.search(line))
            if rest:
                os.write(2, rest)
