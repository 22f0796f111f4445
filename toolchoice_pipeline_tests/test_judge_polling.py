"""ChainPoll through LiteLLM with a scripted judge provider: votes, re-asks, tokens, seeds, no cache, budget."""

import asyncio
import json
from pathlib import Path

import litellm
import pytest
from litellm import CustomLLM
from litellm.llms.custom_llm import CustomLLMError

from toolchoice_pipeline.judge import (
    FLAG_BUDGET_EXHAUSTED,
    FLAG_JUDGE_FAILED,
    RUBRIC_VERSION,
    JudgeBudget,
    JudgeItem,
    judge_episodes_sync,
    judge_flags_by_episode,
    judge_items,
    majority_verdicts,
    read_judge_input,
    tsq_by_episode,
)
from toolchoice_pipeline.providers import register_providers
from toolchoice_pipeline.providers.response import fill_response
from toolchoice_pipeline.records.calls import Reply, ToolCall
from toolchoice_pipeline.records.episodes import Episode, StepRecord
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.config import JudgeConfig, ModelSpec, Price, RetryConfig
from toolchoice_pipeline.suites.suite import Suite, SuiteSpec
from toolchoice_pipeline.suites.tasks import Task
from toolchoice_pipeline_tests.conftest import CASES

JUDGE_CASES = {c["id"]: c for c in map(json.loads, (CASES / "judge_cases.jsonl").read_text().splitlines()) if c}
CATALOG = [ToolDefinition(**tool) for tool in json.loads((CASES / "catalog.json").read_text())]
VALID_CORRECT = '{"reasoning": "Read shows a file, as asked.", "verdict": "correct"}'
VALID_INCORRECT = '{"reasoning": "WebSearch knows nothing about local files.", "verdict": "incorrect"}'
RETRIES = RetryConfig(max_attempts=1, initial_wait_s=0, max_wait_s=0)


class ScriptedJudge(CustomLLM):
    """Answers each call with the next canned output; records what each call was sent."""

    def __init__(self, outputs, usage=(900, 60)):
        super().__init__()
        self.outputs = list(outputs)
        self.usage = usage
        self.calls: list[dict] = []

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
        self.calls.append({"messages": messages, "params": dict(optional_params)})
        output = self.outputs.pop(0) if self.outputs else VALID_CORRECT
        if isinstance(output, Exception):
            raise output
        response = fill_response(model_response, {"content": output}, model=f"scripted/{model}", prompt=messages)
        response.usage = litellm.Usage(
            prompt_tokens=self.usage[0], completion_tokens=self.usage[1], total_tokens=sum(self.usage)
        )
        return response

    async def acompletion(self, *args, **kwargs):
        return self.completion(*args, **kwargs)


def scripted(outputs, **kwargs) -> ScriptedJudge:
    handler = ScriptedJudge(outputs, **kwargs)
    register_providers(extra={"scripted": handler})
    return handler


def judge_config(polls=3, max_attempts=1, budget_usd=None, price=None, temperature=0.7) -> JudgeConfig:
    return JudgeConfig(
        model=ModelSpec(model="scripted/judge", max_concurrency=1, price=price),
        polls=polls,
        max_attempts=max_attempts,
        temperature=temperature,
        budget_usd=budget_usd,
    )


def item(task_id="t1", model="m") -> JudgeItem:
    return JudgeItem(
        model=model,
        task_id=task_id,
        conversation=[{"role": "user", "content": "show me app.py"}],
        catalog=CATALOG,
        reply=Reply(calls=[ToolCall(name="Read", arguments={"file_path": "app.py"})]),
    )


def run(items, judge, **kwargs):
    return asyncio.run(judge_items(items, judge, retries=RETRIES, **kwargs))


def test_a_valid_answer_becomes_one_valid_vote_per_poll_with_lineage():
    handler = scripted([VALID_CORRECT, VALID_INCORRECT, VALID_CORRECT])
    votes = run([item()], judge_config())
    assert [(v.poll, v.verdict, v.valid) for v in votes] == [
        (0, "correct", True),
        (1, "incorrect", True),
        (2, "correct", True),
    ]
    assert {(v.judge_model, v.rubric_version) for v in votes} == {("scripted/judge", RUBRIC_VERSION)}
    assert votes[1].reasoning == "WebSearch knows nothing about local files."
    assert tsq_by_episode(votes) == {("m", "t1"): pytest.approx(2 / 3)}
    assert len(handler.calls) == 3


