"""A secret split across lines: the joined view of a text, and where a secret found in it lies in the text.

A value written in pieces is one value to the program that reads it, and none of its pieces alone need look like
a secret. The joined view removes what only splits a value:

- a line continuation: a backslash before a newline, and the next line's indentation (shell, Python, C, and the
  same JSON-escaped, ``\\\\`` then ``\\n``);
- the gap between two adjacent string literals that the language concatenates: ``"a" "b"``, ``'a'\\n'b'``,
  ``"a" +\\n "b"``, ``f"a" f"b"``, shell's ``'a'"b"`` (the quotes also JSON-escaped, ``\\"``, and the newlines
  ``\\n`` escapes);
- the line break of a value wrapped at a fixed width: lines that are each one run of base64 characters of the
  same length (40 or more; the last may be shorter, 4 or more), not a list of
  identifiers (lines that start alike).

:func:`split_spans` returns, for each secret the sanitiser finds in the view across a join, the spans of the
original text its pieces occupy. YAML folded and literal blocks (``>``, ``|``) are text, not splits: not joined.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable

_QUOTE = r"(?:\\?[\"'])"
_BREAK = r"(?:\r?\n|\\r\\n|\\n)"  # a newline, or its JSON escape
_GAP = rf"(?:[ \t]|\\?{_BREAK})"
_JOIN = re.compile(
    # every join starts with one of these characters: looked for first, it lets the scan skip the others fast
    r"(?=[\\\"'\r\n])(?:"
    # a line continuation: backslash-newline (or its JSON escape), then the indentation
    r"(?P<continuation>(?:\\\r?\n|\\\\\\n)[ \t]*)"
    # two adjacent string literals: the closing quote (after a value's character: _is_join), the gap with an
    # optional +, an optional string prefix, the opening quote before a value's character
    rf"|(?P<literals>{_QUOTE}{_GAP}*(?:\+{_GAP}*)?(?:[rRbBuUfF]{{1,2}})?{_QUOTE})(?=[^\s\"'\\,;:)\]}}])"
    # a value wrapped at a fixed width: a line break before a run of base64 characters (the lines: _is_join)
    r"|(?P<wrap>\r?\n[ \t]*)(?=[A-Za-z0-9+/=_\-]{4}))"
)
# 40 or more: lists of identifiers one a line (UUIDs, tool-call ids, hashes) are shorter or hexadecimal.
_WRAPPED_LINE = re.compile(r"[ \t]*([A-Za-z0-9+/=_\-]{40,})[ \t]*")
_LAST_LINE = re.compile(r"[ \t]*([A-Za-z0-9+/=_\-]{4,})[ \t]*")  # a wrapped value's last line may be shorter
_TOKEN_CHAR = re.compile(r"[A-Za-z0-9+/_\-]")
_WINDOW = 240  # characters of the view looked at either side of a join (a line of context, at most)
# A value shorter than this is not written in pieces to fit a line (``"GITHUB_TOKEN=gh" + "p_" + ...`` builds a
# fake token in code: its 4 characters are no secret).
_SHORTEST = 8


def joined_view(text: str) -> tuple[str, list[int]]:
    """``(view, origin)``: ``text`` with every join removed, and for each character of the view its index in
    ``text`` (``len(view)`` entries). No join: ``(text, [])``."""
    if "\n" not in text and "\\" not in text and '"' not in text and "'" not in text:  # every join holds one
        return text, []
    joins = [m.span(m.lastgroup or 0) for m in _JOIN.finditer(text) if _is_join(text, m)]
    if not joins:
        return text, []
    pieces: list[str] = []
    origin: list[int] = []
    at = 0
    for start, end in joins:
        pieces.append(text[at:start])
        origin.extend(range(at, start))
        at = end
    pieces.append(text[at:])
    origin.extend(range(at, len(text)))
    return "".join(pieces), origin


def _is_join(text: str, match: re.Match[str]) -> bool:
    """Two literals are joined only when the first holds a value. A line break between base64 runs is a join only when both lines are wholly such runs, the first as long
    as a wrapped line is (the one before it, if any, has its length)."""
    start, end = match.span()
    if match.lastgroup == "literals":
        return start > 0 and text[start - 1] not in " \t\r\n\"'\\"
    if match.lastgroup != "wrap":
        return True
    if start < 40 or not _TOKEN_CHAR.match(text, start - 1):
        return False
    line_start = text.rfind("\n", 0, start) + 1
    next_end = text.find("\n", end)
    before = _WRAPPED_LINE.fullmatch(text, line_start, start)
    after = _LAST_LINE.fullmatch(text, end, len(text) if next_end < 0 else next_end)
    if before is None or after is None or len(after.group(1)) > len(before.group(1)):
        return False
    if line_start == 0:
        return True
    previous = _WRAPPED_LINE.fullmatch(text, text.rfind("\n", 0, line_start - 1) + 1, line_start - 1)
    if after.group(1)[:4] == before.group(1)[:4]:  # identifiers of one producer (``toolu_01…``), one a line
        return False
    return previous is None or len(previous.group(1)) == len(before.group(1))


def split_spans(text: str, find: Callable[[str], str]) -> list[tuple[str, list[tuple[int, int]]]]:
    """For each secret that ``find`` (a text → the text redacted, placeholders ``[REDACTED:<kind>]``) redacts in
    ``text``'s joined view across a join: ``(kind, spans)``, the spans of ``text`` holding its pieces.

    Only the view around each join (its line, at most :data:`_WINDOW` characters either side) is searched."""
    view, origin = joined_view(text)
    if not origin:
        return []
    cuts = [i for i in range(1, len(origin)) if origin[i] != origin[i - 1] + 1]
    found: list[tuple[str, list[tuple[int, int]]]] = []
    for lo, hi in _windows(view, cuts):
        window = view[lo:hi]
        redacted = find(window)
        if redacted == window:
            continue
        for kind, start, end in _redactions(window, redacted):
            a, b = lo + start, lo + end
            if b - a >= _SHORTEST and any(a < cut < b for cut in cuts):
                a, b = _widen(view, a, b)
                found.append((kind, _runs(origin[a:b])))
    return found


def _widen(view: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` widened over the token characters around it (base64 with ``/`` reads to a rule as a
    path whose segments are each too short: the secret is the whole run), ``=`` padding included."""
    while start > 0 and _TOKEN_CHAR.match(view, start - 1) and _TOKEN_CHAR.match(view, start):
        start -= 1
    while end < len(view) and _TOKEN_CHAR.match(view, end) and _TOKEN_CHAR.match(view, end - 1):
        end += 1
    while end < len(view) and view[end] == "=" and end - start >= _SHORTEST:
        end += 1
    return start, end


