"""The argument-matcher grammar of ``expected.arguments`` (DESIGN §3).

An expected argument is one of:

- a plain JSON value: the actual value must equal it after normalisation (DESIGN §4);
- ``{"any_of": [v, ...]}``: any listed value matches;
- ``{"regex": "..."}``: the pattern is found in a string value (a search, on RE2: linear time, Python's syntax
  without lookaround or backreferences; see :mod:`toolchoice_pipeline.util.user_regex`);
- ``{"value": v}``: exactly ``v``, for when ``v`` itself looks like a matcher;

and ``"optional": true`` may be added to any of the object forms: an absent argument is then fine, a present
one must match. An object is read as a matcher only when it has exactly one of ``any_of``, ``regex``,
``value`` and no keys besides ``optional``; any other object is a plain value.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any, Literal

from toolchoice_pipeline.util.user_regex import UserRegexError, compile_user_regex

MATCHER_KEYS = ("any_of", "regex", "value")


@dataclass(frozen=True)
class Matcher:
    """A parsed expected argument. ``kind`` is ``exact`` (plain value or ``value``), ``any_of`` or ``regex``."""

    kind: Literal["exact", "any_of", "regex"]
    values: tuple[Any, ...] = ()
    pattern: str | None = None
    optional: bool = False


class MatcherError(ValueError):
    """An expected argument that is not valid matcher grammar (the message says why)."""


def is_matcher_object(value: Any) -> bool:
    """True when ``value`` is a dict in matcher form (exactly one matcher key, besides only ``optional``)."""
    if not isinstance(value, dict):
        return False
    keys = set(value)
    present = keys & set(MATCHER_KEYS)
    return len(present) == 1 and keys <= set(MATCHER_KEYS) | {"optional"}


def parse_matcher(value: Any) -> Matcher:
    """Parse one expected argument into a :class:`Matcher`.

    Raises :class:`MatcherError` when a matcher object is malformed: ``any_of`` not a non-empty list, ``regex``
    not a string or not a regular expression RE2 runs, ``optional`` not a boolean; or when an object made
    only of matcher keys is not a matcher (two of ``any_of``/``regex``/``value``, or ``optional`` alone), which
    would otherwise be compared as a literal object and never match.
    """
    if not is_matcher_object(value):
        if isinstance(value, dict) and value and set(value) <= set(MATCHER_KEYS) | {"optional"}:
            used = [key for key in MATCHER_KEYS if key in value]
            if used:
                raise MatcherError(
                    f"a matcher takes exactly one of any_of, regex, value (found {', '.join(used)}); "
                    "put alternatives in one any_of or one regex"
                )
            raise MatcherError('\'optional\' needs a matcher beside it: {"value": ..., "optional": true}')
        return Matcher(kind="exact", values=(value,))
    optional = value.get("optional", False)
    if not isinstance(optional, bool):
        raise MatcherError(f"'optional' must be true or false (got {json.dumps(optional)[:40]})")
    if "any_of" in value:
        options = value["any_of"]
        if not isinstance(options, list) or not options:
            raise MatcherError(f"'any_of' must be a non-empty list of values (got {json.dumps(options)[:40]})")
        return Matcher(kind="any_of", values=tuple(options), optional=optional)
    if "regex" in value:
        pattern = value["regex"]
        if not isinstance(pattern, str):
            raise MatcherError(f"'regex' must be a string (got {json.dumps(pattern)[:40]})")
        try:
            compile_user_regex(pattern)
        except UserRegexError as exc:
            raise MatcherError(str(exc)) from None
        return Matcher(kind="regex", pattern=pattern, optional=optional)
    return Matcher(kind="exact", values=(value["value"],), optional=optional)


_GRAMMAR_KEYS = (*MATCHER_KEYS, "optional")
_SPELLINGS = {key.replace("_", ""): key for key in _GRAMMAR_KEYS}


def _close_key(key: str) -> str | None:
    """The matcher key ``key`` looks like a misspelling of (``regexp``, ``optinal``, ``anyOf``), or None."""
    if key in _GRAMMAR_KEYS:
        return None
    folded = key.lower().replace("_", "").replace("-", "")
    if folded in _SPELLINGS:
        return _SPELLINGS[folded]
    close = difflib.get_close_matches(folded, list(_SPELLINGS), n=1, cutoff=0.8)
    return _SPELLINGS[close[0]] if close else None


def matcher_key_problem(value: Any) -> str | None:
    """Why ``value`` looks like a matcher whose keys are wrong, or None.

    An object that :func:`parse_matcher` reads as a plain value is suspect when it mixes a matcher key with
    other keys (``{"regex": "x", "flags": "i"}``), or when every key is a matcher key or a misspelling of one and
    at least one is misspelt (``{"regexp": "x"}``): either would be compared as a literal object and never match.
    The message names each unknown key with a "did you mean" where one is close. The caller decides whether the
    object may be a real value (a parameter whose schema lists those keys).
    """
    if not isinstance(value, dict) or not value or is_matcher_object(value):
        return None
    unknown = [key for key in value if key not in _GRAMMAR_KEYS]
    guesses = {key: _close_key(key) for key in unknown}
    has_matcher_key = len(unknown) < len(value)
    if not has_matcher_key and not all(guesses.values()):
        return None
    named = ", ".join(f"'{key}'" + (f" (did you mean '{guesses[key]}'?)" if guesses[key] else "") for key in unknown)
    return (
        f"unknown matcher key{'s' if len(unknown) > 1 else ''} {named}; a matcher takes {', '.join(MATCHER_KEYS)} "
        'and optional. To expect this object as it is, write {"value": {...}}'
    )
