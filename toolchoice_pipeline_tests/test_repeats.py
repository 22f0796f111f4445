"""Repeats: k samples per task through the real runner (sim provider through LiteLLM), their journal keys,
per-sample scores and warehouse rows, pass^k / pass@k / flaky tasks, the agent budget, the configuration."""

from __future__ import annotations

import pytest

from toolchoice_pipeline.execution.journal import CallJournal
from toolchoice_pipeline.execution.runner import run_suite_sync
from toolchoice_pipeline.providers.sim import STATS, SimSettings, flips, plausible_reply
from toolchoice_pipeline.records.episodes import FLAG_AGENT_BUDGET_EXHAUSTED, TaskScore
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.publish import publish_release
from toolchoice_pipeline.releases.warehouse import Warehouse
from toolchoice_pipeline.releases.warehouse_tables import agent_calls_table, release_scores_table, task_scores_table
from toolchoice_pipeline.suites.config import ModelSpec, RunConfig, load_run_config
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline_tests.execution_support import task_line, write_suite
from toolchoice_pipeline_tests.scoring_reference import model_scores, score_episodes, summarise

LINEAGE = Lineage(release_id="r1", suite="demo", catalog_version="c1", run_id="run-1")
TASKS = [
    task_line("t-read", "Please Read file notes.txt", "Read"),
    task_line("t-grep", "Grep for the pattern 'TODO'", "Grep"),
    task_line("t-glob", "Glob the files matching '*.py'", "Glob"),
    task_line("t-read2", "Read the file 'setup.cfg'", "Read"),
]
SIM = "sim/flaky"


def sim_config(repeats: int, flip_rate: float = 0.3, **extra) -> RunConfig:
    params = {"sim_latency_ms": 0, "sim_flip_rate": flip_rate, "sim_seed": 5}
    return RunConfig(models=[ModelSpec(model=SIM, params=params, **extra)], repeats=repeats)


def run(tmp_path, config, suite=None):
    suite = suite or write_suite(tmp_path, TASKS)
    return suite, run_suite_sync(suite, config, data_dir=tmp_path)


def test_each_task_runs_k_samples_with_their_own_journal_keys(tmp_path):
    STATS.reset()
    suite, episodes = run(tmp_path, sim_config(3))
    assert [(e.task_id, e.sample) for e in episodes] == [(t["id"], s) for t in TASKS for s in range(3)]
    keys = [step.request_key for e in episodes for step in e.steps]
    assert STATS.completed == len(keys) == len(set(keys))
    assert len({e.steps[0].request_key for e in episodes}) == 12
    with CallJournal(tmp_path / "cache/agent_calls.sqlite", "read_write") as journal:
        assert journal.keys() == set(keys)


def test_rerun_and_resume_with_repeats_make_no_repeated_call(tmp_path):
    suite, first = run(tmp_path, sim_config(2))
    STATS.reset()
    _, again = run(tmp_path, sim_config(2), suite)
    assert STATS.attempts == 0
    assert all(step.cache_hit for e in again for step in e.steps)
    assert [e.first_call.name for e in again] == [e.first_call.name for e in first]
    STATS.reset()
    _, more = run(tmp_path, sim_config(3), suite)  # samples 0 and 1 are journaled: only sample 2 is asked
    assert STATS.attempts == STATS.completed == sum(len(e.steps) for e in more if e.sample == 2)
    assert [e.steps[0].cache_hit for e in more] == [s < 2 for _ in TASKS for s in range(3)]


def test_the_sim_flip_rate_sends_the_flipped_samples_first_call_to_another_tool(tmp_path):
    _, steady = run(tmp_path / "steady", sim_config(4, flip_rate=0.0))
    _, flaky = run(tmp_path / "flaky", sim_config(4, flip_rate=0.5))
    settings = SimSettings(flip_rate=0.5, seed=5)
    flipped = [flips(settings, e.task_id, e.sample) for e in flaky]
    assert 0 < sum(flipped) < len(flipped)
    for calm, shaken, flip in zip(steady, flaky, flipped):
        assert (calm.first_call.name != shaken.first_call.name) == flip
    reply = plausible_reply(
        [{"role": "user", "content": "Read notes.txt"}, {"role": "tool", "content": "x"}], [], flip="any"
    )
    assert "tool_calls" not in reply  # after a tool result the sim answers in text, flipped or not


def test_samples_are_stored_and_scored_per_sample(tmp_path):
    suite, episodes = run(tmp_path, sim_config(3, flip_rate=0.5))
    published = publish_release(tmp_path, suite, LINEAGE, "adhoc", episodes)
    with Warehouse(tmp_path).connect() as con:
        stored = con.execute("SELECT task_id, sample, right_tool FROM task_scores ORDER BY task_id, sample").fetchall()
        rates = dict(con.execute("SELECT task_id, right_tool_rate FROM task_rates").fetchall())
    assert len(stored) == 12 and {sample for _, sample, _ in stored} == {0, 1, 2}
    for task in rates:
        assert rates[task] == pytest.approx(sum(bool(r) for t, _, r in stored if t == task) / 3)
    assert published.scores.models[SIM].flaky_tasks == sorted(t for t, rate in rates.items() if 0 < rate < 1)
    scores = score_episodes(suite, episodes)
    assert [(s.task_id, s.sample) for s in scores] == [(e.task_id, e.sample) for e in episodes]
    table = task_scores_table(scores, LINEAGE)
    assert table.column("sample").to_pylist() == [s for _ in TASKS for s in range(3)]
    calls = agent_calls_table(episodes, LINEAGE, suite)
    assert sorted(set(zip(calls.column("task_id").to_pylist(), calls.column("sample").to_pylist()))) == sorted(
        (t["id"], s) for t in TASKS for s in range(3)
    )
    figures = summarise(scores)[SIM]
    right = sum(bool(s.right_tool) for s in scores)
    assert figures.right_tool_pct == round(100 * right / 12, 2)  # a mean over all samples
    assert (figures.n_tasks, figures.n_samples, figures.repeats) == (4, 12, 3)
    by_task = {t["id"]: [bool(s.right_tool) for s in scores if s.task_id == t["id"]] for t in TASKS}
    assert figures.flaky_tasks == sorted(t for t, outcomes in by_task.items() if any(outcomes) and not all(outcomes))
    row = release_scores_table({SIM: figures}, LINEAGE).to_pylist()[0]
    assert (row["pass_k_pct"], row["flaky_tasks"], row["repeats"]) == (figures.pass_k_pct, figures.flaky_tasks, 3)


