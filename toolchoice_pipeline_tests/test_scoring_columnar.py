"""The columnar scorer (DuckDB over warehouse tables) gives exactly the pure path's task scores and model scores."""

import json
import random

import pytest

from toolchoice_pipeline.records.calls import Reply, ToolCall, make_call, normalise_response
from toolchoice_pipeline.records.episodes import Episode, JudgeVote, StepRecord
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.warehouse_tables import agent_calls_table, judge_votes_table
from toolchoice_pipeline.scoring.columnar import score_columnar, suite_catalogs, tasks_table
from toolchoice_pipeline.suites.suite import Suite, SuiteSpec
from toolchoice_pipeline.suites.tasks import Task
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline_tests.conftest import CASES
from toolchoice_pipeline_tests.scoring_reference import score_episodes, summarise
from toolchoice_pipeline_tests.test_key_args import CATALOG

SCORING_CASES = [json.loads(line) for line in (CASES / "scoring_cases.jsonl").read_text().splitlines() if line]
LINEAGE = Lineage(release_id="r1", suite="cases", catalog_version="x", run_id="run")


def random_release(seed: int):
    """Every shared case's task and reply, plus unlabelled tasks, errors, multi-step episodes and votes."""
    rng = random.Random(seed)
    tasks = [
        Task.model_validate(
            {
                "id": c["id"],
                "messages": c["messages"],
                "expected": c["expected"],
                "tags": rng.sample(["search", "edit", "shell"], rng.randint(0, 2)),
            }
        )
        for c in SCORING_CASES
    ]
    tasks.append(Task.model_validate({"id": "U1", "messages": [{"role": "user", "content": "hi"}], "expected": None}))
    suite = Suite(spec=SuiteSpec(name="cases"), directory=CASES, curated=CATALOG, live=[], tasks=tasks)
    replies = [normalise_response(c["response"]) for c in SCORING_CASES] + [Reply(text="hello")]
    episodes, votes = [], []
    for model in ("m/a", "m/b", "m/c"):
        for task in tasks:
            reply = rng.choice(replies) if rng.random() < 0.5 else replies[tasks.index(task)]
            roll = rng.random()
            if roll < 0.08:
                episodes.append(
                    Episode(
                        model=model,
                        task_id=task.id,
                        error="RateLimitError",
                        steps=[StepRecord(step=0, error="RateLimitError")],
                    )
                )
            elif roll < 0.12:
                episodes.append(Episode(model=model, task_id=task.id, steps=[StepRecord(step=0, error="timeout")]))
            else:
                steps = [
                    StepRecord(
                        step=0,
                        reply=reply,
                        latency_ms=rng.uniform(1, 90),
                        cost_usd=rng.uniform(0, 1e-3),
                        prompt_tokens=rng.randint(1, 999),
                    )
                ]
                if rng.random() < 0.3:
                    steps.append(
                        StepRecord(
                            step=1,
                            reply=Reply(
                                calls=[
                                    make_call("Nope", {}),
                                    ToolCall(name=None, arguments=None, raw_arguments="<", flags=["invalid_call"]),
                                ]
                            ),
                            latency_ms=2.5,
                        )
                    )
                episodes.append(Episode(model=model, task_id=task.id, steps=steps))
            unjudged = rng.random() < 0.15  # every vote invalid
            for poll in range(rng.choice([0, 3])):
                valid = not unjudged and rng.random() < 0.8
                votes.append(
                    JudgeVote(
                        model=model,
                        task_id=task.id,
                        poll=poll,
                        valid=valid,
                        verdict=rng.choice(["correct", "incorrect"]) if valid else None,
                        judge_model="j",
                        rubric_version="r",
                        cost_usd=rng.uniform(0, 1e-4),
                        prompt_tokens=rng.randint(0, 900),
                        completion_tokens=rng.randint(0, 90),
                        error=None
                        if valid
                        else rng.choice(
                            [
                                "unparseable judge output: prose only",
                                "judge_budget_exhausted: the run's judge spend reached budget_usd=1",
                            ]
                        ),
                    )
                )
    return suite, episodes, votes


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_columnar_scores_equal_the_pure_path(seed):
    suite, episodes, votes = random_release(seed)
    pure_scores = score_episodes(suite, episodes, votes)
    columnar = score_columnar(
        agent_calls_table(episodes, LINEAGE, suite),
        judge_votes_table(votes, LINEAGE),
        tasks_table(suite),
        profile="key_args",
        catalogs=suite_catalogs(suite),
    )
    fields = [
        "model",
        "task_id",
        "right_tool",
        "right_args",
        "calls",
        "first_tool",
        "tsq",
        "error",
        "flags",
        "tags",
        "judge_tokens",
    ]
    pure_rows = sorted(
        ({f: getattr(s, f) for f in fields} for s in pure_scores), key=lambda r: (r["model"], r["task_id"])
    )
    columnar_rows = sorted(
        ({f: row[f] for f in fields} for row in columnar.task_scores.to_pylist()),
        key=lambda r: (r["model"], r["task_id"]),
    )
    for got, want in zip(columnar_rows, pure_rows):
        assert got.pop("tsq") == pytest.approx(want.pop("tsq"))
        assert got == want
    assert len(columnar_rows) == len(pure_rows)
    assert {m: s.model_dump() for m, s in columnar.models.items()} == {
        m: s.model_dump() for m, s in summarise(pure_scores).items()
    }
    assert columnar.distinct_matches < len(episodes)  # each distinct (expectation, calls) is matched once
    # The release has budget-exhausted votes, unjudged episodes and judge tokens, and both paths count them.
    models = summarise(pure_scores)
    assert sum(m.flags["judge_budget_exhausted"] for m in models.values()) > 0
    assert sum(m.n_unjudged for m in models.values()) > 0
    assert sum(m.judge_tokens for m in models.values()) == sum(v.prompt_tokens + v.completion_tokens for v in votes)


