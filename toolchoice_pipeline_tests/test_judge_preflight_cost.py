"""The judge preflight's own call is a judge call: made under the run's judge budget, its cost added to it, and
returned as a vote (model ``preflight``) whose tokens and cost reach the ``judge`` object of ``scores.json``.
A scripted, priced LiteLLM provider plays the judge; nothing reaches the network."""

import pytest

from toolchoice_pipeline.judge import FLAG_BUDGET_EXHAUSTED, JudgeBudget
from toolchoice_pipeline.judge.preflight import (
    PREFLIGHT_MODEL,
    preflight_judge_cost,
    preflight_judge_sync,
)
from toolchoice_pipeline.releases.document import JudgeInfo
from toolchoice_pipeline.suites.config import Price
from toolchoice_pipeline_tests.conftest import DATA
from toolchoice_pipeline_tests.test_judge_polling import (
    RETRIES,
    VALID_CORRECT,
    item,
    judge_config,
    run,
    scripted,
)

PRICE = Price(input_usd_per_mtok=1.0, output_usd_per_mtok=0.0)  # with usage (10_000, 0): 0.01 USD per call


def test_the_preflight_call_is_counted_under_the_budget_and_returned_as_a_vote():
    handler = scripted([VALID_CORRECT] * 5, usage=(10_000, 0))
    config = judge_config(polls=3, price=PRICE, budget_usd=0.025)
    budget = JudgeBudget(config.budget_usd)
    vote = preflight_judge_sync(config, data_dir=DATA, retries=RETRIES, budget=budget)
    assert len(handler.calls) == 1 and budget.spent_usd == pytest.approx(0.01)
    assert vote.model == PREFLIGHT_MODEL and not vote.valid and vote.verdict is None
    assert vote.cost_usd == pytest.approx(0.01) and vote.prompt_tokens == 10_000
    assert vote.judge_model == "scripted/judge"
    # The polls share the budget the preflight spent from: two polls fit (0.01, 0.02 < 0.025), the third does not.
    votes = run([item("t1")], config, budget=budget)
    assert len(handler.calls) == 3 and budget.spent_usd == pytest.approx(0.03)
    assert [v.valid for v in votes] == [True, True, False]
    assert votes[2].error.startswith(FLAG_BUDGET_EXHAUSTED)


def test_a_spent_budget_makes_no_preflight_call():
    handler = scripted([VALID_CORRECT], usage=(10_000, 0))
    config = judge_config(price=PRICE, budget_usd=0.0)
    assert preflight_judge_sync(config, data_dir=DATA, retries=RETRIES, budget=JudgeBudget(0.0)) is None
    assert handler.calls == []


def test_the_preflight_cost_and_tokens_go_into_the_judge_object():
    scripted([VALID_CORRECT] * 3, usage=(10_000, 40))
    config = judge_config(polls=2, price=PRICE)
    preflight = preflight_judge_sync(config, data_dir=DATA, retries=RETRIES, budget=JudgeBudget(None))
    votes = run([item("t1")], config) + [preflight]
    cost = preflight_judge_cost(votes)
    assert cost == {"preflight_judge_cost_usd": 0.01, "preflight_judge_tokens": 10_040}
    info = JudgeInfo(model="scripted/judge", polls=2, rubric_version="r", **cost)
    assert info.preflight_judge_cost_usd == 0.01 and info.preflight_judge_tokens == 10_040
    # A judge object written before the field reads as no preflight cost.
    assert JudgeInfo(model="j", polls=1, rubric_version="r").preflight_judge_cost_usd == 0.0
