"""``publish_release`` (what ``toolchoice run`` and the Dagster assets call) scores on the columnar path; the pure
path (``score_episodes`` + ``summarise``) is the reference: every task score and every per-model figure equal,
field by field, on the demo suite, the BFCL sample and random releases."""

import dataclasses
import random

import pytest

from toolchoice_pipeline.execution.runner import run_suite_sync
from toolchoice_pipeline.records.episodes import Episode, JudgeVote, StepRecord
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.publish import publish_release
from toolchoice_pipeline.releases.release_tables import score_records
from toolchoice_pipeline.releases.warehouse import Warehouse
from toolchoice_pipeline.suites.config import RunConfig
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline_tests.bfcl_helpers import import_bfcl_suites, read_verdicts, suite_name, verdict_reply
from toolchoice_pipeline_tests.scoring_reference import score_episodes, summarise
from toolchoice_pipeline_tests.test_demo_suite import REPO_DATA
from toolchoice_pipeline_tests.test_scoring_columnar import random_release

SCORE_FIELDS = [
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
    "latency_ms",
    "agent_cost_usd",
    "judge_cost_usd",
    "provider_ms",
]


def random_votes(episodes: list[Episode], seed: int) -> list[JudgeVote]:
    rng = random.Random(seed)
    votes = []
    for episode in episodes:
        for poll in range(rng.choice([0, 3])):
            valid = rng.random() < 0.85
            votes.append(
                JudgeVote(
                    model=episode.model,
                    task_id=episode.task_id,
                    poll=poll,
                    valid=valid,
                    verdict=rng.choice(["correct", "incorrect"]) if valid else None,
                    judge_model="local/catalog-judge",
                    rubric_version="r",
                    cost_usd=rng.uniform(0, 1e-4),
                )
            )
    return votes


def assert_published_equals_pure(data_dir, suite, episodes, votes):
    lineage = Lineage(release_id="r1", suite=suite.name, catalog_version=suite.catalog_version, run_id="run")
    published = publish_release(data_dir, suite, lineage, "adhoc", episodes, votes)
    pure_scores = score_episodes(suite, episodes, votes)
    assert {m: s.model_dump() for m, s in published.scores.models.items()} == {
        m: s.model_dump() for m, s in summarise(pure_scores).items()
    }
    stored = Warehouse(data_dir).read_table("task_scores", "r1").to_pylist()
    key = lambda row: (row["model"], row["task_id"])  # noqa: E731
    want = sorted(({f: getattr(s, f) for f in SCORE_FIELDS} for s in pure_scores), key=key)
    got = sorted(({f: row[f] for f in SCORE_FIELDS} for row in stored), key=key)
    assert len(got) == len(want) == len(episodes)
    for got_row, want_row in zip(got, want):
        assert got_row.pop("tsq") == pytest.approx(want_row.pop("tsq"))
        for name in ("latency_ms", "agent_cost_usd", "judge_cost_usd", "provider_ms"):
            assert got_row.pop(name) == pytest.approx(want_row.pop(name))
        assert got_row == want_row
    # The Dagster task_scores asset's records come from the same path.
    assert sorted((s.model_dump() for s in score_records(suite, lineage, episodes, votes)), key=key) == sorted(
        (s.model_dump() for s in pure_scores), key=key
    )
    return published


def test_demo_suite_published_scores_equal_the_pure_path(tmp_path):
    # Every other task of the demo, spread over the file (every expected tool kind stays in), run by both agents.
    demo = load_suite(REPO_DATA, "coding_agent")
    suite = dataclasses.replace(demo, tasks=demo.tasks[::2])
    assert {t.expected.tool for t in suite.tasks if t.expected} == {t.expected.tool for t in demo.tasks if t.expected}
    episodes = run_suite_sync(suite, RunConfig(), data_dir=tmp_path, cache_policy="off")
    assert {e.model for e in episodes} == {"local/bm25-router", "local/name-match"}
    published = assert_published_equals_pure(tmp_path, suite, episodes, random_votes(episodes, 7))
    assert published.scores.models["local/bm25-router"].n_scored > 0


@pytest.fixture(scope="module")
def verdicts():
    """The BFCL verdict lines, read once for the categories (only read)."""
    return read_verdicts()


@pytest.mark.parametrize("category", ["parallel", "multiple", "irrelevance"])
def test_bfcl_published_scores_equal_the_pure_path(tmp_path, category, verdicts):
    import_bfcl_suites(tmp_path, [category])
    suite = load_suite(tmp_path, suite_name(category))
    # Every variant (model) of every third task, spread over the file: the fields compared are the same on each.
    known = {task.id for task in suite.tasks[::3]}
    episodes = [
        Episode(
            model=f"verdicts/{line['variant']}",
            task_id=line["task_id"],
            steps=[StepRecord(step=0, reply=verdict_reply(line["tool_calls"]), latency_ms=float(i % 97))],
        )
        for i, line in enumerate(verdicts)
        if line["task_id"] in known
    ]
    assert len({e.model for e in episodes}) > 1
    assert_published_equals_pure(tmp_path, suite, episodes, random_votes(episodes, 3))


@pytest.mark.parametrize("seed", [11, 12])
def test_random_release_published_scores_equal_the_pure_path(tmp_path, seed):
    suite, episodes, votes = random_release(seed)
    assert_published_equals_pure(tmp_path, suite, episodes, votes)
