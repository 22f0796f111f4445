"""Reading a judge's answer: the verdict comes from the structured field only (J01, J02, J04)."""

import json

import pytest

from toolchoice_pipeline.judge.parse import VERDICT_SCHEMA, parse_verdict, response_format_for
from toolchoice_pipeline_tests.conftest import CASES

JUDGE_CASES = {c["id"]: c for c in map(json.loads, (CASES / "judge_cases.jsonl").read_text().splitlines()) if c}


def test_j01_verdict_field_wins_over_words_in_the_reasoning():
    parsed = parse_verdict(JUDGE_CASES["J01"]["judge_output"])
    assert parsed.valid and (parsed.verdict == "correct") is JUDGE_CASES["J01"]["want"]["vote"]
    assert "correct" in parsed.reasoning


def test_j02_truncated_json_is_an_invalid_vote():
    parsed = parse_verdict(JUDGE_CASES["J02"]["judge_output"])
    assert JUDGE_CASES["J02"]["want"]["vote"] is None
    assert not parsed.valid and parsed.verdict is None
    assert "truncated" in parsed.error


@pytest.mark.parametrize("output", JUDGE_CASES["J04"]["judge_outputs"])
def test_j04_outputs_are_each_invalid(output):
    assert not parse_verdict(output).valid


@pytest.mark.parametrize(
    "output, reason",
    [
        ("", "empty output"),
        (None, "empty output"),
        ("<html><body>502 Bad Gateway</body></html>", "HTML"),
        ("The agent picked the right tool, so I would call this correct.", "prose only"),
        ('{"reasoning": "fine", "verdict": "mostly correct"}', "not one of"),
        ('{"reasoning": "fine", "verdict": true}', "not one of"),
        ('{"verdict": "correct"}', "no reasoning"),
        ('["correct"]', "not an object"),
    ],
)
def test_unusable_outputs_are_invalid_with_a_reason(output, reason):
    parsed = parse_verdict(output)
    assert not parsed.valid
    assert reason in parsed.error


def test_reasoning_in_prose_then_a_json_verdict_is_extracted():
    text = (
        "Step 1: the user wants to delete a file.\nStep 2: Read cannot delete.\n"
        '{"reasoning": "Read is read-only", "verdict": "incorrect"}'
    )
    assert parse_verdict(text).verdict == "incorrect"


def test_fenced_json_is_extracted_and_the_last_verdict_object_counts():
    text = (
        'Draft: {"reasoning": "first thought", "verdict": "incorrect"}\nOn reflection:\n'
        '```json\n{"reasoning": "Glob fits better", "verdict": "incorrect"}\n```'
    )
    parsed = parse_verdict(text)
    assert parsed.verdict == "incorrect" and parsed.reasoning == "Glob fits better"


def test_a_draft_and_a_final_object_that_disagree_are_an_invalid_vote():
    text = (
        'Draft: {"reasoning": "first thought", "verdict": "correct"}\nOn reflection:\n'
        '```json\n{"reasoning": "Glob fits better", "verdict": "incorrect"}\n```'
    )
    parsed = parse_verdict(text)
    assert not parsed.valid and parsed.error.startswith("conflicting verdicts")


def test_a_repeated_verdict_key_with_different_values_is_an_invalid_vote():
    parsed = parse_verdict('{"reasoning": "r", "verdict": "correct", "verdict": "incorrect"}')
    assert not parsed.valid and "verdict key is given 2 times" in parsed.error
    assert parse_verdict('{"reasoning": "r", "verdict": "correct", "verdict": "correct"}').verdict == "correct"


def test_an_abstention_is_an_invalid_vote_that_says_so():
    parsed = parse_verdict('{"reasoning": "Verdict: abstain, because nothing bears on it.", "verdict": "abstain"}')
    assert not parsed.valid and parsed.error == "the judge abstained: Verdict: abstain, because nothing bears on it."


def test_verdict_case_and_spaces_are_normalised():
    assert parse_verdict('{"reasoning": "ok", "verdict": " Correct "}').verdict == "correct"


def test_response_format_only_for_models_that_take_a_json_schema():
    assert response_format_for("local/catalog-judge") is None
    assert response_format_for("no-such-provider/x") is None
    wanted = response_format_for("openai/gpt-4o-mini")
    assert wanted["type"] == "json_schema" and wanted["json_schema"]["schema"] == VERDICT_SCHEMA
    assert VERDICT_SCHEMA["properties"]["verdict"]["enum"] == ["correct", "incorrect"]
