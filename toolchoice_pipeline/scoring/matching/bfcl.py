"""The ``bfcl`` matching profile: the BFCL AST checker, with its known faults fixed (DESIGN §4, ``docs/bfcl.md``).

Source of the rules: ``berkeley-function-call-leaderboard/bfcl_eval/eval_checker/ast_eval/ast_checker.py`` in
ShishirPatil/gorilla (``simple_function_checker``, ``type_checker``, ``string_checker``, ``list_checker``,
``dict_checker``, ``list_dict_checker``, ``parallel_function_checker_no_order``), Python categories.

The whole first step is graded, not only its first call:

- **Any call** (``expected.any_call``, BFCL's relevance tasks): right tool and right arguments when the reply
  holds at least one call, none written into text, every one's arguments an object.
- **Right tool**: no call written into text (flag ``invalid_call``), and the called function names equal the
  expected ones as a multiset (same names, same number of calls, any order); where no call is expected, no call
  at all. A name is compared exactly as BFCL writes it (dotted names such as ``math.factorial`` included: the
  execution layer maps them to provider-safe names and back, :mod:`toolchoice_pipeline.execution.tool_names`).
- **Right arguments**: right tool, every call's arguments decoded to an object, and the expected calls can be
  paired one to one with the calls so that every pair passes BFCL's per-call check: no parameter outside the
  expected ones and the schema's; every parameter the schema marks ``required`` present; strict types (an int is
  accepted for a float, not the reverse; no strings for numbers; a bool is not an int); strings compared after
  BFCL's normalisation (:func:`standardize_string`); dicts and lists of dicts key by key the BFCL way;
  an expected parameter whose alternatives include ``""`` may be left out.

Differences from BFCL (each a fault in BFCL, all listed in ``docs/bfcl.md``): parallel calls are paired by a
proper assignment instead of BFCL's greedy first-fit; a call written into text is never a correct "no call"
(BFCL counts unparseable output as abstention); strings are normalised at every depth (BFCL: one level down)
and after Unicode NFC; an int counts as a float inside arrays too (BFCL: top level only); a bool never equals a
number inside lists and dicts (Python's ``True == 1`` lets it through in BFCL).

Expected arguments are stored in the matcher grammar of DESIGN §3 (:func:`possible_answer_to_argument` /
:func:`argument_to_possible_answer` convert from and to BFCL's list of alternatives); a ``regex`` matcher has no
BFCL meaning and never matches in this profile.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from typing import Any

from toolchoice_pipeline.records.calls import Reply, ToolCall
from toolchoice_pipeline.scoring.matching.profile import MatchProfile, MatchResult
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.matchers import is_matcher_object, parse_matcher
from toolchoice_pipeline.suites.tasks import Expected, ExpectedCall

OPTIONAL_MARK = ""
"""BFCL's marker for "this parameter may be left out", found among a parameter's alternatives."""

# JSON Schema type (as the importer writes it) -> the Python type BFCL's checker expects. BFCL's own names map
# the same way (dict->object, float->number, tuple->array); a missing type is BFCL's "any", which it checks as str.
_PYTHON_TYPES: dict[str | None, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
    None: str,
}
_STANDARDIZE = re.compile(r"[ \,\.\/\-\_\*\^]")


# --- the expected-argument codec ------------------------------------------------------------------------------


def _shape(schema: dict[str, Any] | None) -> str:
    """``dict`` for an object parameter, ``list_of_dict`` for an array of objects, else ``plain``: the two
    shapes whose alternatives BFCL writes as ``{key: [alternatives]}`` dicts."""
    schema = schema or {}
    if schema.get("type") == "object":
        return "dict"
    items = schema.get("items")
    if schema.get("type") == "array" and isinstance(items, dict) and items.get("type") == "object":
        return "list_of_dict"
    return "plain"


def _each_dict(values: list[Any], shape: str, convert: Callable[[dict[str, Any]], Any]) -> list[Any]:
    """``values`` with ``convert`` applied to each dict alternative (shape ``dict``) or to each dict inside each
    list alternative (shape ``list_of_dict``); other values, and every value of shape ``plain``, unchanged."""
    if shape == "dict":
        return [convert(v) if isinstance(v, dict) else v for v in values]
    if shape == "list_of_dict":
        return [[convert(d) if isinstance(d, dict) else d for d in v] if isinstance(v, list) else v for v in values]
    return values


def _is_optional_mark(value: Any) -> bool:
    return isinstance(value, str) and value == OPTIONAL_MARK


def possible_answer_to_argument(alternatives: list[Any], schema: dict[str, Any] | None = None) -> Any:
    """One BFCL possible answer (a parameter's list of acceptable values) as an expected argument (DESIGN §3).

    ``[v]`` gives ``v`` (or ``{"any_of": [v]}`` when ``v`` looks like a matcher); several values give
    ``{"any_of": [...]}``; ``""`` among them adds ``"optional": true`` (``[""]`` alone gives
    ``{"any_of": [""], "optional": true}``: absent, or present and empty). For an object parameter (``schema``
    type ``object``) or an array of objects, each dict alternative's ``{key: [alternatives]}`` is converted the
    same way, key by key. Raises ``ValueError`` when ``alternatives`` (or a nested one) is not a list.
    """
    if not isinstance(alternatives, list):
        raise ValueError("a BFCL possible answer must be a list of acceptable values")
    optional = any(_is_optional_mark(a) for a in alternatives)
    values = [a for a in alternatives if not _is_optional_mark(a)]
    values = _each_dict(values, _shape(schema), _encode_dict)
    if not values:
        values = [OPTIONAL_MARK]
    if optional:
        return {"any_of": values, "optional": True}
    if len(values) == 1 and not is_matcher_object(values[0]):
        return values[0]
    return {"any_of": values}


def _encode_dict(value: dict[str, Any]) -> dict[str, Any]:
    return {key: possible_answer_to_argument(alternatives) for key, alternatives in value.items()}


def argument_to_possible_answer(argument: Any, schema: dict[str, Any] | None = None) -> list[Any] | None:
    """The inverse of :func:`possible_answer_to_argument`: BFCL's list of alternatives, ``""`` marking optional.

    Returns None for a ``regex`` matcher (no BFCL equivalent). Raises
    :class:`~toolchoice_pipeline.suites.matchers.MatcherError` for a malformed matcher.
    """
    matcher = parse_matcher(argument)
    if matcher.kind == "regex":
        return None
    alternatives = _each_dict(list(matcher.values), _shape(schema), _decode_dict)
    if matcher.optional and not any(_is_optional_mark(a) for a in alternatives):
        alternatives.append(OPTIONAL_MARK)
    return alternatives


def _decode_dict(value: dict[str, Any]) -> dict[str, Any] | None:
    decoded = {}
    for key, argument in value.items():
        alternatives = argument_to_possible_answer(argument)
        if alternatives is None:
            return None
        decoded[key] = alternatives
    return decoded


# --- BFCL's value rules --------------------------------------------------------------------------------------


def standardize_string(value: str) -> str:
    """BFCL's string normalisation: drop spaces and ``,./-_*^``, lowercase, ``'`` -> ``"``; plus Unicode NFC
    first (our addition, so canonically equal strings compare equal)."""
    value = unicodedata.normalize("NFC", value)
    return _STANDARDIZE.sub("", value).lower().replace("'", '"')


def _same(a: Any, b: Any) -> bool:
    """Python ``==`` as BFCL relies on it (``1 == 1.0``, lists and dicts element-wise), except that a bool
    never equals a number (BFCL lets ``True`` match ``1`` inside lists and dicts)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, dict)) or isinstance(b, (list, dict)):
        return False
    return a == b


