"""Whether a call's arguments fit: its tool's JSON Schema, and the things the request names.

Used by the offline judge (:mod:`toolchoice_pipeline.providers.offline_judge`). Pure functions, no model:

- :func:`schema_problems`: why the arguments fail the tool's JSON Schema (the ``jsonschema`` library, dialect
  from ``$schema``, 2020-12 otherwise), each problem marked when it is only an argument the schema does not
  declare (``additionalProperties: false``), so the judge can say "right tool, malformed call".
- :func:`request_literals`: what a request names exactly: URLs, paths and file names (:func:`.fit.name_spans`)
  and numeric values written with separators (dates, ratios, times, versions: "2022/08/16", "4/5", "4.2.7"),
  except a value given as context ("today is 2023.10.1").
- :func:`names_literal`: whether the arguments name one of them. Names compare case-insensitively, a path also
  by its last part (``./src/app.py`` is named by ``/repo/src/app.py`` and by ``app.py``). Numbers compare by
  value, as the matching rules do (DESIGN §4: ``40 == 40.0``), whatever their format: the request's
  "2022/08/16" is named by ``"08-16-2022"`` or ``"16.08.2022"`` (every nonzero part of it, by value, in any
  order: "22:00" is named by ``22``); a time's hour also on the 12-hour clock ("19:30" by ``"7:30 pm"``);
  a ratio "4/5" is also named by its first number (a score on a 5-point scale: ``4.0``) or by its quotient
  (``0.8``); "1,000" in an argument string is 1000. A date is also named by an argument string that spells the
  same day in words ("August 16, 2022"; read with ``dateutil``, only when the string gives year, month and day).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from referencing.exceptions import Unresolvable

from toolchoice_pipeline.providers.offline_judge.fit import name_spans
from toolchoice_pipeline.suites.schema_safety import safe_validator
from toolchoice_pipeline.util.user_regex import UserRegexError, user_regex_search

# Digits between separators ("/", "-", ":", or at least two dots): a date, a ratio, a time or a version.
_VALUE = re.compile(r"(?<![\w/.:-])\d+(?:(?:[/:-]\d+)+|(?:\.\d+){2,})(?![\w/:-]|\.\d)")
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_SEPARATOR = re.compile(r"[/.:-]")


@dataclass(frozen=True)
class SchemaProblem:
    """One reason the arguments fail the schema. ``undeclared`` names the arguments the schema does not declare
    and allows no others (``additionalProperties`` / ``unevaluatedProperties: false``), when that is the
    problem; empty for any other failure (a missing or mistyped argument)."""

    message: str
    undeclared: tuple[str, ...] = ()


def schema_problems(parameters: dict[str, Any], arguments: dict[str, Any], limit: int = 5) -> list[SchemaProblem]:
    """Why ``arguments`` fail the tool's JSON Schema, at most ``limit`` of them (empty when they validate)."""
    cls, invalid = _checked_schema(parameters)
    if invalid is not None:
        return [SchemaProblem(f"the tool's parameter schema is itself invalid ({invalid})")]
    try:
        errors = sorted(safe_validator(cls, parameters).iter_errors(arguments), key=lambda e: list(e.absolute_path))
    except (Unresolvable, UserRegexError, RecursionError) as exc:
        # validate refuses such schemas in files; one brought by a task or a trace still fails this call only.
        return [SchemaProblem(f"the tool's parameter schema cannot be used ({_reason(exc)})")]
    out = []
    for error in errors[:limit]:
        where = "/".join(str(p) for p in error.absolute_path)
        out.append(SchemaProblem(f"{where + ': ' if where else ''}{error.message}", _undeclared(error)))
    return out


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "its references nest without end"
    if isinstance(exc, Unresolvable):
        return f"$ref {getattr(exc, 'ref', '')!r} does not resolve inside the schema"
    return str(exc)


_CHECKED_SCHEMAS: dict[str, tuple[Any, str | None]] = {}
MAX_CHECKED_SCHEMAS = 4096


def _checked_schema(parameters: Any) -> tuple[Any, str | None]:
    """The validator class of a tool's schema (its ``$schema`` dialect, 2020-12 by default) and why the schema
    is itself invalid (None when it is valid). Remembered per schema (by its ``repr``): the meta-schema check
    costs about a millisecond, and every poll of every episode checks the same catalog again."""
    key = repr(parameters)
    found = _CHECKED_SCHEMAS.get(key)
    if found is None:
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import validator_for

        cls = validator_for(parameters, default=Draft202012Validator)
        try:
            cls.check_schema(parameters)
            found = (cls, None)
        except SchemaError as exc:
            found = (cls, exc.message)
        if len(_CHECKED_SCHEMAS) >= MAX_CHECKED_SCHEMAS:
            _CHECKED_SCHEMAS.pop(next(iter(_CHECKED_SCHEMAS)))
        _CHECKED_SCHEMAS[key] = found
    return found


