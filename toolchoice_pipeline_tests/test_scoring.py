"""Scoring: task scores from episodes and votes, and the per-model numbers of ``scores.json`` (DESIGN §2, §3)."""

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolchoice_pipeline.records.calls import Reply, ToolCall, make_call
from toolchoice_pipeline.records.episodes import Episode, JudgeVote, StepRecord, TaskScore
from toolchoice_pipeline.scoring import percentile, tsq_of, wilson_interval
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.suite import Suite, SuiteSpec
from toolchoice_pipeline.suites.tasks import Task
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline_tests.scoring_reference import score_episodes, summarise

CATALOG = [
    ToolDefinition(name="Read", parameters={"type": "object", "properties": {"file_path": {"type": "string"}}}),
    ToolDefinition(name="Grep", parameters={"type": "object", "properties": {"pattern": {"type": "string"}}}),
]


def task(task_id, tool="Read", arguments=None, tags=(), labelled=True):
    expected = {"tool": tool, "arguments": arguments or {}} if labelled else None
    return Task.model_validate(
        {"id": task_id, "messages": [{"role": "user", "content": task_id}], "expected": expected, "tags": list(tags)}
    )


def make_suite(tasks):
    return Suite(spec=SuiteSpec(name="unit"), directory=Path("suites/unit"), curated=CATALOG, live=[], tasks=tasks)


def episode(task_id, *calls, model="m", error=None, latency_ms=10.0, cost_usd=0.001, more_steps=()):
    steps = [StepRecord(step=0, reply=Reply(calls=list(calls)), latency_ms=latency_ms, cost_usd=cost_usd)]
    steps += [
        StepRecord(step=i + 1, reply=Reply(calls=list(c)), latency_ms=latency_ms) for i, c in enumerate(more_steps)
    ]
    return Episode(model=model, task_id=task_id, steps=steps, error=error)


def vote(task_id, verdict, valid=True, model="m", cost_usd=0.0002):
    return JudgeVote(
        model=model,
        task_id=task_id,
        poll=0,
        verdict=verdict if valid else None,
        valid=valid,
        judge_model="local/judge",
        rubric_version="r1",
        cost_usd=cost_usd,
    )


def test_task_scores_grade_the_first_call_and_count_every_call():
    suite = make_suite([task("t1", arguments={"file_path": "a.py"}), task("t2", tool="Grep")])
    scores = score_episodes(
        suite,
        [
            episode("t1", make_call("Read", {"file_path": "a.py"}), more_steps=[[make_call("Grep", {})]]),
            episode("t2", make_call("Read", {"file_path": "a.py"}), make_call("Grep", {"pattern": "x"})),
        ],
    )
    first, second = scores
    assert (first.right_tool, first.right_args, first.calls, first.first_tool) == (True, True, 2, "Read")
    assert (second.right_tool, second.right_args, second.calls, second.first_tool) == (False, False, 2, "Read")
    assert first.latency_ms == 20.0


def test_infrastructure_error_and_unlabelled_task_get_no_right_tool():
    suite = make_suite([task("t1"), task("t2", labelled=False)])
    failed, unlabelled = score_episodes(
        suite,
        [
            Episode(
                model="m", task_id="t1", steps=[StepRecord(step=0, error="RateLimitError")], error="RateLimitError"
            ),
            episode("t2", make_call("Read", {})),
        ],
    )
    assert (failed.right_tool, failed.right_args, failed.error, failed.flags) == (
        None,
        None,
        "RateLimitError",
        ["infra_error"],
    )
    assert (unlabelled.right_tool, unlabelled.right_args, unlabelled.error) == (None, None, None)


def test_a_first_step_without_reply_counts_as_an_infrastructure_error():
    suite = make_suite([task("t1")])
    [score] = score_episodes(suite, [Episode(model="m", task_id="t1", steps=[StepRecord(step=0, error="timeout")])])
    assert score.error == "timeout" and score.right_tool is None


def test_tsq_is_yes_over_valid_votes_and_null_with_a_flag_when_none_is_valid():
    assert tsq_of(
        [vote("t", "correct"), vote("t", "correct"), vote("t", "incorrect"), vote("t", None, valid=False)]
    ) == pytest.approx(2 / 3)
    suite = make_suite([task("t1"), task("t2")])
    judged, failed = score_episodes(
        suite,
        [episode("t1", make_call("Read", {})), episode("t2", make_call("Read", {}))],
        [vote("t1", "correct"), vote("t1", "incorrect"), vote("t2", None, valid=False)],
    )
    assert judged.tsq == 0.5 and "judge_failed" not in judged.flags
    assert failed.tsq is None and failed.flags == ["judge_failed"]
    assert judged.judge_cost_usd == pytest.approx(0.0004)


def test_flags_hallucinated_invalid_arguments_and_invalid_call():
    suite = make_suite([task("t1"), task("t2"), task("t3")])
    scores = score_episodes(
        suite,
        [
            episode("t1", make_call("Open", {})),
            episode("t2", make_call("Read", '{"file_path": "a')),
            episode("t3", ToolCall(name="Read", arguments=None, raw_arguments="{", flags=["invalid_call"])),
        ],
    )
    assert [s.flags for s in scores] == [["hallucinated_tool"], ["invalid_arguments"], ["invalid_call"]]
    assert [(s.right_tool, s.right_args) for s in scores] == [(False, False), (True, False), (False, False)]