def test_the_judge_is_sent_the_built_judge_input():
    handler = scripted([VALID_CORRECT])
    run([item()], judge_config(polls=1))
    sent = read_judge_input(handler.calls[0]["messages"])
    assert [t["name"] for t in sent.catalog] == [t.name for t in CATALOG]
    assert sent.calls == [{"name": "Read", "arguments": {"file_path": "app.py"}}]


def test_j01_a_verdict_contradicted_by_its_reasoning_counts_as_the_verdict_field_says():
    scripted([JUDGE_CASES["J01"]["judge_output"]])
    (vote,) = run([item()], judge_config(polls=1))
    assert vote.valid and (vote.verdict == "correct") is JUDGE_CASES["J01"]["want"]["vote"]


def test_j02_truncated_output_is_re_asked_and_never_counted():
    handler = scripted([JUDGE_CASES["J02"]["judge_output"], VALID_INCORRECT])
    (vote,) = run([item()], judge_config(polls=1, max_attempts=2))
    assert JUDGE_CASES["J02"]["want"]["repoll"] is True
    assert len(handler.calls) == 2 and vote.attempts == 2
    assert vote.valid and vote.verdict == "incorrect"
    assert vote.prompt_tokens == 1800


def test_j02_truncated_output_with_no_attempt_left_is_an_invalid_vote():
    scripted([JUDGE_CASES["J02"]["judge_output"]])
    (vote,) = run([item()], judge_config(polls=1, max_attempts=1))
    assert not vote.valid and vote.verdict is None and "truncated" in vote.error


def test_j04_every_poll_invalid_gives_no_score_and_the_judge_failed_flag():
    case = JUDGE_CASES["J04"]
    scripted(case["judge_outputs"])
    votes = run([item()], judge_config(polls=len(case["judge_outputs"]), max_attempts=case["max_attempts_per_poll"]))
    assert len(votes) == 3 and not any(v.valid for v in votes)
    assert all(v.error.startswith("unparseable judge output") for v in votes)
    assert tsq_by_episode(votes)[("m", "t1")] is case["want"]["score"]
    assert judge_flags_by_episode(votes)[("m", "t1")] == [case["want"]["flag"]] == [FLAG_JUDGE_FAILED]
    assert majority_verdicts(votes)[("m", "t1")] is None


def test_j05_tokens_and_cost_count_for_every_poll_including_unparseable_ones():
    case = JUDGE_CASES["J05"]
    usage = case["usage_per_call"]
    scripted(case["judge_outputs"], usage=(usage["prompt_tokens"], usage["completion_tokens"]))
    price = Price(input_usd_per_mtok=1.0, output_usd_per_mtok=10.0)
    votes = run([item()], judge_config(polls=2, max_attempts=1, price=price))
    assert [v.valid for v in votes] == [True, False]
    assert sum(v.prompt_tokens for v in votes) == case["want"]["judge_prompt_tokens"]
    assert sum(v.completion_tokens for v in votes) == case["want"]["judge_completion_tokens"]
    assert sum(v.cost_usd for v in votes) == pytest.approx(2 * (900 * 1.0 + 60 * 10.0) / 1e6)
    assert votes[1].cost_usd == pytest.approx((900 * 1.0 + 60 * 10.0) / 1e6)


def test_html_error_page_then_prose_then_valid_uses_three_attempts_and_sums_them():
    handler = scripted(["<html><body>502 Bad Gateway</body></html>", "I think it is fine.", VALID_CORRECT])
    (vote,) = run([item()], judge_config(polls=1, max_attempts=3))
    assert vote.valid and vote.attempts == 3 and vote.prompt_tokens == 2700
    assert len(handler.calls) == 3


def test_every_poll_and_every_re_ask_gets_its_own_seed_and_the_configured_temperature():
    handler = scripted(["not json", VALID_CORRECT, VALID_CORRECT, VALID_CORRECT])
    run([item()], judge_config(polls=3, max_attempts=2, temperature=0.9))
    seeds = [call["params"]["seed"] for call in handler.calls]
    assert len(seeds) == 4 and len(set(seeds)) == 4
    assert {call["params"]["temperature"] for call in handler.calls} == {0.9}


def test_polls_are_never_served_from_litellm_cache():
    from litellm.caching.caching import Cache

    handler = scripted([VALID_CORRECT] * 6)
    previous = litellm.cache
    litellm.cache = Cache(type="local")
    try:
        judge = judge_config(polls=3).model_copy(
            update={"model": ModelSpec(model="scripted/judge", max_concurrency=1, params={"caching": True})}
        )
        run([item()], judge)
        run([item()], judge)
    finally:
        litellm.cache = previous
    assert len(handler.calls) == 6


