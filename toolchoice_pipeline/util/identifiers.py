"""Identifiers from outside (release ids, model names, task ids) that cannot hold a control character.

A name ends up in file names, log lines, Markdown and JUnit reports, partition keys and SQL rows: a newline in
one injects a line into every output that prints it, a NUL cuts it short in C libraries, an escape sequence
rewrites the terminal. :func:`control_character` says which character, if any, makes ``text`` unusable.
"""

from __future__ import annotations

import re
import unicodedata

# C0 and C1 controls, DEL, and the Unicode line and paragraph separators (line breaks to many readers).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def control_character(text: str) -> str | None:
    """``"U+000A (LINE FEED) at character 3"`` for the first control character or line break in ``text``, or
    None when it has none."""
    found = _CONTROL.search(text)
    if found is None:
        return None
    char = found.group()
    name = unicodedata.name(char, "") or {"\n": "LINE FEED", "\r": "CARRIAGE RETURN", "\t": "TAB", "\0": "NUL"}.get(
        char, "a control character"
    )
    return f"U+{ord(char):04X} ({name}) at character {found.start() + 1}"


def check_identifier(text: str, what: str) -> str:
    """Return ``text``; raise ValueError naming ``what`` (e.g. "model name") and the character when it holds a
    control character or a line break (for pydantic validators: the message lands on the field's line)."""
    problem = control_character(text)
    if problem is not None:
        raise ValueError(f"{what} {text!r} holds {problem}: control characters and line breaks are not allowed")
    return text
