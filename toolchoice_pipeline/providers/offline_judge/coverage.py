"""Whether a step makes the calls the request needs: the parts of a request that no call of the step serves.

Used by the offline judge (:mod:`toolchoice_pipeline.providers.offline_judge`) for rubric step 3 ("the step must make the calls the request
needs"). Pure functions, no model. A request's *values* are what a call would pass as arguments:

- numbers, by value and without their sign, in scientific notation too ("1e-9"; a unit may follow: "5cm"; "1.2 billion" is also 1.2e9 and "60%"
  also 0.6; "a loss of $1000" is served by -1000); not the exponent of a formula ("x^2"), not 0 and not a
  list marker ("1. What is...");
- quoted text ('The Office', "Solar Beam"), except the name of something in the catalog ('update_user_info');
- a name given in parentheses right after a value is another name for it ("Apple Inc. (AAPL)": either serves);
- capitalised names inside a sentence ("Taylor Swift", "Maroon 5", "Los Angeles"), except a name the tool
  catalog itself uses (a unit or a service the tool is about: "Tesla", "Spotify"), a month or weekday, a name
  right after a comma that follows a named value ("Chicago, Illinois": the state qualifies the city) and a
  capitalised function word ("Also, ...").

A value is *served* when a call's arguments name it (:func:`.arguments.numbers` by value, strings
case-insensitively). The step *misses a call* when the request asks for several things (a repetition cue:
"respectively", "also", "then", "another", "the same", "each", "both", ", and"...) and a *part* of the
request (:func:`request_parts`: split at those cues, at sentence ends and between listed values of one kind)
that asks again (it begins at a cue or is a listed value, not merely a new sentence) names values of its own
(not named elsewhere in the request) of a kind the calls do use (numbers, names), none of which any call
serves. A value left
unserved beside served ones in the same part only qualifies them ("a Comfort Uber from 2020 Addison Street").
Figures per BFCL category: docs/judge.md (benchmarks/judge/bfcl_categories.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from toolchoice_pipeline.providers.offline_judge.arguments import numbers, strings

_ITEM = re.compile(
    r"(?P<quote>['\"])(?P<quoted>[^'\"\n]{2,40})(?P=quote)"
    r"|(?P<number>(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\d_]|\.\d))"
    r"|(?P<name>\b[A-Z](?:[\w'-]|\.(?=\w))*(?:\s+(?:of\s+)?[A-Z](?:[\w'-]|\.(?=\w))*)*)"
)
_REPEAT = re.compile(
    r"\b(?:respectively|also|then|another|same|each|both|as well|plus|repeat|again|second|"
    r"too|other|separately|individually)\b|,\s*and\b",
    re.IGNORECASE,
)
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_CALENDAR = frozenset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday".split()
)
_FUNCTION_WORDS = frozenset(
    "also plus do and or then but i please can could what which how find get the a an in on for".split()
)


@dataclass(frozen=True)
class Value:
    """A value the request names: ``kind`` ``number`` (``value`` a float) or ``name`` (lower-cased text);
    ``aliases``: other names for it given in parentheses right after it ("Apple Inc. (AAPL)")."""

    kind: str
    value: Any
    start: int
    end: int
    text: str
    aliases: tuple[str, ...] = ()


_ALIAS = re.compile(r"\.?\s*\(([^()\n]{1,40})\)")
_LIST_MARKER = re.compile(r"(?:^|\n)\s*$")


def request_values(text: str, catalog_text: str = "") -> list[Value]:
    """The values ``text`` names, in order (see the module docstring); ``catalog_text`` is the catalog's own
    wording (lower-cased JSON is fine), whose names are not values."""
    found: list[Value] = []
    catalog_text = catalog_text.lower()
    previous: re.Match[str] | None = None  # the last match, kept or not
    for match in _ITEM.finditer(text):
        last, previous = previous, match
        if (
            found
            and found[-1].aliases
            and match.start() < found[-1].end + len(found[-1].aliases[0]) + 6
            and text[found[-1].end : match.start()].lstrip(". ").startswith("(")
        ):
            continue  # inside the parentheses that give the previous value another name
        alias = _ALIAS.match(text, match.end())
        aliases = (alias.group(1).strip().lower(),) if alias else ()
        if match.group("quoted"):
            quoted = match.group("quoted").lower()
            if not _catalog_names(quoted, catalog_text):
                found.append(Value("name", quoted, match.start(), match.end(), match.group(0), aliases))
        elif match.group("number"):
            number = float(match.group("number").replace(",", ""))
            before = text[: match.start()]
            if number == 0 or before.endswith(("^", "^-")):
                continue
            if _LIST_MARKER.search(before) and text[match.end() : match.end() + 2] in (". ", ".\n", ") "):
                continue  # "1. What is ...": a list marker
            after = text[match.end() : match.end() + 12].lower().split()
            if after and after[0] in _SCALES:
                number *= _SCALES[after[0]]
            found.append(Value("number", number, match.start(), match.end(), match.group(0), aliases))
        else:
            before = text[: match.start()].rstrip()
            if not before or before[-1] in ".!?\"'":
                continue  # the first word of a sentence is capitalised anyway
            name = match.group("name").lower().removesuffix("'s")
            if name in catalog_text or name in _CALENDAR or name.split()[0] in _FUNCTION_WORDS:
                continue
            if last is not None and last.group("name") and re.fullmatch(r",\s*", text[last.end() : match.start()]):
                continue  # "Chicago, Illinois": the state qualifies the city
            found.append(Value("name", name, match.start(), match.end(), match.group(0), aliases))
    return found


def _catalog_names(text: str, catalog_text: str) -> bool:
    """Whether ``text`` is the name of a tool or of a parameter in the catalog's JSON ``catalog_text``."""
    quoted = re.escape(json.dumps(text, ensure_ascii=False))
    return re.search(rf'"name":\s*{quoted}|{quoted}:\s*\{{', catalog_text) is not None