def _among(value: Any, options: list[Any]) -> bool:
    return any(_same(value, option) for option in options)


def _answer_type(alternatives: list[Any]) -> type | None:
    """The type of the first alternative that is not the optional mark (BFCL ``get_possible_answer_type``)."""
    for alternative in alternatives:
        if not _is_optional_mark(alternative):
            return type(alternative)
    return None


def _type_check(value: Any, alternatives: list[Any], expected: type, nested: type | None) -> tuple[bool, bool]:
    """``(valid, is_variable)`` as BFCL's ``type_checker``: the value has the schema's type (one level of list
    items checked against each list alternative), or the type of the expected alternatives (a "variable")."""
    answer_type = _answer_type(alternatives)
    is_variable = answer_type is not None and answer_type is not expected
    if type(value) is expected:
        if nested is None:
            return True, is_variable
        assert isinstance(value, list)  # ``nested`` (the items' type) is given for lists only
        for alternative in alternatives:
            if type(alternative) is list and not all(_item_type_ok(item, alternative, nested) for item in value):
                continue
            return True, is_variable
        return False, is_variable
    if answer_type is not None and type(value) is answer_type:
        return True, True
    return False, is_variable


def _standardized(value: Any) -> Any:
    """``value`` with :func:`standardize_string` applied to every string in it, at any depth (BFCL applies it
    only one level down: to a string, a list's strings and a dict's string values)."""
    if isinstance(value, str):
        return standardize_string(value)
    if isinstance(value, list):
        return [_standardized(item) for item in value]
    if isinstance(value, dict):
        return {key: _standardized(item) for key, item in value.items()}
    return value


