"""Tool schemas from users, made safe to validate against: no retrieval, no backtracking regex, no ``$ref`` loop.

- :func:`schema_safety_problems` (used by ``toolchoice validate`` through :mod:`.catalog_files`): every
  ``pattern`` and ``patternProperties`` key must compile under RE2 (:mod:`toolchoice_pipeline.util.user_regex`), and every ``$ref``
  must point inside the schema itself (``#``, ``#/json/pointer`` or ``#anchor``), resolve there, and not start
  a chain of ``$ref`` s that comes back to itself. Returned as ``(path inside the schema, message)``.
- :func:`safe_validator` (used by the offline judge): the ``jsonschema`` validator of a schema's dialect
  with ``pattern``, ``patternProperties`` and ``additionalProperties`` evaluated on RE2, and a ``referencing``
  registry that refuses to retrieve anything, so a ``$ref`` to a URL is never fetched.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from toolchoice_pipeline.util.user_regex import UserRegexError, compile_user_regex, user_regex_search

# Keywords whose values are data, not subschemas: a "pattern" or "$ref" key inside them is not a keyword.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples", "example"})
# Keywords whose values map names to subschemas: their keys are names, not keywords.
_NAMED_SUBSCHEMAS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})


class RetrievalRefused(LookupError):
    """A ``$ref`` outside the schema: we never retrieve one."""


def _refuse(uri: str) -> Any:
    raise RetrievalRefused(f"$ref {uri!r} points outside the schema (references resolve only inside it)")


def _registry() -> Any:
    from referencing import Registry

    return Registry(retrieve=_refuse)  # type: ignore[call-arg]  # attrs keyword mypy does not see


def _walk(schema: Any) -> Iterator[tuple[tuple, dict[str, Any]]]:
    """Every subschema (a dict in schema position) with its path (depth first, one stack: no recursion limit)."""
    stack: list[tuple[tuple, Any]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            yield path, node
            for key, value in node.items():
                if key in _DATA_KEYWORDS or not isinstance(value, (dict, list)):
                    continue
                if key in _NAMED_SUBSCHEMAS and isinstance(value, dict):
                    stack.extend(((*path, key, name), sub) for name, sub in value.items())
                else:
                    stack.append(((*path, key), value))
        elif isinstance(node, list):
            stack.extend(((*path, index), item) for index, item in enumerate(node))


def walk_subschemas(schema: Any) -> Iterator[tuple[tuple, dict[str, Any]]]:
    """Every subschema of ``schema`` (a dict in schema position) with its path, depth first."""
    return _walk(schema)


def schema_safety_problems(schema: dict[str, Any]) -> list[tuple[tuple, str]]:
    """Regexes RE2 cannot run, and ``$ref`` s that point outside the schema, dangle or loop (see the module doc)."""
    problems: list[tuple[tuple, str]] = []
    refs: list[tuple[tuple, str]] = []
    if not _mentions_regex_or_ref(schema):
        return problems
    for path, sub in _walk(schema):
        if isinstance(sub.get("pattern"), str):
            problems.extend(_regex_problem((*path, "pattern"), sub["pattern"]))
        if isinstance(sub.get("patternProperties"), dict):
            for key in sub["patternProperties"]:
                problems.extend(_regex_problem((*path, "patternProperties", key), key))
        if isinstance(sub.get("$ref"), str):
            refs.append(((*path, "$ref"), sub["$ref"]))
    if refs:
        problems.extend(_ref_problems(schema, refs))
    return problems


def _mentions_regex_or_ref(schema: dict[str, Any]) -> bool:
    """A quick look (the schema's text, built in C) for the keywords :func:`schema_safety_problems` checks."""
    text = repr(schema)
    return "'pattern" in text or "'$ref'" in text


def _regex_problem(path: tuple, pattern: str) -> list[tuple[tuple, str]]:
    try:
        compile_user_regex(pattern)
    except UserRegexError as exc:
        return [(path, str(exc))]
    return []


def _ref_problems(schema: dict[str, Any], refs: list[tuple[tuple, str]]) -> list[tuple[tuple, str]]:
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    resource = DRAFT202012.create_resource(schema)
    resolver = _registry().with_resource("", resource).resolver_with_root(resource)
    problems: list[tuple[tuple, str]] = []
    for path, ref in refs:
        if not ref.startswith("#"):
            problems.append(
                (path, f"$ref {ref!r} points outside the schema (references resolve only inside it: use #/$defs/name)")
            )
            continue
        seen = [ref]
        current = ref
        while True:
            try:
                target = resolver.lookup(current).contents
            except (Unresolvable, RetrievalRefused, LookupError, ValueError):
                problems.append((path, f"$ref {current!r} resolves to nothing in the schema (dangling reference)"))
                break
            following = target.get("$ref") if isinstance(target, dict) else None
            if not isinstance(following, str) or not following.startswith("#"):
                break
            if following in seen:
                problems.append((path, f"$ref {ref!r} is circular ({' -> '.join([*seen, following])})"))
                break
            seen.append(following)
            current = following
    return problems


# --- validation at run time ------------------------------------------------------------------------------------


def _pattern(validator, pattern, instance, schema):
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not user_regex_search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator, pattern_properties, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            if user_regex_search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def additional_properties(instance: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """The keys of ``instance`` neither in ``properties`` nor matched by a ``patternProperties`` key (RE2)."""
    properties = schema.get("properties") or {}
    patterns = list(schema.get("patternProperties") or {})
    return [key for key in instance if key not in properties and not any(user_regex_search(p, key) for p in patterns)]


def _additional_properties(validator, allowed, instance, schema):
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    extras = additional_properties(instance, schema)
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        listed = ", ".join(repr(each) for each in sorted(extras, key=str))
        verb = "was" if len(extras) == 1 else "were"
        yield ValidationError(f"Additional properties are not allowed ({listed} {verb} unexpected)")


@lru_cache(maxsize=16)
def _safe_class(cls: Any) -> Any:
    from jsonschema.validators import extend

    return extend(
        cls,
        {"pattern": _pattern, "patternProperties": _pattern_properties, "additionalProperties": _additional_properties},
    )


def safe_validator(cls: Any, schema: dict[str, Any]) -> Any:
    """A validator of dialect ``cls`` for ``schema``: regex keywords on RE2, no ``$ref`` retrieval.

    An unresolvable ``$ref`` met while validating raises ``referencing.exceptions.Unresolvable`` (callers
    report it); a regex RE2 cannot run raises :class:`~toolchoice_pipeline.util.user_regex.UserRegexError`.
    """
    return _safe_class(cls)(schema, registry=_registry())