_JOINED = re.compile(r"\s*(?P<unit>(?:[^\W\d]+\s+){0,2}?)(?:,\s*(?:and\s+|or\s+)?|and\s+|or\s+|&\s*)", re.IGNORECASE)


def _lists_values(text: str, values: list[Value]) -> bool:
    """Whether the request lists two values of one kind ("5, 10 and 15", "Lakers and Bulls", "20 minutes and
    15 minutes"): joined by a comma, "and", "or" or "&", with at most the same unit word between them."""
    for a, b in zip(values, values[1:]):
        joined = _JOINED.fullmatch(text, a.end, b.start)
        if a.kind != b.kind or joined is None:
            continue
        unit = joined.group("unit").strip().lower()
        if not unit or text[b.end :].lstrip().lower().startswith(unit):
            return True
    return False


def _words(text: str) -> str:
    """The words of ``text``, lower-cased and joined by single spaces, with a space at each end (so
    "Queenstown Singapore" is found in "Queenstown, Singapore")."""
    return " " + " ".join(re.findall(r"\w+", text.lower())) + " "


def _served(value: Value, have: set[float], haystack: str) -> bool:
    if value.kind == "number":
        v = abs(value.value)
        have = {abs(h) for h in have}
        return v in have or v / 100 in have or any(v * s in have for s in _SCALES.values())
    names = (value.value, *value.aliases)
    words = _words(haystack)
    return any(name in haystack or (_words(name).strip() and _words(name) in words) for name in names)


def request_parts(text: str, values: list[Value]) -> list[list[Value]]:
    """The request's values grouped by the part of the request that names them: a part ends at a repetition
    cue ("also", "then", ", and"...), at the end of a sentence, and between two listed values of one kind
    ("5, 10 and 15" is three parts)."""
    return [part for _, part in _parts(text, values)]


