"""The built-in in-process models are free, and LiteLLM is told so instead of pricing every call."""

import asyncio

import litellm

from toolchoice_pipeline.providers import register_providers
from toolchoice_pipeline.providers.direct import local_models
from toolchoice_pipeline.providers.response import PROVIDER_MS

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "Read",
            "description": "Show one file.",
            "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}},
        },
    }
]


def test_local_responses_carry_zero_cost_and_their_provider_time():
    register_providers()
    response = asyncio.run(
        litellm.acompletion(
            model="local/name-match", tools=TOOLS, messages=[{"role": "user", "content": "Read src/app.py"}]
        )
    )
    assert response._hidden_params["response_cost"] == 0.0
    assert response._hidden_params[PROVIDER_MS] > 0.0
    assert response.usage.prompt_tokens > 0  # tokens are still estimated and stored


def test_every_local_model_is_in_litellms_price_table_at_zero():
    register_providers()
    for name in local_models():
        entry = litellm.model_cost[f"local/{name}"]
        assert entry["input_cost_per_token"] == entry["output_cost_per_token"] == 0.0


def test_the_runner_puts_the_sim_models_it_calls_in_the_price_table_at_zero(tmp_path):
    import json

    from toolchoice_pipeline.execution.runner import run_suite
    from toolchoice_pipeline.suites.config import ModelSpec, RunConfig
    from toolchoice_pipeline.suites.suite import load_suite

    suite_dir = tmp_path / "suites" / "tiny"
    suite_dir.mkdir(parents=True)
    (suite_dir / "suite.yaml").write_text("name: tiny\ncatalog: catalog.json\ntasks: tasks.jsonl\n")
    (suite_dir / "catalog.json").write_text(json.dumps([TOOLS[0]["function"]]))
    task = {"id": "t1", "messages": [{"role": "user", "content": "Read src/app.py"}], "expected": {"tool": "Read"}}
    (suite_dir / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    (tmp_path / "replies.jsonl").write_text(
        json.dumps({"task_id": "t1", "tool_calls": [{"name": "Read", "arguments": {"file_path": "a"}}]}) + "\n"
    )
    suite = load_suite(tmp_path, "tiny", check=False)
    name = f"sim/pricing-{tmp_path.name}"  # not in the table before this run
    assert name not in litellm.model_cost
    specs = [ModelSpec(model=name, params={"sim_latency_ms": 0}), ModelSpec(model="replay/replies.jsonl")]
    config = RunConfig.model_validate({"models": [name], "cache": {"policy": "off"}})
    episodes = asyncio.run(run_suite(suite, config, data_dir=tmp_path, models=specs))

    assert [e.error for e in episodes] == [None, None]
    assert [e.steps[0].reply.first_call.name for e in episodes] == ["Read", "Read"]
    entry = litellm.model_cost[name]
    assert entry["input_cost_per_token"] == entry["output_cost_per_token"] == 0.0
    assert entry["litellm_provider"] == "sim"
    # a replay model is called without LiteLLM (issue 27): it never meets LiteLLM's price table, so none is added
    replay = [key for key in litellm.model_cost if key.startswith("replay/") and key.endswith("replies.jsonl")]
    assert replay == []
