"""The ``key_args`` matching profile (DESIGN §4): every shared scoring case, the value rules, and properties."""

import json
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolchoice_pipeline.records.calls import Reply, ToolCall, flag_hallucinated, make_call, normalise_response
from toolchoice_pipeline.scoring.matching import match_reply
from toolchoice_pipeline.scoring.matching.key_args import match_key_args, values_match
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.tasks import Expected, Task
from toolchoice_pipeline_tests.conftest import CASES

CATALOG = [ToolDefinition.model_validate(tool) for tool in json.loads((CASES / "catalog.json").read_text())]
SCORING_CASES = [json.loads(line) for line in (CASES / "scoring_cases.jsonl").read_text().splitlines() if line]


def case_as_task(case: dict) -> Task:
    """A shared case in the project's own task format (the neutral layout's fields mapped one to one)."""
    return Task.model_validate(
        {
            "id": case["id"],
            "messages": case["messages"],
            "expected": case["expected"],
            "tools": None,
            "tool_results": None,
            "tags": [],
        }
    )


@pytest.mark.parametrize("case", SCORING_CASES, ids=[c["id"] for c in SCORING_CASES])
def test_shared_scoring_case_gives_the_wanted_outcome(case):
    task = case_as_task(case)
    reply = flag_hallucinated(normalise_response(case["response"]), [t.name for t in CATALOG])
    result = match_reply(task.expected, reply, CATALOG, "key_args")
    want = case["want"]
    assert (result.right_tool, result.right_args, len(reply.calls)) == (
        want["right_tool"],
        want["right_args"],
        want["calls"],
    ), result.reason


def call(name="Read", arguments=None, flags=()):
    return ToolCall(name=name, arguments=arguments, flags=list(flags))


def grade(expected_arguments, arguments, tool="Read"):
    result = match_key_args(Expected(tool=tool, arguments=expected_arguments), Reply(calls=[call(tool, arguments)]))
    return result.right_args


@pytest.mark.parametrize(
    ("expected", "actual", "want"),
    [
        ("src/a.py", "  src/a.py\n", True),  # surrounding whitespace is trimmed
        ("README.md", "readme.md", False),  # case matters
        ("caf\u00e9", "cafe\u0301", True),  # NFC
        (40, 40.0, True),
        (40, 41, False),
        (1, True, False),  # booleans are not numbers
        (True, 1, False),
        (False, False, True),
        ("40", 40, False),
        (None, None, True),
        ({"a": [1, {"b": "x"}]}, {"a": [1.0, {"b": " x "}]}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),  # nested objects need the same keys
        ([1, 2], [2, 1], False),  # lists keep their order
        ([1, 2], [1, 2, 3], False),
        ([[1], {"k": []}], [[1], {"k": []}], True),  # unhashable values compare fine
    ],
)
def test_value_rules(expected, actual, want):
    assert values_match(expected, actual) is want


def test_expected_null_needs_the_argument_present_and_null():
    assert grade({"offset": None}, {"file_path": "a", "offset": None})
    assert not grade({"offset": None}, {"file_path": "a"})
    assert not grade({"offset": None}, {"file_path": "a", "offset": 0})


def test_matchers_any_of_regex_value_optional():
    assert grade({"file_path": {"any_of": ["a.py", "b.py"]}}, {"file_path": "b.py"})
    assert not grade({"file_path": {"any_of": ["a.py", "b.py"]}}, {"file_path": "c.py"})
    assert grade({"file_path": {"regex": r"settings\.py$"}}, {"file_path": "src/settings.py"})
    assert not grade({"file_path": {"regex": "settings"}}, {"file_path": 7})
    assert grade({"file_path": {"value": {"regex": "x"}}}, {"file_path": {"regex": "x"}})
    assert not grade({"file_path": {"value": {"regex": "x"}}}, {"file_path": "x"})
    assert grade({"limit": {"value": 5, "optional": True}}, {"file_path": "a"})
    assert not grade({"limit": {"value": 5, "optional": True}}, {"limit": 6})
    assert not grade({"limit": 5}, {"file_path": "a"})