def _parts(text: str, values: list[Value]) -> list[tuple[bool, list[Value]]]:
    """:func:`request_parts`, each with whether it repeats the request (begins at a cue or a listed value)."""
    repeats = {m.start() for m in _REPEAT.finditer(text)}
    for a, b in zip(values, values[1:]):
        if a.kind == b.kind and _JOINED.fullmatch(text, a.end, b.start) is not None:
            repeats |= {a.start, b.start}  # every listed value is a part of its own, the first one too
    sentences = {m.end() for m in re.finditer(r"[.!?;]\s+|\n", text)}
    parts: list[tuple[bool, list[Value]]] = [(False, [])]
    position = 0
    for value in values:
        repeat = any(position < cut <= value.start for cut in repeats)
        if repeat or any(position < cut <= value.start for cut in sentences):
            parts.append((repeat, []))
        parts[-1][1].append(value)
        position = value.start
    return [(repeat, part) for repeat, part in parts if part]


def unserved_values(text: str, calls_arguments: list[dict[str, Any]], catalog_text: str = "") -> list[Value]:
    """The values of the request that no call serves, when the step misses a call (else ``[]``): see the
    module docstring. ``calls_arguments``: the arguments of each call of the step (objects)."""
    values = request_values(text, catalog_text)
    if not calls_arguments or not (_REPEAT.search(text) or _lists_values(text, values)):
        return []
    have = numbers(calls_arguments)
    haystack = "\n".join(strings(calls_arguments)).lower()
    served = {id(v): _served(v, have, haystack) for v in values}
    kinds = {v.kind for v in values if served[id(v)]}
    # A part of the request that asks again (it begins at a repetition cue or is a listed value) and none of
    # whose values any call serves: the call that part asks for is missing. A value left unserved beside served
    # ones ("a Comfort Uber from 2020 Addison Street") qualifies them; a sentence that only gives context
    # ("my competitor charges $99") asks for nothing.
    # A part's own values are those the rest of the request does not name too ("random state of 1" twice).
    count: dict[tuple[str, Any], int] = {}
    for v in values:
        count[(v.kind, v.value)] = count.get((v.kind, v.value), 0) + 1
    missing = []
    for repeat, part in _parts(text, values):
        own = [v for v in part if count[(v.kind, v.value)] == 1 and v.kind in kinds]
        if repeat and own and not any(served[id(v)] for v in own):
            missing.extend(own)
    return list({(v.kind, v.value): v for v in missing}.values())


def _shares_word(request_words: set[str], arguments: Any) -> bool:
    """Whether a string argument has a word of four letters or more that the request has, or that one of the
    request's words begins ("horizontal" for "flip it horizontally")."""
    for word in set(_words("\n".join(strings(arguments))).split()):
        if (
            len(word) >= 4
            and not word.isdigit()
            and any(w.startswith(word) or word.startswith(w) for w in request_words)
        ):
            return True
    return False


def idle_calls(text: str, calls: list[tuple[str, dict[str, Any]]], catalog_text: str = "") -> list[int]:
    """The indices of the calls of a several-call step to a tool none of whose calls names any of the
    request's values or shares a word with it, while calls to another tool do (a tool that serves no part of
    the request); ``[]`` for a one-tool step or a request that names no values. ``calls``: ``(tool name,
    arguments)`` per call. Here a value is any the request names, the catalog's own names included
    ("Paris" in a description's example does not make a call passing "Paris, France" idle);
    ``catalog_text`` is accepted for symmetry with :func:`unserved_values`."""
    if len({name for name, _ in calls}) < 2:
        return []
    values = request_values(text)
    if not values:
        return []
    request_words = {w for w in _words(text).split() if len(w) >= 4 and not w.isdigit()}
    serving: set[str] = set()
    for name, arguments in calls:
        have, haystack = numbers(arguments), "\n".join(strings(arguments)).lower()
        if any(_served(v, have, haystack) for v in values) or _shares_word(request_words, arguments):
            serving.add(name)
    return [i for i, (name, _) in enumerate(calls) if name not in serving] if serving else []
