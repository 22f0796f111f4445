"""The ``key_args`` matching profile (DESIGN §4), the default for our own suites.

- The first call decides: the first tool call of the first step, in the order the model listed it.
- Except for a task that expects several calls (``expected.calls`` with two or more, as BFCL's parallel
  tasks): the step's calls are matched as a set, as BFCL does. Right tool: the step called exactly the
  expected tools (the same names, each as many times, in any order). Right arguments: right tool, every
  call's arguments decoded to an object, and a one-to-one pairing of expected calls with calls exists in which
  every pair has the same tool and matching key arguments (order-free; each call serves one expected call).
  A tool call written into the text fails the set. ``expected.calls`` with one call keeps the first-call rule.
- Right tool: that call's name equals ``expected.tool``; or no call at all where ``expected.tool`` is null.
  A tool call written into the text (flag ``invalid_call``) is never the right tool and never a correct
  "no call". Where ``expected.any_call`` is true, any tool is right (arguments: decoded to an object).
- Right arguments: right tool, the arguments decoded to an object (undecodable arguments never match), and
  every key argument named in ``expected.arguments`` matches; arguments the expectation does not name are fine.
- Values: strings are compared after Unicode NFC and trimming surrounding whitespace, then exactly (case
  matters); numbers by value (``40 == 40.0``) but booleans are not numbers; objects need the same keys and
  lists the same length and order, their values compared by these same rules (nothing is hashed, so any
  JSON value works); an expected ``null`` needs the argument present and null.
- Matchers (:mod:`toolchoice_pipeline.suites.matchers`): ``any_of``, ``regex`` (an RE2 search in a string value,
  both normalised to NFC), ``value`` and ``optional`` (absent is fine; present must match).
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from typing import Any

from toolchoice_pipeline.records.calls import Reply, ToolCall
from toolchoice_pipeline.scoring.matching.bfcl import expected_calls, perfect_assignment
from toolchoice_pipeline.scoring.matching.profile import MatchProfile, MatchResult
from toolchoice_pipeline.suites.matchers import Matcher, parse_matcher
from toolchoice_pipeline.suites.tasks import Expected, ExpectedCall
from toolchoice_pipeline.util.user_regex import user_regex_search


def normalise_string(value: str) -> str:
    """Unicode NFC with surrounding whitespace trimmed (the string rule of DESIGN §4)."""
    return unicodedata.normalize("NFC", value).strip()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def values_match(expected: Any, actual: Any) -> bool:
    """True when ``actual`` equals ``expected`` under the value rules of DESIGN §4 (recursively)."""
    if expected is None:
        return actual is None
    if isinstance(expected, bool):
        return isinstance(actual, bool) and actual == expected
    if _is_number(expected):
        return _is_number(actual) and actual == expected
    if isinstance(expected, str):
        return isinstance(actual, str) and normalise_string(actual) == normalise_string(expected)
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return False
        want = {unicodedata.normalize("NFC", key): value for key, value in expected.items()}
        got = {unicodedata.normalize("NFC", key): value for key, value in actual.items()}
        return want.keys() == got.keys() and all(values_match(want[key], got[key]) for key in want)
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(values_match(e, a) for e, a in zip(expected, actual))
        )
    return False


def matcher_accepts(matcher: Matcher, actual: Any) -> bool:
    """True when a present argument value satisfies ``matcher``."""
    if matcher.kind == "regex":
        return isinstance(actual, str) and user_regex_search(matcher.pattern or "", normalise_string(actual))
    return any(values_match(option, actual) for option in matcher.values)


def key_argument_mismatch(expected_arguments: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """The first key argument that does not match, as a short reason; None when all match.

    Raises :class:`toolchoice_pipeline.suites.matchers.MatcherError` for a malformed matcher (suite validation
    reports those with file and line before any run).
    """
    actual = {unicodedata.normalize("NFC", key): value for key, value in arguments.items()}
    for name, spec in expected_arguments.items():
        matcher = parse_matcher(spec)
        key = unicodedata.normalize("NFC", name)
        if key not in actual:
            if matcher.optional:
                continue
            return f"key argument '{name}' is missing"
        if not matcher_accepts(matcher, actual[key]):
            return f"key argument '{name}' does not match"
    return None


def match_key_args(expected: Expected, reply: Reply) -> MatchResult:
    """Grade the first step's ``reply`` against ``expected`` in the ``key_args`` profile (DESIGN §4).

    Returns ``MatchResult(right_tool, right_args, reason)``; ``right_args`` implies ``right_tool``.
    """
    wanted = expected_calls(expected)
    if len(wanted) >= 2:
        return _match_call_set(wanted, reply)
    if len(wanted) == 1:
        expected = Expected(tool=wanted[0].tool, arguments=wanted[0].arguments)
    first: ToolCall | None = reply.first_call
    if expected.any_call:
        if first is None or first.is_invalid_call:
            return MatchResult(False, False, "no tool call where any call was expected")
        if first.arguments is None:
            return MatchResult(True, False, "the arguments are not a JSON object")
        return MatchResult(True, True, "a call where any call was expected")
    if expected.tool is None:
        if first is None:
            return MatchResult(True, True, "no call, and none expected")
        if first.is_invalid_call:
            return MatchResult(False, False, "a tool call written in the text where no call was expected")
        return MatchResult(False, False, f"called '{first.name}' where no call was expected")
    if first is None:
        return MatchResult(False, False, f"no call; expected '{expected.tool}'")
    if first.is_invalid_call:
        return MatchResult(False, False, "the first call is written in the text, not a tool call")
    if first.name != expected.tool:
        return MatchResult(False, False, f"called '{first.name}'; expected '{expected.tool}'")
    if first.arguments is None:
        return MatchResult(True, False, "the arguments are not a JSON object")
    mismatch = key_argument_mismatch(expected.arguments, first.arguments)
    if mismatch is not None:
        return MatchResult(True, False, mismatch)
    return MatchResult(True, True, "right tool and key arguments")


def _match_call_set(wanted: list[ExpectedCall], reply: Reply) -> MatchResult:
    """Several expected calls against the step's calls, as a set (see the module docstring)."""
    calls = reply.calls
    if any(call.is_invalid_call for call in calls):
        return MatchResult(False, False, "a tool call written in the text is not a call")
    called = Counter(str(call.name) for call in calls)
    expected_names = Counter(call.tool for call in wanted)
    if called != expected_names:
        got = ", ".join(f"'{c.name}'" for c in calls) or "no tool"
        return MatchResult(False, False, f"called [{got}]; expected [{', '.join(repr(c.tool) for c in wanted)}]")
    if any(call.arguments is None for call in calls):
        return MatchResult(True, False, "the arguments of a call are not a JSON object")
    compatible = [
        [
            call.name == want.tool and key_argument_mismatch(want.arguments, call.arguments or {}) is None
            for call in calls
        ]
        for want in wanted
    ]
    if perfect_assignment(compatible) is not None:
        return MatchResult(True, True, "every expected call matched, each by its own call")
    for index, row in enumerate(compatible):
        if not any(row):
            return MatchResult(True, False, f"expected call {index + 1} ({wanted[index].tool}) matched no call")
    return MatchResult(
        True, False, "the calls match the expected ones only in overlapping ways (no one-to-one pairing)"
    )


PROFILE = MatchProfile("key_args", lambda expected, reply, catalog: match_key_args(expected, reply), uses_catalog=False)