def scripted(task_id: str, sample: int, right: bool | None, error: str | None = None) -> TaskScore:
    return TaskScore(
        model="m",
        task_id=task_id,
        sample=sample,
        right_tool=right,
        right_args=right,
        calls=1,
        first_tool=None,
        error=error,
        agent_cost_usd=0.5,
    )


def test_pass_k_pass_at_k_flaky_tasks_and_flip_rate_on_a_scripted_model():
    scores = [scripted("a", s, True) for s in range(3)]
    scores += [scripted("b", s, s == 0) for s in range(3)]
    scores += [scripted("c", s, False) for s in range(3)]
    scores += [scripted("d", 0, True), scripted("d", 1, True), scripted("d", 2, None, error="timeout")]
    figures = model_scores(scores)
    assert (figures.n_tasks, figures.n_samples, figures.repeats, figures.errors) == (4, 12, 3, 1)
    assert figures.right_tool_pct == round(100 * 6 / 11, 2)
    assert figures.pass_k_pct == 50.0  # a, and d on its two scored samples
    assert figures.pass_at_k_pct == 75.0  # a, b, d
    assert figures.flaky_tasks == ["b"]
    disagreement = (2 * (1 / 3) * (2 / 3) * 3 / 2) / 4  # only b disagrees, unbiased pairwise estimate
    assert figures.flip_rate == round((1 - (1 - 2 * disagreement) ** 0.5) / 2, 4)
    assert figures.agent_cost_usd == 6.0 and figures.agent_cost_per_sample_usd == 0.5


def test_one_sample_per_task_has_no_flip_rate_and_pass_k_equals_the_share():
    figures = model_scores([scripted("a", 0, True), scripted("b", 0, False)])
    assert (figures.repeats, figures.flip_rate, figures.flaky_tasks) == (1, None, [])
    assert figures.pass_k_pct == figures.pass_at_k_pct == figures.right_tool_pct == 50.0


def test_the_agent_budget_stops_the_run_cleanly_with_a_flag(tmp_path):
    price = {"input_usd_per_mtok": 1_000_000.0, "output_usd_per_mtok": 0.0}  # a dollar per prompt token
    config = sim_config(2, flip_rate=0.0, price=price).model_copy(update={"budget_usd": 1.0})
    config = config.model_copy(
        update={"concurrency": config.concurrency.model_copy(update={"max_in_flight": 1, "per_model": 1})}
    )
    STATS.reset()
    suite, episodes = run(tmp_path, config)
    assert STATS.completed == 1  # the first call spends more than the budget; nothing else starts
    stopped = [e for e in episodes if e.error]
    assert len(stopped) == len(episodes) - 1
    assert all(e.error.startswith(FLAG_AGENT_BUDGET_EXHAUSTED) for e in stopped)
    scores = score_episodes(suite, episodes)
    assert sum(FLAG_AGENT_BUDGET_EXHAUSTED in s.flags for s in scores) == len(stopped)
    assert summarise(scores)[SIM].flags[FLAG_AGENT_BUDGET_EXHAUSTED] == len(stopped)


def test_repeats_in_the_configuration_global_per_model_and_from_the_command_line(tmp_path):
    (tmp_path / "toolchoice.yaml").write_text(
        "repeats: 3\nmodels:\n  - local/bm25-router\n"
        "  - model: local/name-match\n    repeats: 5\ngate:\n  noise: require\n"
    )
    config = load_run_config(tmp_path)
    assert [config.repeats_for(m) for m in config.models] == [3, 5]
    assert config.gate.noise == "require"
    overridden = config.with_repeats(2)  # toolchoice run --repeats 2
    assert [overridden.repeats_for(m) for m in overridden.models] == [2, 2]
    (tmp_path / "toolchoice.yaml").write_text("models: [local/bm25-router]\nrepeats: 0\n")
    with pytest.raises(InputError) as caught:
        load_run_config(tmp_path)
    [problem] = caught.value.problems
    assert (problem.line, problem.field) == (2, "repeats")


def test_the_judge_polls_each_sample_and_each_sample_scores_its_own_votes(tmp_path):
    from toolchoice_pipeline.judge import judge_episodes_sync
    from toolchoice_pipeline.suites.config import JudgeConfig, RetryConfig

    suite, episodes = run(tmp_path, sim_config(2, flip_rate=0.5))
    votes = judge_episodes_sync(suite, episodes, JudgeConfig(polls=2), retries=RetryConfig())
    assert sorted((v.task_id, v.sample, v.poll) for v in votes) == sorted(
        (t["id"], s, p) for t in TASKS for s in range(2) for p in range(2)
    )
    scores = {(s.task_id, s.sample): s for s in score_episodes(suite, episodes, votes)}
    for (task, sample), score in scores.items():
        own = [v for v in votes if (v.task_id, v.sample) == (task, sample) and v.valid]
        assert score.tsq == sum(v.verdict == "correct" for v in own) / len(own)