def test_a_provider_failure_is_an_invalid_vote_not_a_crash_and_no_key_is_stored():
    fake_key = (
        "sk-" + "proj-" + "abcdefghijklmnopqrstuvwxyz0123"
    )  # a planted fake, assembled so no key sits in the repo
    scripted([CustomLLMError(401, f"Incorrect API key provided: {fake_key}")])
    (vote,) = run([item()], judge_config(polls=1, max_attempts=3))
    assert not vote.valid and vote.attempts == 1
    assert vote.error.startswith("judge call failed") and "Incorrect API key" in vote.error
    assert "abcdefghijklmnop" not in vote.error


def test_budget_stops_judging_with_a_clear_flag():
    handler = scripted([VALID_CORRECT] * 20, usage=(10_000, 0))
    price = Price(input_usd_per_mtok=1.0, output_usd_per_mtok=0.0)  # 0.01 USD per call
    budget = JudgeBudget(0.025)
    votes = run([item("t1"), item("t2")], judge_config(polls=3, price=price, budget_usd=0.025), budget=budget)
    assert len(handler.calls) == 3  # 0.00, 0.01, 0.02 < 0.025 before each call; 0.03 after the third
    assert budget.spent_usd == pytest.approx(0.03)
    assert [v.valid for v in votes] == [True, True, True, False, False, False]
    assert all(v.error.startswith(FLAG_BUDGET_EXHAUSTED) and v.attempts == 0 for v in votes[3:])
    flags = judge_flags_by_episode(votes)
    assert flags == {("m", "t1"): [], ("m", "t2"): [FLAG_JUDGE_FAILED, FLAG_BUDGET_EXHAUSTED]}
    assert tsq_by_episode(votes) == {("m", "t1"): 1.0, ("m", "t2"): None}


def test_zero_budget_makes_no_call():
    handler = scripted([VALID_CORRECT])
    votes = run([item()], judge_config(polls=2, budget_usd=0.0))
    assert handler.calls == [] and all(v.error.startswith(FLAG_BUDGET_EXHAUSTED) for v in votes)


def test_judge_episodes_judges_first_steps_with_the_task_messages_and_catalog(tmp_path: Path):
    handler = scripted([VALID_CORRECT] * 10)
    inline = [
        ToolDefinition(
            name="get_weather",
            description="Current weather for a city.",
            parameters={"type": "object", "properties": {"city": {"type": "string"}}},
        )
    ]
    tasks = [
        Task(id="a", messages=[{"role": "user", "content": "show me app.py"}], expected={"tool": "Read"}),
        Task(
            id="b",
            messages=[{"role": "user", "content": "weather in Oslo?"}],
            expected={"tool": "get_weather"},
            tools=inline,
        ),
        Task(id="c", messages=[{"role": "user", "content": "hi"}], expected={"tool": None}),
    ]
    suite = Suite(spec=SuiteSpec(name="s"), directory=tmp_path, curated=CATALOG, live=[], tasks=tasks)
    first = Reply(calls=[ToolCall(name="get_weather", arguments={"city": "Oslo"})])
    later = Reply(calls=[ToolCall(name="Bash", arguments={"command": "ls"})])
    episodes = [
        Episode(model="m", task_id="b", steps=[StepRecord(step=0, reply=first), StepRecord(step=1, reply=later)]),
        Episode(model="m", task_id="a", steps=[StepRecord(step=0, reply=Reply(text="no"))]),
        Episode(model="m", task_id="c", error="provider down"),
    ]
    progress = []
    votes = judge_episodes_sync(
        suite,
        episodes,
        judge_config(polls=2),
        retries=RETRIES,
        progress=lambda done, total: progress.append((done, total)),
    )
    assert [(v.task_id, v.poll) for v in votes] == [("b", 0), ("b", 1), ("a", 0), ("a", 1)]
    sent_b = read_judge_input(handler.calls[0]["messages"])
    assert [t["name"] for t in sent_b.catalog] == ["get_weather"]
    assert sent_b.conversation == [{"role": "user", "content": "weather in Oslo?"}]
    assert sent_b.calls == [{"name": "get_weather", "arguments": {"city": "Oslo"}}]
    assert read_judge_input(handler.calls[2]["messages"]).calls == []
    assert progress == [(1, 2), (2, 2)]


def test_an_episode_of_an_unknown_task_is_an_error(tmp_path: Path):
    suite = Suite(spec=SuiteSpec(name="s"), directory=tmp_path, curated=CATALOG, live=[], tasks=[])
    episode = Episode(model="m", task_id="ghost", steps=[StepRecord(step=0, reply=Reply(text="x"))])
    with pytest.raises(ValueError, match="ghost"):
        judge_episodes_sync(suite, [episode], judge_config(), retries=RETRIES)