def test_unknown_task_is_bad_input_naming_the_task():
    with pytest.raises(InputError, match="'nope'"):
        score_episodes(make_suite([task("t1")]), [episode("nope")])


def score(
    task_id,
    right_tool,
    right_args,
    model="m",
    error=None,
    tags=(),
    calls=1,
    tsq=None,
    latency_ms=1.0,
    flags=(),
    agent_cost_usd=0.0,
    judge_cost_usd=0.0,
):
    return TaskScore(
        model=model,
        task_id=task_id,
        right_tool=right_tool,
        right_args=right_args,
        calls=calls,
        first_tool=None,
        tsq=tsq,
        error=error,
        tags=list(tags),
        latency_ms=latency_ms,
        flags=list(flags),
        agent_cost_usd=agent_cost_usd,
        judge_cost_usd=judge_cost_usd,
    )


def test_summary_shares_in_points_over_scored_tasks_with_wilson_intervals():
    scores = [
        score("a", True, True, tags=["search"], calls=1, tsq=1.0, latency_ms=10, agent_cost_usd=0.01),
        score("b", True, True, tags=["search"], calls=2, tsq=0.5, latency_ms=20, agent_cost_usd=0.01),
        score("c", True, False, calls=1, tsq=None, latency_ms=30, judge_cost_usd=0.002),
        score("d", False, False, tags=["edit"], calls=0, tsq=0.0, latency_ms=40, flags=["hallucinated_tool"]),
        score("e", None, None, error="boom", calls=0, latency_ms=999, flags=["infra_error"], agent_cost_usd=0.5),
        score("f", None, None, calls=3, latency_ms=50),  # unlabelled: ran, counts in calls and latency only
    ]
    summary = summarise(scores)["m"]
    assert (summary.n_tasks, summary.errors, summary.n_scored, summary.n_unlabelled) == (6, 1, 4, 1)
    assert (summary.right_tool_pct, summary.right_args_pct) == (75.0, 50.0)
    assert summary.right_tool_ci95_pct == [30.06, 95.44]
    assert summary.calls_per_task == 1.4  # (1+2+1+0+3) / 5 episodes that ran
    assert summary.tsq_mean == 0.5
    assert summary.latency_ms_p50 == 30.0 and summary.latency_ms_p95 == 48.0
    assert summary.agent_cost_usd == 0.52 and summary.judge_cost_usd == 0.002
    assert summary.error_pct == 16.67
    assert summary.flags == {
        "hallucinated_tool": 1,
        "invalid_arguments": 0,
        "invalid_call": 0,
        "missing_required": 0,
        "wrong_type": 0,
        "not_in_enum": 0,
        "schema_violation": 0,
        "infra_error": 1,
        "judge_failed": 0,
        "judge_budget_exhausted": 0,
    }
    assert summary.tags["search"].right_tool_pct == 100.0 and summary.tags["search"].n_scored == 2
    assert summary.tags["edit"].right_tool_pct == 0.0


def test_summary_rounds_points_to_two_decimals_and_keeps_models_apart():
    scores = [
        score("a", True, True, model="x"),
        score("b", True, False, model="x"),
        score("c", False, False, model="x"),
        score("a", None, None, model="y", error="down"),
    ]
    summary = summarise(scores)
    assert list(summary) == ["x", "y"]
    assert (summary["x"].right_tool_pct, summary["x"].right_args_pct) == (66.67, 33.33)
    assert summary["y"].right_tool_pct is None and summary["y"].right_tool_ci95_pct is None


def test_wilson_interval_solves_the_score_equation():
    z = 1.959963984540054
    for k, n in [(0, 10), (3, 4), (81, 100), (10, 10)]:
        low, high = wilson_interval(k, n)
        for bound in (low, high):  # each bound p satisfies (k/n - p)^2 = z^2 p (1 - p) / n
            assert (k / n - bound) ** 2 == pytest.approx(z * z * bound * (1 - bound) / n, abs=1e-12)
    assert wilson_interval(0, 0) is None


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1, max_size=50),
    st.sampled_from([0.0, 0.5, 0.95, 1.0]),
)
def test_percentile_agrees_with_numpy_linear(values, q):
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q * 100)), rel=1e-9, abs=1e-9)


outcomes = st.sampled_from([(True, True), (True, False), (False, False), (None, None)])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["x", "y"]), outcomes, st.booleans()), max_size=60))
def test_shares_stay_within_0_and_100_and_inside_their_interval(rows):
    scores = [
        score(f"t{i}", rt, ra, model=m, error="e" if failed and rt is None else None)
        for i, (m, (rt, ra), failed) in enumerate(rows)
    ]
    for summary in summarise(scores).values():
        for pct, interval in (
            (summary.right_tool_pct, summary.right_tool_ci95_pct),
            (summary.right_args_pct, summary.right_args_ci95_pct),
        ):
            if pct is None:
                assert summary.n_scored == 0
                continue
            assert 0.0 <= interval[0] <= pct <= interval[1] <= 100.0
        assert summary.right_args_pct is None or summary.right_args_pct <= summary.right_tool_pct
        assert math.isclose(summary.error_pct, round(100 * summary.errors / summary.n_tasks, 2))
