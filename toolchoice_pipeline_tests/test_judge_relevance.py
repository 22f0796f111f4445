"""The offline judge on "no call expected" steps: sharing words with a tool is not being served by it.

Requests written for these tests (not taken from BFCL): a call to a tool whose name's subject the request does
not mention, with arguments that hold nothing the request gives, is wrong; a request that lacks the numbers
the fitting tool needs makes answering without a call right; a tool whose subject the request names, with the
values it needs, makes a step without a call wrong.
"""

from __future__ import annotations

from toolchoice_pipeline.providers.offline_judge.fit import terms
from toolchoice_pipeline.providers.offline_judge.relevance import (
    grounded,
    lacks_values,
    request_acronyms,
    request_numbers,
    subject_named,
    subject_terms,
)
from toolchoice_pipeline.records.calls import Reply
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline_tests.test_judge_steps import calls, grade


def tool(name: str, description: str, **numbers: str) -> ToolDefinition:
    properties = {key: {"type": kind, "description": f"The {key.replace('_', ' ')}."} for key, kind in numbers.items()}
    return ToolDefinition(
        name=name,
        description=description,
        parameters={"type": "object", "properties": properties, "required": list(properties)},
    )


PACE = tool("running_pace", "Calculate the running pace per kilometre given distance and time.",
            distance_km="number", minutes="number")  # fmt: skip
TIDE = tool("get_tide_times", "Return the high and low tide times of a harbour for a given date.",
            harbour="string", date="string")  # fmt: skip
LOAN = tool("monthly_loan_payment", "Calculate the monthly payment of a loan given its amount, rate and term.",
            amount="number", annual_rate="number", years="integer")  # fmt: skip


def test_a_call_to_a_tool_sharing_words_but_not_its_subject_and_tied_to_nothing_asked_is_wrong():
    request = "Calculate the calories burned given a distance of 10 km and a weight of 70 kg."
    made_up = grade(request, calls(("running_pace", {"distance_km": 1, "minutes": 1})), [PACE])
    assert made_up.verdict == "incorrect" and "serves nothing asked" in made_up.conclusion
    # The step without a call is judged on the values only (real users name a subject in words of their own):
    # the request gives the two numbers the tool needs, so the fitting tool still counts as serving it.
    assert grade(request, Reply(text="About 700 kcal."), [PACE]).verdict == "incorrect"


def test_a_tool_whose_subject_is_asked_with_its_values_makes_no_call_wrong():
    request = "What is my running pace per km for 10 km in 50 minutes?"
    assert grade(request, Reply(text="5 min/km."), [PACE]).verdict == "incorrect"
    assert grade(request, calls(("running_pace", {"distance_km": 10, "minutes": 50})), [PACE]).verdict == ("correct")


def test_a_request_that_lacks_the_numbers_a_tool_needs_is_not_served_by_it():
    request = "What would the monthly payment on my loan be at a 4% rate?"
    found = grade(request, Reply(text="How much do you want to borrow, and for how long?"), [LOAN])
    assert found.verdict == "correct" and "too few of the numbers" in found.conclusion
    given = "Monthly payment of a loan of 200000 at 4% over 25 years?"
    assert grade(given, Reply(text="About 1055."), [LOAN]).verdict == "incorrect"


def test_a_call_grounded_in_the_request_is_never_called_unsupported():
    request = "Tell me the tides at Brest harbour tomorrow, and what the weather will be"
    assert grade(request, calls(("get_tide_times", {"harbour": "Brest", "date": "tomorrow"})), [TIDE]).verdict == (
        "correct"
    )


def test_the_subject_is_the_name_terms_the_description_confirms():
    assert subject_terms("determine_body_mass_index", "Calculate body mass index.") == set(terms("body mass index"))
    assert subject_terms("ChaFod", "Changes the selection of food.") == frozenset()  # a code, not words
    assert subject_terms("requests.get", "Sends a GET request.") == frozenset()  # actions only
    # no subject, or too few request terms to tell by (a request in another script): no verdict either way
    assert subject_named(tuple(terms("change my food order")), "ChaFod", "Changes the selection of food.") is None
    assert subject_named((), "get_current_weather", "Current weather of a city.") is None
    assert subject_named(tuple(terms("weather in Paris now")), "get_current_weather", "Current weather.") is True
    assert subject_named(tuple(terms("area of a triangle")), "determine_body_mass_index", "Body mass index.") is False


def test_numbers_and_grounding():
    assert request_numbers("base 6cm and height 10cm, a 1,000 m run, two laps") == 4
    assert lacks_values("a 25% discount and 10% tax", LOAN.parameters) is True
    assert lacks_values("200000 at 4% over 25 years", LOAN.parameters) is False
    assert grounded("the tides at Brest", {"harbour": "brest"}) and grounded("in 50 minutes", {"m": 50})
    assert not grounded("the tides at Brest", {"harbour": "value", "n": 1})


def test_a_subject_named_in_other_words_still_counts():
    # by its initials, by the description's own words for what the tool is for, or by another stem of the word
    gcd = "The GCD (greatest common divisor) of two integers."
    assert subject_named(tuple(terms("greatest common divisor of 12 and 15")) + tuple(request_acronyms(
        "greatest common divisor of 12 and 15")), "math.gcd", gcd) is True  # fmt: skip
    curve = "Calculate the area under a curve. Integrates a function between two values."
    assert subject_named(tuple(terms("the area under the curve of y = x^3")), "integrate", curve) is True
    evolution = "Predict the evolution rate of a species."
    assert subject_named(tuple(terms("the evolutionary rate of Homo sapiens")), "prediction.evolution", evolution)
    assert "bmi" in request_acronyms("the Body Mass Index of a person")
