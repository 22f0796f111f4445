"""Expected argument values checked against their parameter's schema: can a valid call ever match them?

For each key argument of an expected call whose tool's schema describes the parameter (used by
:mod:`.validate`), as ``(field, message, is_error)``:

- a plain value or ``value``: validated against the parameter's schema (type, ``enum``/``const``, bounds,
  pattern, lengths, nested objects and arrays, ``$ref``; jsonschema-rs, :mod:`.argument_schema`) after the
  profile's own normalisation (``key_args``: strings NFC and trimmed, ``3.0`` taken as ``3``). A value no
  schema-valid call can hold is an **error**; one that breaks only ``format`` is a warning (a format is an
  annotation providers do not enforce; checked where the parameter's own schema names a ``format``).
- ``any_of``: each alternative is checked; all of them impossible is an error, some is a warning naming them
  (``any_of[2]``).
- ``regex``: it matches only a string (``key_args``), so a parameter whose schema ``type`` admits no string, or
  whose ``enum`` holds no string the regex finds, is an error; in the ``bfcl`` profile a regex never matches
  (error).
- ``optional``: an absent argument matches, so each of these is a warning there, never an error.

The ``bfcl`` profile accepts what strict JSON Schema refuses (an answer's own type, BFCL's string
normalisation, nested matchers inside dicts), so there every finding about a value is a warning, never an error.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

from toolchoice_pipeline.suites.argument_schema import value_violations
from toolchoice_pipeline.suites.matchers import Matcher
from toolchoice_pipeline.util.user_regex import user_regex_search

Finding = tuple[str, str, bool]
_BFCL_OPTIONAL_MARK = ""


def expectation_findings(
    field: str, name: str, matcher: Matcher, parameters: dict[str, Any], profile: str
) -> list[Finding]:
    """Findings about the expected argument ``name`` (reported on ``field``) of a tool with ``parameters``."""
    schema = (parameters.get("properties") or {}).get(name)
    if not isinstance(schema, dict):
        return []
    lenient = profile == "bfcl"
    absent_matches = " (it matches only when the argument is left out)" if matcher.optional else ""
    if matcher.kind == "regex":
        if lenient:
            problem: str | None = "a regex matcher never matches in the bfcl profile: list the values in any_of"
        else:
            problem = _regex_problem(matcher.pattern or "", schema)
        return [(field, problem + absent_matches, not matcher.optional)] if problem else []
    values = [v for v in matcher.values if not (lenient and v == _BFCL_OPTIONAL_MARK)]
    if lenient:
        values = [v for v in values if not isinstance(v, (dict, list))]  # BFCL nests its matchers in these
    checks_format = "'format'" in repr(schema)  # only where the parameter's own schema names one: cheap
    bad: list[tuple[int, Any, str]] = []
    format_only: list[tuple[int, Any, str]] = []
    for index, value in enumerate(values):
        reason = _why_impossible(parameters, name, value, profile)
        if reason is not None:
            bad.append((index, value, reason))
            continue
        if not checks_format:
            continue
        format_reason = _reason(value_violations(parameters, name, _normalised(value), formats=True))
        if format_reason is not None:
            format_only.append((index, value, format_reason))
    findings: list[Finding] = []
    any_of = matcher.kind == "any_of" and len(matcher.values) > 1
    if bad:
        every = len(bad) == len(values) and not lenient and not matcher.optional
        if any_of:
            listed = "; ".join(f"any_of[{i}] {_shown(v)}: {reason}" for i, v, reason in bad)
            if len(bad) == len(values):
                message = f"no alternative is a value a valid call can hold ({listed})"
            else:
                message = f"alternatives no valid call can hold, so they never match ({listed})"
        else:
            _, value, reason = bad[0]
            message = f"expects {_shown(value)}, which no valid call can hold: {reason}"
        if lenient:
            message += " (the bfcl profile may still match it)"
        elif len(bad) == len(values):
            message += absent_matches
        findings.append((field, message, every))
    for index, value, reason in format_only:
        where = f"any_of[{index}] " if any_of else ""
        findings.append((field, f"{where}{_shown(value)} breaks the parameter's format: {reason}", False))
    return findings


def _why_impossible(parameters: dict[str, Any], name: str, value: Any, profile: str) -> str | None:
    """Why no schema-valid value of ``name`` can match ``value`` in ``profile``; None when one can."""
    found = value_violations(parameters, name, value)
    if not found:
        return None
    if profile != "bfcl" and not value_violations(parameters, name, _normalised(value)):
        return None  # the profile's normalisation makes it matchable (" a " matches "a"; 3.0 matches 3)
    return _reason(found)


def _reason(violations) -> str | None:
    if not violations:
        return None
    first = violations[0]
    inner = "/".join(str(part) for part in first.path[1:])
    return f"{first.message}" + (f" (at {inner})" if inner else "")


def _normalised(value: Any) -> Any:
    """``value`` as ``key_args`` compares it: strings NFC and trimmed, integral floats as ints, at every depth."""
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value).strip()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_normalised(item) for item in value]
    if isinstance(value, dict):
        return {key: _normalised(item) for key, item in value.items()}
    return value


def _regex_problem(pattern: str, schema: dict[str, Any]) -> str | None:
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else declared
    if isinstance(types, list) and types and "string" not in types:
        return (
            f"a regex matches only a string, and the parameter's type is {' or '.join(map(str, types))}: "
            "expect the value itself (or any_of)"
        )
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        strings = [unicodedata.normalize("NFC", v).strip() for v in enum if isinstance(v, str)]
        if not any(user_regex_search(pattern, text) for text in strings):
            return f"the regex {pattern!r} finds none of the parameter's enum values ({_shown(enum)})"
    return None


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."
