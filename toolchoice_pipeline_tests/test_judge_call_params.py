"""Reasoning-model judges: one rule for parameters a model does not take, a preflight that sends exactly what a
poll sends, and a configured temperature honoured or refused with one message. A scripted LiteLLM provider
that rejects ``temperature`` plays the reasoning model."""

import asyncio

import litellm
import pytest
from litellm import CustomLLM

from toolchoice_pipeline.judge import JudgeItem, judge_items
from toolchoice_pipeline.judge.call_params import poll_params, refused_temperature
from toolchoice_pipeline.judge.preflight import JudgePreflightError, preflight_judge_sync
from toolchoice_pipeline.providers import register_providers
from toolchoice_pipeline.providers.response import fill_response
from toolchoice_pipeline.records.calls import Reply, ToolCall
from toolchoice_pipeline.suites.config import JudgeConfig, RetryConfig
from toolchoice_pipeline_tests.conftest import DATA
from toolchoice_pipeline_tests.test_judge_polling import CATALOG, VALID_CORRECT

RETRIES = RetryConfig(max_attempts=1, initial_wait_s=0, max_wait_s=0)


class NoTemperatureJudge(CustomLLM):
    """A reasoning model: refuses any call that sends ``temperature``; records what every call was sent."""

    def __init__(self):
        super().__init__()
        self.sent: list[dict] = []

    def completion(
        self,
        model,
        messages,
        api_base,
        custom_prompt_dict,
        model_response,
        print_verbose,
        encoding,
        api_key,
        logging_obj,
        optional_params,
        *args,
        **kwargs,
    ):
        self.sent.append(dict(optional_params))
        if optional_params.get("temperature") is not None:
            raise litellm.UnsupportedParamsError(
                status_code=400, message=f"{model} does not support temperature={optional_params['temperature']}"
            )
        return fill_response(model_response, {"content": VALID_CORRECT}, model=f"scripted/{model}", prompt=messages)

    async def acompletion(self, *args, **kwargs):
        return self.completion(*args, **kwargs)


@pytest.fixture
def reasoning_judge():
    handler = NoTemperatureJudge()
    register_providers(extra={"scripted": handler})
    return handler


def judge(**params) -> JudgeConfig:
    return JudgeConfig(model={"model": "scripted/reasoner", "params": params}, polls=2, max_attempts=1)


def poll_once(config: JudgeConfig):
    item = JudgeItem(
        model="m",
        task_id="t1",
        conversation=[{"role": "user", "content": "show me app.py"}],
        catalog=CATALOG,
        reply=Reply(calls=[ToolCall(name="Read", arguments={"file_path": "app.py"})]),
    )
    return asyncio.run(judge_items([item], config, retries=RETRIES))


def test_a_judge_that_rejects_the_polls_temperature_fails_the_preflight_with_one_message(reasoning_judge):
    with pytest.raises(JudgePreflightError) as raised:
        preflight_judge_sync(judge(), data_dir=DATA, retries=RETRIES)
    message = str(raised.value)
    assert message.startswith("judge model scripted/reasoner")
    assert "temperature=0.7" in message and "\n" not in message
    assert len(reasoning_judge.sent) == 1


def test_the_preflight_sends_exactly_what_a_poll_sends(reasoning_judge):
    config = judge(temperature=None)
    preflight_judge_sync(config, data_dir=DATA, retries=RETRIES)
    votes = poll_once(config)
    assert all(v.valid for v in votes)
    preflight_sent, *poll_sent = reasoning_judge.sent
    # The same parameters; only the seed differs from poll to poll (the preflight sends poll 0's).
    assert len(poll_sent) == 2 and preflight_sent == poll_sent[0]
    assert all(sent.keys() == preflight_sent.keys() for sent in poll_sent)
    assert "temperature" not in preflight_sent or preflight_sent["temperature"] is None


def test_a_configured_temperature_is_honoured_not_overridden():
    seen: list[dict] = []

    class Recorder(NoTemperatureJudge):
        def completion(self, model, messages, api_base, custom_prompt_dict, model_response, *args, **kwargs):
            seen.append(dict(kwargs.get("optional_params") or args[4]))
            return fill_response(model_response, {"content": VALID_CORRECT}, model=f"scripted/{model}", prompt=messages)

    register_providers(extra={"scripted": Recorder()})
    votes = poll_once(judge(temperature=0.2))
    assert all(v.valid for v in votes) and [s["temperature"] for s in seen] == [0.2, 0.2]
    assert poll_params(judge(temperature=0.2), seed=None, response_format=None)["temperature"] == 0.2
    assert poll_params(JudgeConfig(temperature=0.4), seed=None, response_format=None)["temperature"] == 0.4


def test_unsupported_parameters_are_left_to_litellms_drop_params_and_a_configured_one_is_refused():
    default = JudgeConfig(model="openai/o3-mini")
    assert poll_params(default, seed=None, response_format=None)["drop_params"] is True
    assert refused_temperature(default) is None  # the default temperature may be dropped: nobody asked for it
    refused = refused_temperature(JudgeConfig(model={"model": "openai/o3-mini", "params": {"temperature": 0.7}}))
    assert refused.startswith("openai/o3-mini does not take the configured judge.model.params.temperature=0.7")
    assert refused_temperature(JudgeConfig(model={"model": "openai/o3-mini", "params": {"temperature": 1}})) is None
    assert (
        refused_temperature(JudgeConfig(model={"model": "openai/gpt-4o-mini", "params": {"temperature": 0.7}})) is None
    )
