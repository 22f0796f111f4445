"""An agent model under a budget must have a price: an unpriced one (no ``price:``, missing from LiteLLM's pricing
table) counts 0 USD per call, so ``budget_usd`` could never stop it. It is refused at preflight, as an unpriced
judge under ``judge.budget_usd`` is. A scripted LiteLLM provider outside the built-in ones plays the unpriced
remote model; nothing reaches the network."""

import pytest

from toolchoice_pipeline.cli.run import _preflight
from toolchoice_pipeline.execution.preflight import unpriced_under_budget
from toolchoice_pipeline.execution.runner import run_suite_sync
from toolchoice_pipeline.judge.preflight import unpriced_under_budget as judge_unpriced
from toolchoice_pipeline.suites.config import JudgeConfig, ModelSpec, RunConfig
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline_tests.execution_support import call, numbered_tasks, register_scripted, write_suite

PRICE = {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0}
# Not one of the in-process providers (local/, replay/, sim/, scripted/, free by definition): a custom provider
# LiteLLM's pricing table does not know, as a private deployment would be.
PROVIDER = "privatelab"


def reads(model, messages, tools, metadata):
    return {"role": "assistant", "content": None, "tool_calls": [call("Read", {"file_path": "x"}, "c")]}


def config(models, **extra) -> RunConfig:
    data = {"models": models, "retries": {"max_attempts": 1, "initial_wait_s": 0, "max_wait_s": 0}}
    data.update(extra)
    return RunConfig.model_validate(data)


def test_an_unpriced_agent_under_a_budget_is_refused_unless_it_has_a_price():
    unpriced = ModelSpec(model="openai/my-private-finetune")
    problem = unpriced_under_budget(unpriced, 0.5)
    assert problem.startswith("openai/my-private-finetune: unpriced") and "budget_usd=0.5" in problem
    assert "models[].price" in problem and "\n" not in problem
    assert unpriced_under_budget(unpriced, None) is None  # no budget, nothing to stop
    assert unpriced_under_budget(ModelSpec(model="openai/my-private-finetune", price=PRICE), 0.5) is None
    assert unpriced_under_budget(ModelSpec(model="openai/gpt-4o-mini"), 0.5) is None  # LiteLLM prices it
    assert unpriced_under_budget(ModelSpec(model="local/bm25-router"), 0.5) is None  # built-in: priced at 0


def test_the_agent_and_the_judge_refusals_are_one_rule_with_one_message():
    agent = unpriced_under_budget(ModelSpec(model="openai/my-private-finetune"), 0.5, price_field="models[0].price")
    judge = judge_unpriced(JudgeConfig(model="openai/my-private-finetune", budget_usd=0.5))
    assert agent.replace("budget_usd", "judge.budget_usd", 1).replace("models[0].price", "judge.model.price") == judge


def test_toolchoice_run_refuses_an_unpriced_agent_under_a_budget_naming_model_and_field(tmp_path):
    register_scripted(reads, name=PROVIDER)
    run_config = config([f"{PROVIDER}/m1", "local/bm25-router"], budget_usd=0.25)
    with pytest.raises(InputError) as raised:
        _preflight(run_config, tmp_path, judge=False)
    assert [str(p) for p in raised.value.problems] == [
        f"agent {PROVIDER}/m1: models[0].price: unpriced (not in LiteLLM's pricing table), so budget_usd=0.25 "
        "could never stop it: give the model a price (models[0].price: {input_usd_per_mtok: ..., "
        "output_usd_per_mtok: ...}) or remove the budget"
    ]
    # With a price, or without a budget, it starts.
    _preflight(config([{"model": f"{PROVIDER}/m1", "price": PRICE}], budget_usd=0.25), tmp_path, judge=False)
    _preflight(config([f"{PROVIDER}/m1"]), tmp_path, judge=False)


def test_the_judge_refusal_reads_like_the_agent_one(tmp_path):
    register_scripted(reads, name=PROVIDER)
    run_config = config(["local/bm25-router"], judge={"model": f"{PROVIDER}/j", "budget_usd": 0.25})
    with pytest.raises(InputError) as raised:
        _preflight(run_config, tmp_path, judge=True)
    assert [str(p) for p in raised.value.problems] == [
        f"judge {PROVIDER}/j: judge.model.price: unpriced (not in LiteLLM's pricing table), so judge.budget_usd=0.25 "
        "could never stop it: give the model a price (judge.model.price: {input_usd_per_mtok: ..., "
        "output_usd_per_mtok: ...}) or remove the budget"
    ]


def test_a_run_under_a_budget_never_calls_an_unpriced_agent(tmp_path):
    # The Dagster path (agent_runs) calls run_suite directly: the model is unavailable, with the same message.
    suite = write_suite(tmp_path, numbered_tasks(3))
    handler = register_scripted(reads, name=PROVIDER)
    unavailable: dict[str, str] = {}
    episodes = run_suite_sync(
        suite, config([f"{PROVIDER}/m1"], budget_usd=0.25), data_dir=tmp_path, unavailable=unavailable
    )
    assert handler.requests == []
    assert set(unavailable) == {f"{PROVIDER}/m1"} and "unpriced" in unavailable[f"{PROVIDER}/m1"]
    assert {e.error for e in episodes} == {unavailable[f"{PROVIDER}/m1"]}
    # Priced, the same model runs under the same budget.
    priced = run_suite_sync(
        suite, config([{"model": f"{PROVIDER}/m1", "price": PRICE}], budget_usd=0.25), data_dir=tmp_path
    )
    assert all(e.error is None for e in priced) and len(handler.requests) >= 3
