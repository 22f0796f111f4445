"""What the judge stores or prints (a vote's reasoning and error) passes the sanitiser: a judge that quotes a
secret from the request, in its reasoning or in a provider error, leaves no trace of it in the vote."""

import asyncio

from litellm.llms.custom_llm import CustomLLMError

from toolchoice_pipeline.judge import judge_items
from toolchoice_pipeline_tests.test_judge_polling import RETRIES, item, judge_config, scripted
from toolchoice_pipeline_tests.test_sanitise import newer_planted_secrets


def test_a_secret_quoted_in_the_reasoning_is_redacted_in_the_vote():
    secrets = newer_planted_secrets()[:3]
    quoted = "; ".join(s.text for s in secrets)
    scripted([f'{{"reasoning": "The call passes {quoted} to Read.", "verdict": "correct"}}'])
    (vote,) = asyncio.run(judge_items([item()], judge_config(polls=1), retries=RETRIES))
    assert vote.valid and vote.verdict == "correct"
    assert not [s.needle for s in secrets if s.needle in vote.reasoning]
    assert all(f"[REDACTED:{s.kind}]" in vote.reasoning for s in secrets)
    assert vote.reasoning.startswith("The call passes the new one is ")


def test_a_secret_in_a_provider_error_is_redacted_in_the_vote_error():
    secret = newer_planted_secrets()[0]
    scripted([CustomLLMError(500, f"upstream echoed {secret.text}")])
    (vote,) = asyncio.run(judge_items([item()], judge_config(polls=1), retries=RETRIES))
    assert not vote.valid and vote.error.startswith("judge call failed")
    assert secret.needle not in vote.error and f"[REDACTED:{secret.kind}]" in vote.error