def _item_type_ok(item: Any, alternative: list[Any], nested: type) -> bool:
    """One list item's type, as BFCL checks it, except that an int is accepted for a float here too (BFCL
    converts ints only at the top level)."""
    if nested is float and type(item) is int:
        item = float(item)
    return _type_check(item, alternative, nested, None)[0]


def _string_ok(value: str, alternatives: list[Any]) -> bool:
    return standardize_string(value) in [standardize_string(a) for a in alternatives if isinstance(a, str)]


def _list_ok(value: list[Any], alternatives: list[Any]) -> bool:
    # A string alternative is iterated as BFCL does: "" (the optional mark) becomes the empty list.
    wanted = [_standardized(list(a)) for a in alternatives if isinstance(a, (list, str))]
    return _among(_standardized(value), wanted)


def _dict_error(value: dict[str, Any], alternatives: list[Any]) -> str | None:
    """BFCL's ``dict_checker``: the first dict alternative whose keys and values all accept ``value``."""
    error: str | None = "no expected dict to compare with"
    for alternative in alternatives:
        if _is_optional_mark(alternative):
            continue
        if not isinstance(alternative, dict):
            error = f"expected {alternative!r}, got a dict"
            continue
        error = None
        for key, item in value.items():
            if key not in alternative:
                error = f"unexpected dict key {key!r}"
                break
            if not _among(_standardized(item), [_standardized(o) for o in alternative[key]]):
                error = f"invalid value for dict key {key!r}: {value[key]!r}"
                break
        if error is None:
            for key, options in alternative.items():
                if key not in value and not any(_is_optional_mark(o) for o in options):
                    error = f"missing dict key {key!r}"
                    break
        if error is None:
            return None
    return error


def _list_of_dict_error(value: list[Any], alternatives: list[Any]) -> str | None:
    """BFCL's ``list_dict_checker``: some alternative of the same length whose dicts accept ``value``'s in order."""
    error: str | None = "no expected list to compare with"
    for alternative in alternatives:
        expected_dicts = alternative if isinstance(alternative, list) else []
        if len(value) != len(expected_dicts):
            error = "wrong number of dicts in the list"
            continue
        error = None
        for got, want in zip(value, expected_dicts):
            error = _dict_error(got, [want]) if isinstance(got, dict) else f"expected a dict, got {got!r}"
            if error is not None:
                break
        if error is None:
            return None
    return error


