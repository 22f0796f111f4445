"""The offline judge's step coverage (``providers/offline_judge/coverage.py``), revised for BFCL's live and
parallel-multiple categories: a missing call needs a part of the request none of whose values a call serves;
a value left out beside served ones only qualifies them; names match word for word whatever the punctuation;
numbers in scientific notation are one value; a call is idle only when it shares nothing with the request."""

from __future__ import annotations

from toolchoice_pipeline.providers.offline_judge.coverage import (
    idle_calls,
    request_parts,
    request_values,
    unserved_values,
)


def texts(values) -> list[str]:
    return [v.text for v in values]


def test_a_listed_value_no_call_serves_is_a_missing_call():
    request = "Get the next game of the Lakers and the Bulls, and also of the Knicks."
    assert texts(unserved_values(request, [{"team": "Lakers"}, {"team": "Bulls"}])) == ["Knicks"]
    assert texts(unserved_values("Find the factorial of 5, 10 and 15.", [{"n": 5}, {"n": 10}])) == ["15"]
    assert unserved_values("Find the factorial of 5, 10 and 15.", [{"n": 5}, {"n": 10}, {"n": 15}]) == []


def test_a_value_beside_served_ones_in_the_same_part_only_qualifies_them():
    uber = "I need a Comfort Uber ride from 2020 Addison Street, Berkeley, and I can wait up to 600 seconds for it."
    arguments = [{"loc": "2020 Addison Street, Berkeley", "type": "comfort", "time": 600}]
    assert unserved_values(uber, arguments) == []
    # the same value alone in its own part is a part of the request no call serves
    uber_twice = "I need an Uber ride from 2020 Addison Street, and then another one from Sproul Hall."
    assert texts(unserved_values(uber_twice, [{"loc": "2020 Addison Street"}])) == ["Sproul Hall"]


def test_parts_split_at_cues_sentences_and_lists():
    text = (
        "Could you play songs by Taylor Swift for 20 minutes? "
        "Then play songs by Adele and Coldplay for 10 and 15 minutes respectively."
    )
    parts = request_parts(text, request_values(text))
    assert [[v.text for v in part] for part in parts] == [
        ["Taylor Swift", "20"],
        ["Adele"],
        ["Coldplay"],
        ["10"],
        ["15"],
    ]


def test_a_part_asks_by_its_own_values():
    # "random state of 1" in both parts: the second part's own value is 10, which no call passes
    trees = (
        "Build a decision tree with gini criterion, maximum depth of 5 and random state of 1, another with "
        "entropy criterion, maximum depth of 10 and random state of 1."
    )
    assert texts(unserved_values(trees, [{"criterion": "gini", "max_depth": 5, "random_state": 1}])) == ["10"]
    # the first of a listed series is a part of its own too
    value = "Calculate the present value of $1000 per year at 5% for 10, 20 and 30 years."
    assert texts(
        unserved_values(value, [{"p": 1000, "r": 0.05, "years": 20}, {"p": 1000, "r": 0.05, "years": 30}])
    ) == ["10"]


def test_numbers_in_scientific_notation_are_one_value():
    request = "What is the potential between charges of 1e-9 and 2e-9 at a distance of 0.05?"
    assert [v.value for v in request_values(request)] == [1e-9, 2e-9, 0.05]
    assert unserved_values(request, [{"q1": 1e-09, "q2": 2e-09, "r": 0.05}]) == []


def test_names_match_word_for_word_whatever_the_punctuation():
    request = "What's the area of a 5 cm square, and what is the weather in Queenstown Singapore?"
    calls = [("get_area_of_square", {"size": 5}), ("get_current_weather", {"location": "Queenstown, Singapore"})]
    assert idle_calls(request, calls) == []
    assert unserved_values(request, [args for _, args in calls]) == []


def test_a_call_is_idle_only_when_it_shares_nothing_with_the_request():
    # "Paris" appears in the catalog's own example: still a value the news call serves
    catalog = '{"name": "get_news_report", "description": "News for a city, e.g. Paris, France"}'
    request = "Fetch the latest news from Paris, France, and also the weather in Letterkenny, Ireland."
    calls = [("get_news_report", {"location": "Paris, France"}), ("get_current_weather", {"location": "Letterkenny"})]
    assert idle_calls(request, calls, catalog) == []
    # a word of the request serves too: "horizontal" for "flip it horizontally"
    flip = [("rotateImageAction", {"degrees": 20}), ("flipImageAction", {"flip_direction": "horizontal"})]
    assert idle_calls("turn it by 20 degree and flip it horizontally", flip) == []
    # a call of another tool that shares nothing with the request is idle
    swapped = [("rotateImageAction", {"degrees": 20}), ("get_stock_price", {"ticker": "AAPL"})]
    assert idle_calls("turn it by 20 degree and flip it horizontally", swapped) == [1]