def test_undecodable_arguments_keep_the_tool_right_but_never_the_arguments():
    reply = Reply(calls=[make_call("Read", '{"file_path": "a')])
    result = match_key_args(Expected(tool="Read", arguments={}), reply)
    assert (result.right_tool, result.right_args) == (True, False)


def test_invalid_call_is_never_right_and_never_a_correct_no_call():
    invalid = Reply(text="<tool_call>{...", calls=[call("Read", None, ["invalid_call"])])
    assert match_key_args(Expected(tool="Read", arguments={}), invalid).right_tool is False
    assert match_key_args(Expected(tool=None), invalid).right_tool is False


def test_the_first_listed_call_decides():
    reply = Reply(calls=[call("Grep", {"pattern": "x"}), call("Read", {"file_path": "a"})])
    assert match_key_args(Expected(tool="Read", arguments={"file_path": "a"}), reply).right_tool is False
    assert match_key_args(Expected(tool="Grep", arguments={"pattern": "x"}), reply).right_args is True


# --- properties ----------------------------------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)
argument_objects = st.dictionaries(st.text(min_size=1, max_size=8), json_values, max_size=4)
# Strings built from characters that have a distinct NFD form, so the NFD property is not vacuous.
accented = st.text(alphabet="ae\u00e9\u00e8\u00f1\u00fc\u00c5\u1e9b\u0323 x", max_size=10)
# Keys use precomposed letters only, so two distinct keys never share an NFC form.
accented_keys = st.text(alphabet="ab\u00e9\u00f1\u00fc ", min_size=1, max_size=6)
accented_values = st.recursive(
    st.one_of(accented, st.integers(-5, 5), st.booleans()),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(accented_keys, children, max_size=3)),
    max_leaves=10,
)


def exact(value):
    return {"value": value}


def to_nfd(value):
    if isinstance(value, str):
        return unicodedata.normalize("NFD", value)
    if isinstance(value, list):
        return [to_nfd(v) for v in value]
    if isinstance(value, dict):
        return {to_nfd(k): to_nfd(v) for k, v in value.items()}
    return value


@settings(max_examples=200, deadline=None)
@given(argument_objects)
def test_a_call_matches_itself(arguments):
    expected = Expected(tool="Read", arguments={name: exact(value) for name, value in arguments.items()})
    result = match_key_args(expected, Reply(calls=[make_call("Read", arguments)]))
    assert (result.right_tool, result.right_args) == (True, True)


@settings(max_examples=200, deadline=None)
@given(argument_objects, argument_objects, st.booleans())
def test_json_string_and_object_arguments_give_the_same_result(expected_arguments, arguments, overlap):
    if overlap:  # make matches likely, not only mismatches
        arguments = {**arguments, **expected_arguments}
    expected = Expected(tool="Read", arguments={k: exact(v) for k, v in expected_arguments.items()})
    as_object = match_key_args(expected, Reply(calls=[make_call("Read", arguments)]))
    as_string = match_key_args(expected, Reply(calls=[make_call("Read", json.dumps(arguments))]))
    assert (as_object.right_tool, as_object.right_args) == (as_string.right_tool, as_string.right_args)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(accented_keys, accented_values, max_size=3),
    st.dictionaries(accented_keys, accented_values, max_size=3),
    st.booleans(),
)
def test_nfc_and_nfd_strings_give_the_same_result(expected_arguments, arguments, overlap):
    if overlap:
        arguments = {**arguments, **expected_arguments}
    nfc = {unicodedata.normalize("NFC", k): v for k, v in arguments.items()}
    expected = Expected(tool="Read", arguments={k: exact(v) for k, v in expected_arguments.items()})
    composed = match_key_args(expected, Reply(calls=[make_call("Read", nfc)]))
    decomposed = match_key_args(expected, Reply(calls=[make_call("Read", to_nfd(nfc))]))
    assert composed.right_args == decomposed.right_args
    if overlap and expected_arguments:
        assert composed.right_args and decomposed.right_args
