"""Preflight of the judge model: one clear message naming the model, before any episode is judged."""

import pytest

from toolchoice_pipeline.judge.preflight import JudgePreflightError, preflight_judge_sync
from toolchoice_pipeline.suites.config import JudgeConfig, RetryConfig
from toolchoice_pipeline_tests.conftest import DATA

RETRIES = RetryConfig(max_attempts=1)


def test_the_offline_judge_passes_preflight():
    preflight_judge_sync(JudgeConfig(), data_dir=DATA, retries=RETRIES)


def test_an_unknown_local_judge_is_named():
    with pytest.raises(JudgePreflightError, match=r"^judge model local/no-such-judge: unknown local model"):
        preflight_judge_sync(JudgeConfig(model="local/no-such-judge"), data_dir=DATA, retries=RETRIES)


def test_a_remote_judge_without_its_key_names_the_variable_not_a_value(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(JudgePreflightError, match=r"judge model openai/gpt-4o-mini: no API key: set OPENAI_API_KEY"):
        preflight_judge_sync(JudgeConfig(model="openai/gpt-4o-mini"), data_dir=DATA, retries=RETRIES)


def test_a_model_string_without_a_provider_is_named():
    with pytest.raises(JudgePreflightError, match=r"judge model gpt-9-ultra: unknown provider"):
        preflight_judge_sync(JudgeConfig(model="gpt-9-ultra"), data_dir=DATA, retries=RETRIES)
