"""The built-in in-process models are free, and LiteLLM is told so instead of pricing every call."""

import asyncio

import litellm

from toolchoice_pipeline.providers import register_providers
from toolchoice_pipeline.providers.local import local_models
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