def _python_type(declared: Any) -> type | None:
    """The Python type BFCL checks for a JSON Schema ``type`` (no type = BFCL's "any" = str); None for others."""
    if declared is None or (isinstance(declared, str) and declared in _PYTHON_TYPES):
        return _PYTHON_TYPES[declared]
    return None


def _parameter_error(name: str, value: Any, alternatives: list[Any], schema: dict[str, Any]) -> str | None:
    """BFCL's per-parameter check (types, then values); None when the value is acceptable."""
    declared = schema.get("type")
    expected = _python_type(declared)
    if expected is None:
        # A type BFCL never declares (a JSON Schema union, "null"...): values only.
        return None if _among(value, alternatives) else f"invalid value for {name!r}: {value!r}"
    nested = None
    if expected is list:
        items = schema.get("items")
        if isinstance(items, dict):
            nested = _python_type(items.get("type"))
    if expected is float and type(value) is int:
        value = float(value)
    valid, is_variable = _type_check(value, alternatives, expected, nested)
    if not valid:
        return f"wrong type for {name!r}: expected {declared or 'any'}, got {type(value).__name__}"
    if not is_variable:
        if expected is dict:
            error = _dict_error(value, alternatives)
            return None if error is None else f"{name!r}: {error}"
        if expected is list and nested is dict:
            error = _list_of_dict_error(value, alternatives)
            return None if error is None else f"{name!r}: {error}"
        if expected is str:
            return None if _string_ok(value, alternatives) else f"invalid value for {name!r}: {value!r}"
        if expected is list:
            return None if _list_ok(value, alternatives) else f"invalid value for {name!r}: {value!r}"
    return None if _among(value, alternatives) else f"invalid value for {name!r}: {value!r}"


def call_error(expected: ExpectedCall, call: ToolCall, tool: ToolDefinition | None) -> str | None:
    """Why ``call`` fails BFCL's ``simple_function_checker`` for ``expected`` (None when it passes).

    ``tool`` is the expected function's definition (its schema gives ``required`` and the parameter types).
    """
    if call.is_invalid_call or call.name != expected.tool:
        return f"called {call.name!r}, expected {expected.tool!r}"
    if call.arguments is None:
        return f"arguments of {call.name!r} could not be decoded"
    if tool is None:
        return f"tool {expected.tool!r} is not in the task's catalog"
    parameters = tool.parameters or {}
    properties = parameters.get("properties") or {}
    possible: dict[str, list[Any]] = {}
    for name, argument in expected.arguments.items():
        schema = properties.get(name)
        alternatives = argument_to_possible_answer(argument, schema if isinstance(schema, dict) else None)
        if alternatives is None:
            return f"expected argument {name!r} is a regex matcher, which the bfcl profile does not support"
        possible[name] = alternatives
    for name in parameters.get("required") or []:
        if name not in call.arguments:
            return f"missing required parameter {name!r}"
    for name, value in call.arguments.items():
        if name not in properties or name not in possible:
            return f"unexpected parameter {name!r}"
        schema = properties[name] if isinstance(properties[name], dict) else {}
        error = _parameter_error(name, value, possible[name], schema)
        if error is not None:
            return error
    for name, alternatives in possible.items():
        if name not in call.arguments and not any(_is_optional_mark(a) for a in alternatives):
            return f"parameter {name!r} is expected and not optional"
    return None


# --- the profile ---------------------------------------------------------------------------------------------


def expected_calls(expected: Expected) -> list[ExpectedCall]:
    """Every expected call: ``expected.calls`` when given, else the one ``tool``/``arguments`` (none for null)."""
    if expected.tool is None:
        return []
    if expected.calls:
        return list(expected.calls)
    return [ExpectedCall(tool=expected.tool, arguments=expected.arguments)]


