"""Arguments checked against a tool's ``parameters`` JSON Schema: call arguments (``arguments_valid``) and the
values a task expects (``toolchoice validate``).

Validation is jsonschema-rs (Rust), one compiled validator per distinct schema (kept for the process, bounded),
with the linear-time regex engine for ``pattern`` and no retrieval of any ``$ref`` (``offline``). ``format`` is
an annotation (JSON Schema 2020-12's default; providers do not enforce it): it is checked only by
:func:`value_violations` with ``formats=True``. A schema jsonschema-rs cannot compile is treated as accepting
everything (the catalog check reports bad schemas).

Each violation has the flag of its kind (:data:`~toolchoice_pipeline.records.calls.ARGUMENT_SCHEMA_FLAGS`):
``missing_required`` (a ``required`` property absent, at any depth), ``wrong_type``, ``not_in_enum`` (``enum``
or ``const``), ``schema_violation`` (anything else: bounds, pattern, lengths, ``additionalProperties``...).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from toolchoice_pipeline.records.calls import (
    ARGUMENT_SCHEMA_FLAGS,
    FLAG_MISSING_REQUIRED,
    FLAG_NOT_IN_ENUM,
    FLAG_SCHEMA_VIOLATION,
    FLAG_WRONG_TYPE,
    Reply,
    ToolCall,
)
from toolchoice_pipeline.suites.catalog import ToolDefinition

_KIND_FLAGS = {
    "Required": FLAG_MISSING_REQUIRED,
    "Type": FLAG_WRONG_TYPE,
    "Enum": FLAG_NOT_IN_ENUM,
    "Constant": FLAG_NOT_IN_ENUM,
}
MAX_VALIDATORS = 4096
_VALIDATORS: dict[tuple[str, bool], Any] = {}
_UNCOMPILABLE = object()


@dataclass(frozen=True)
class Violation:
    """One broken rule: its ``flag``, where in the arguments (``path``, JSON pointer parts) and jsonschema-rs's
    ``message``."""

    flag: str
    path: tuple
    message: str


def _compiled(parameters: dict[str, Any], formats: bool = False) -> Any:
    """The jsonschema-rs validator of ``parameters`` (None when it does not compile), from the process cache:
    by the schema object first (a loaded catalog keeps its objects; the cache holds each object it keys, so an
    ``id`` is not reused while cached), else by the schema's text."""
    entry = _BY_OBJECT.get((id(parameters), formats))
    if entry is not None and entry[0] is parameters:
        return entry[1]
    validator = _compiled_by_text(parameters, formats)
    if len(_BY_OBJECT) >= MAX_VALIDATORS:
        _BY_OBJECT.pop(next(iter(_BY_OBJECT)))
    _BY_OBJECT[(id(parameters), formats)] = (parameters, validator)
    return validator


_BY_OBJECT: dict[tuple[int, bool], tuple[dict[str, Any], Any]] = {}


def _compiled_by_text(parameters: dict[str, Any], formats: bool) -> Any:
    key = (repr(parameters), formats)
    found = _VALIDATORS.get(key)
    if found is None:
        import jsonschema_rs

        try:
            found = jsonschema_rs.validator_for(
                parameters,
                validate_formats=formats,
                pattern_options=jsonschema_rs.RegexOptions(),
                offline=True,
            )
        except Exception:  # noqa: BLE001 - an uncompilable schema accepts everything (the catalog check says why)
            found = _UNCOMPILABLE
        if len(_VALIDATORS) >= MAX_VALIDATORS:
            _VALIDATORS.pop(next(iter(_VALIDATORS)))
        _VALIDATORS[key] = found
    return None if found is _UNCOMPILABLE else found


def _violations(validator: Any, instance: Any) -> list[Violation]:
    if validator is None:
        return []
    try:
        if validator.is_valid(instance):
            return []
        errors = list(validator.iter_errors(instance))
    except Exception:  # noqa: BLE001 - a value jsonschema-rs cannot take (an int beyond 64 bits...): not judged
        return []
    return [
        Violation(
            _KIND_FLAGS.get(type(error.kind).__name__, FLAG_SCHEMA_VIOLATION), tuple(error.instance_path), error.message
        )
        for error in errors
    ]


def argument_violations(parameters: dict[str, Any], arguments: dict[str, Any]) -> list[Violation]:
    """Every rule of ``parameters`` that the decoded call ``arguments`` break (empty when valid)."""
    return _violations(_compiled(parameters), arguments)


def value_violations(parameters: dict[str, Any], name: str, value: Any, *, formats: bool = False) -> list[Violation]:
    """The rules that ``value`` breaks as the argument ``name`` of a tool with ``parameters``: the arguments
    ``{name: value}`` are validated against the whole schema (so ``$ref`` s resolve) and only the violations
    under ``name`` are kept (required siblings, ``additionalProperties`` of the top level are not its concern).
    ``formats`` also checks ``format`` (dates, e-mail addresses, URIs...)."""
    found = _violations(_compiled(parameters, formats), {name: value})
    return [v for v in found if v.path[:1] == (name,)]


def argument_flags(violations: Iterable[Violation]) -> list[str]:
    """The distinct flags of ``violations``, in the order of :data:`ARGUMENT_SCHEMA_FLAGS`."""
    kinds = {v.flag for v in violations}
    return [flag for flag in ARGUMENT_SCHEMA_FLAGS if flag in kinds]


class ArgumentChecker:
    """Flags the calls of replies whose arguments break their tool's schema.

    Each tool definition's validator is looked up once per ``parameters`` object (the checker keeps the objects
    it has seen alive, so an ``id`` is never reused while it lives); callers pass each catalog as a mapping
    by tool name, built once per catalog."""

    def __init__(self) -> None:
        self._validators: dict[int, tuple[dict[str, Any], Any]] = {}

    def _validator(self, parameters: dict[str, Any]) -> Any:
        entry = self._validators.get(id(parameters))
        if entry is None or entry[0] is not parameters:
            entry = self._validators[id(parameters)] = (parameters, _compiled(parameters))
        return entry[1]

    def flag(self, reply: Reply, tools: Mapping[str, ToolDefinition]) -> Reply:
        """A copy of ``reply`` whose calls to a tool in ``tools`` (by name) with decoded arguments carry the flags
        of their schema violations (flags already there are kept); ``reply`` itself when nothing is added."""
        calls = []
        changed = False
        for call in reply.calls:
            tool = tools.get(call.name) if call.name is not None else None
            if tool is not None and call.arguments is not None and not call.is_invalid_call:
                found = argument_flags(_violations(self._validator(tool.parameters), call.arguments))
                added = [flag for flag in found if flag not in call.flags]
                if added:
                    # model_construct: the fields are the call's own, already validated (a copy costs 4x more)
                    call = ToolCall.model_construct(
                        name=call.name,
                        arguments=call.arguments,
                        raw_arguments=call.raw_arguments,
                        id=call.id,
                        flags=[*call.flags, *added],
                    )
                    changed = True
            calls.append(call)
        return Reply.model_construct(text=reply.text, calls=calls) if changed else reply


def by_name(catalog: Iterable[ToolDefinition]) -> dict[str, ToolDefinition]:
    """``{name: tool}`` of a catalog (the first of a repeated name), for :meth:`ArgumentChecker.flag`."""
    tools: dict[str, ToolDefinition] = {}
    for tool in catalog:
        tools.setdefault(tool.name, tool)
    return tools