def _undeclared(error: Any) -> tuple[str, ...]:
    """The argument names an ``additionalProperties``/``unevaluatedProperties`` failure is about (else ``()``)."""
    if error.validator not in ("additionalProperties", "unevaluatedProperties") or not isinstance(error.instance, dict):
        return ()
    schema = error.schema if isinstance(error.schema, dict) else {}
    declared = set(schema.get("properties") or {})
    patterns = list(schema.get("patternProperties") or {})
    where = "/".join(str(p) for p in error.absolute_path)
    return tuple(
        f"{where}/{key}" if where else key
        for key in error.instance
        if key not in declared and not any(user_regex_search(pattern, key) for pattern in patterns)
    )


# A value the request gives as context, not as something to act on: "today is 2023.10.1", "as of 2024-01-05".
_CONTEXT_CUE = re.compile(
    r"\b(?:today(?:'s date)?\s+is|(?:current|today's)\s+date(?:\s+is)?|now\s+is|it\s+is\s+now|"
    r"as\s+of)\s*[:,]?\s*$",
    re.IGNORECASE,
)


def request_literals(text: str) -> tuple[str, ...]:
    """URLs, paths, file names and numeric values with separators named in ``text``, in order, each once; a
    value given as context ("today is 2023.10.1") is not one: a call need not name it."""
    found: list[str] = []
    values = [m.group(0) for m in _VALUE.finditer(text) if not _CONTEXT_CUE.search(text[: m.start()])]
    for value in [span.value for span in name_spans(text)] + values:
        if len(value) >= 2 and value.strip("/.") and value not in found:
            found.append(value)
    return tuple(found)


def strings(value: Any) -> list[str]:
    """Every string inside an argument value (objects and lists walked)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def numbers(value: Any) -> set[float]:
    """Every number inside an argument value, by value: numbers (booleans are not numbers), and the numbers
    written in strings ("1,000" is 1000; "08-16-2022" gives 8, 16 and 2022)."""
    if isinstance(value, bool):
        return set()
    if isinstance(value, (int, float)):
        return {float(value)}
    if isinstance(value, dict):
        return set().union(*(numbers(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(numbers(v) for v in value))
    if isinstance(value, str):
        found = {float(m.group(0).replace(",", "")) for m in _NUMBER.finditer(value)}
        return found | {float(part) for part in re.findall(r"\d+", value)}
    return set()


def _dates(parts: list[float]) -> set[date]:
    """The days three numbers can mean: year first (Y-M-D) or last (M-D-Y, D-M-Y)."""
    found = set()
    if len(parts) == 3 and all(p.is_integer() for p in parts):
        a, b, c = (int(p) for p in parts)
        for year, month, day in ((a, b, c), (c, a, b), (c, b, a)):
            try:
                found.add(date(year, month, day))
            except ValueError:
                pass
    return found


def _spelled_date(text: str) -> date | None:
    """The day ``text`` names, when it gives year, month and day (parsed twice with different defaults: a part
    the text leaves out would differ)."""
    from dateutil import parser

    if not re.search(r"\d", text) or len(text) > 40:
        return None
    try:
        first = parser.parse(text, default=datetime(2000, 1, 1))
        second = parser.parse(text, default=datetime(2001, 2, 2))
    except (ValueError, OverflowError):
        return None
    return first.date() if first.date() == second.date() else None


def _value_named(literal: str, arguments: dict[str, Any]) -> bool:
    have = numbers(arguments)
    parts = [float(p) for p in _SEPARATOR.split(literal) if p]
    if ":" in literal and parts and parts[0] <= 24:  # a time: 19:30 is 7:30 pm
        have |= {h + 12 for h in have if 0 <= h < 12} | {h - 12 for h in have if 12 <= h <= 24}
    if parts and all(p in have for p in parts if p != 0):
        return True
    if "/" in literal and len(parts) == 2:
        return parts[0] in have or (parts[1] != 0 and any(abs(parts[0] / parts[1] - h) < 1e-9 for h in have))
    days = _dates(parts)
    return bool(days) and any(_spelled_date(s) in days for s in strings(arguments))


def is_value_literal(literal: str) -> bool:
    """Whether ``literal`` is a numeric value with separators (a date, a ratio, a time, a version), not a name."""
    return bool(_VALUE.fullmatch(literal))


def names_literal(arguments: dict[str, Any], literal: str) -> bool:
    """Whether ``arguments`` name ``literal`` (a name case-insensitively or by a path's last part, a numeric value
    by value; see the module docstring)."""
    if is_value_literal(literal):
        return _value_named(literal, arguments)
    haystack = "\n".join(strings(arguments)).lower()
    needle = literal.lower().removeprefix("./")
    base = needle.rstrip("/").rsplit("/", 1)[-1]
    return needle in haystack or (len(base) >= 3 and base in haystack)