def perfect_assignment(compatible: list[list[bool]]) -> list[int] | None:
    """A one-to-one pairing of rows (expected calls) with columns (calls) using only compatible pairs, as
    ``column of each row``, or None when there is none (augmenting paths, Kuhn's algorithm)."""
    size = len(compatible)
    owner: list[int | None] = [None] * size

    def place(row: int, seen: set[int]) -> bool:
        for column in range(size):
            if compatible[row][column] and column not in seen:
                seen.add(column)
                current = owner[column]
                if current is None or place(current, seen):
                    owner[column] = row
                    return True
        return False

    for row in range(size):
        if not place(row, set()):
            return None
    pairing = [0] * size
    for column, placed in enumerate(owner):
        assert placed is not None  # a perfect assignment places every row
        pairing[placed] = column
    return pairing


def match_bfcl(expected: Expected, reply: Reply, catalog: list[ToolDefinition]) -> MatchResult:
    """Grade a first-step ``reply`` the BFCL way (see the module doc for right tool and right arguments).

    ``catalog`` is the catalog the task ran with (its inline ``tools`` for an imported BFCL task). Never raises
    for a model's reply; a malformed expectation raises :class:`~toolchoice_pipeline.suites.matchers.MatcherError`.
    """
    calls = reply.calls
    if expected.any_call:
        return _any_call(calls)
    wanted = expected_calls(expected)
    if not wanted:
        if not calls:
            return MatchResult(True, True, "no call expected and none made")
        if any(call.is_invalid_call for call in calls):
            return MatchResult(False, False, "a tool call written into the text where no call was expected")
        return MatchResult(False, False, f"called {', '.join(repr(c.name) for c in calls)} where no call was expected")
    if any(call.is_invalid_call for call in calls):
        return MatchResult(False, False, "a tool call written into the text is not a call")
    called = Counter(call.name for call in calls)
    wanted_names = Counter(call.tool for call in wanted)
    if called != wanted_names:
        return MatchResult(False, False, f"called {_names(calls)}; expected {_names_of(wanted)}")
    undecodable = [call.name for call in calls if call.arguments is None]
    if undecodable:
        return MatchResult(True, False, f"arguments of {undecodable[0]!r} could not be decoded")
    by_name = {tool.name: tool for tool in catalog}
    errors = [[call_error(want, call, by_name.get(want.tool)) for call in calls] for want in wanted]
    if perfect_assignment([[error is None for error in row] for row in errors]) is not None:
        return MatchResult(True, True, "every expected call matched")
    for index, row in enumerate(errors):
        if all(error is not None for error in row):
            same_name = [e for e, call in zip(row, calls) if call.name == wanted[index].tool]
            detail = same_name[0] if same_name else row[0]
            return MatchResult(
                True, False, f"expected call {index + 1} ({wanted[index].tool}) matched no call: {detail}"
            )
    return MatchResult(
        True, False, "the calls match the expected ones only in overlapping ways (no one-to-one pairing)"
    )


def _any_call(calls: list[ToolCall]) -> MatchResult:
    """BFCL's relevance check: the reply decodes to at least one call (a call written into the text, or
    arguments that are not an object, fail the decoding)."""
    if not calls:
        return MatchResult(False, False, "no call where any call was expected")
    if any(call.is_invalid_call for call in calls):
        return MatchResult(False, False, "a tool call written into the text is not a call")
    undecodable = [call.name for call in calls if call.arguments is None]
    if undecodable:
        return MatchResult(False, False, f"arguments of {undecodable[0]!r} could not be decoded")
    return MatchResult(True, True, "a call where any call was expected")


def _names(calls: list[ToolCall]) -> str:
    return "[" + ", ".join(repr(c.name) for c in calls) + "]" if calls else "no tool"


def _names_of(calls: list[ExpectedCall]) -> str:
    return "[" + ", ".join(repr(c.tool) for c in calls) + "]"


PROFILE = MatchProfile("bfcl", match_bfcl, uses_catalog=True)