def _windows(view: str, cuts: list[int]) -> list[tuple[int, int]]:
    """The lines around each cut, at most :data:`_WINDOW` characters either side, overlapping ones merged."""
    spans: list[tuple[int, int]] = []
    for cut in cuts:
        lo = max(view.rfind("\n", max(0, cut - _WINDOW), cut) + 1, cut - _WINDOW, 0)
        newline = view.find("\n", cut, cut + _WINDOW)
        hi = min(len(view), cut + _WINDOW) if newline < 0 else newline
        if spans and lo <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(hi, spans[-1][1]))
        else:
            spans.append((lo, hi))
    return spans


_PLACEHOLDER = re.compile(r"\[REDACTED:([a-z0-9_]+)\]")


def _redactions(before: str, after: str) -> list[tuple[str, int, int]]:
    """``(kind, start, end)`` in ``before`` of each placeholder ``after`` put in place of a span of it."""
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    equal = [block for block in matcher.get_matching_blocks() if block.size]
    out = []
    for placeholder in _PLACEHOLDER.finditer(after):
        ps, pe = placeholder.span()
        start, end = 0, len(before)
        for block in equal:
            if block.b + block.size <= ps:
                start = block.a + block.size
            elif block.b >= pe:
                end = block.a
                break
            elif block.b <= ps and block.b + block.size >= pe:  # the placeholder was in ``before`` already
                start = end = -1
                break
        if 0 <= start < end:
            out.append((placeholder.group(1), start, end))
    return out


def _runs(indexes: list[int]) -> list[tuple[int, int]]:
    """Consecutive indexes as ``(start, end)`` spans."""
    runs: list[tuple[int, int]] = []
    for index in indexes:
        if runs and runs[-1][1] == index:
            runs[-1] = (runs[-1][0], index + 1)
        else:
            runs.append((index, index + 1))
    return runs