def test_an_episode_of_an_unknown_task_is_bad_input():
    suite, episodes, votes = random_release(1)
    stray = Episode(model="m/a", task_id="nope", steps=[StepRecord(step=0, reply=Reply())])
    with pytest.raises(InputError, match="'nope'"):
        score_columnar(
            agent_calls_table([stray], LINEAGE),
            judge_votes_table([], LINEAGE),
            tasks_table(suite),
            profile="key_args",
            catalogs=suite_catalogs(suite),
        )


def test_columnar_scores_equal_the_pure_path_with_repeats():
    suite, episodes, votes = random_release(1)
    for sample, seed in ((1, 11), (2, 12)):  # two more samples of every task, with other replies and votes
        _, more, more_votes = random_release(seed)
        episodes += [e.model_copy(update={"sample": sample}) for e in more]
        votes += [v.model_copy(update={"sample": sample}) for v in more_votes]
    pure_scores = score_episodes(suite, episodes, votes)
    columnar = score_columnar(
        agent_calls_table(episodes, LINEAGE, suite),
        judge_votes_table(votes, LINEAGE),
        tasks_table(suite),
        profile="key_args",
        catalogs=suite_catalogs(suite),
    )
    fields = ["model", "task_id", "sample", "right_tool", "right_args", "calls", "tsq", "error", "flags"]
    key = lambda r: (r["model"], r["task_id"], r["sample"])  # noqa: E731
    pure_rows = sorted(({f: getattr(s, f) for f in fields} for s in pure_scores), key=key)
    columnar_rows = sorted(({f: row[f] for f in fields} for row in columnar.task_scores.to_pylist()), key=key)
    assert len(columnar_rows) == len(pure_rows) == 3 * len(suite.tasks) * 3
    for got, want in zip(columnar_rows, pure_rows):
        assert got.pop("tsq") == pytest.approx(want.pop("tsq"))
        assert got == want
    pure = summarise(pure_scores)
    assert {m: s.model_dump() for m, s in columnar.models.items()} == {m: s.model_dump() for m, s in pure.items()}
    assert all(s.repeats == 3 and s.flaky_tasks for s in pure.values())
