"""Cost you can trust: unpriced models shown as such and refused under a budget, judge budget exhaustion and
unjudged episodes flagged, counted and warned about."""

from toolchoice_pipeline.cli.run_display import judge_warnings, scores_table
from toolchoice_pipeline.execution.llm import is_priced
from toolchoice_pipeline.judge.preflight import unpriced_under_budget
from toolchoice_pipeline.records.calls import Reply
from toolchoice_pipeline.records.episodes import Episode, JudgeVote, StepRecord
from toolchoice_pipeline.releases.document import JudgeInfo, ReleaseDocument
from toolchoice_pipeline.releases.report import score_cells
from toolchoice_pipeline.scoring.summary import ModelScores
from toolchoice_pipeline.suites.config import JudgeConfig, ModelSpec, Price
from toolchoice_pipeline.suites.tasks import Task
from toolchoice_pipeline_tests.scoring_reference import score_episode, summarise

PRICE = Price(input_usd_per_mtok=1.0, output_usd_per_mtok=2.0)


def test_which_models_are_priced():
    assert is_priced(ModelSpec(model="openai/gpt-4o-mini"))  # in LiteLLM's pricing table
    assert is_priced(ModelSpec(model="local/catalog-judge"))  # built-in: free by definition
    assert not is_priced(ModelSpec(model="openai/my-private-finetune"))
    assert is_priced(ModelSpec(model="openai/my-private-finetune", price=PRICE))


def test_an_unpriced_judge_under_a_budget_is_refused_unless_it_has_a_price():
    unpriced = JudgeConfig(model="openai/my-private-finetune", budget_usd=0.0001)
    problem = unpriced_under_budget(unpriced)
    assert problem.startswith("openai/my-private-finetune: unpriced") and "budget_usd=0.0001" in problem
    assert unpriced_under_budget(JudgeConfig(model="openai/my-private-finetune")) is None  # no budget
    priced = JudgeConfig(model={"model": "openai/my-private-finetune", "price": PRICE.model_dump()}, budget_usd=1)
    assert unpriced_under_budget(priced) is None
    assert unpriced_under_budget(JudgeConfig(budget_usd=0.01)) is None  # local/catalog-judge


def figures_of(n_tasks: int) -> dict:
    """A ``models`` entry of ``scores.json`` for ``n_tasks`` tasks that cost nothing."""
    return {
        "n_tasks": n_tasks,
        "errors": 0,
        "right_tool_pct": None,
        "right_args_pct": None,
        "calls_per_task": None,
        "tsq_mean": None,
        "agent_cost_usd": 0.0,
        "judge_cost_usd": 0.0,
        "latency_ms_p50": None,
        "latency_ms_p95": None,
    }


def test_an_unpriced_cost_shows_unpriced_never_zero():
    figures = figures_of(2)
    cells = score_cells(figures, agent_priced=False, judge_priced=False)
    assert cells.count("unpriced") == 2 and "0.0000" not in cells
    assert score_cells(figures).count("0.0000") == 2
    scores = ReleaseDocument(
        release_id="r",
        kind="adhoc",
        suite="s",
        catalog_version="c",
        judge=JudgeInfo(model="openai/x", polls=3, rubric_version="rv"),
        models={"openai/y": ModelScores.model_validate(figures)},
    )
    table = scores_table(scores, frozenset({"openai/x"}))
    agent_column = [c for c in table.columns if c.header == "agent USD"][0]
    judge_column = [c for c in table.columns if c.header == "judge USD"][0]
    assert list(agent_column.cells) == ["0.0000"] and list(judge_column.cells) == ["unpriced"]


def vote(task_id, poll, *, valid, error=None):
    return JudgeVote(
        model="m",
        task_id=task_id,
        poll=poll,
        valid=valid,
        verdict="correct" if valid else None,
        judge_model="j",
        rubric_version="r",
        prompt_tokens=100,
        completion_tokens=10,
        error=error,
    )


def test_budget_exhaustion_is_flagged_counted_and_warned_and_unjudged_episodes_too():
    exhausted = "judge_budget_exhausted: the run's judge spend reached budget_usd=0.01 before this poll"
    tasks = [
        Task.model_validate(
            {"id": f"t{i}", "messages": [{"role": "user", "content": "hi"}], "expected": {"tool": None}}
        )
        for i in range(5)
    ]
    scores = []
    for task in tasks:
        episode = Episode(model="m", task_id=task.id, steps=[StepRecord(step=0, reply=Reply(text="hello"))])
        votes = (
            [vote(task.id, 0, valid=True)]
            if task.id in ("t0", "t1", "t2")
            else [vote(task.id, 0, valid=False, error=exhausted)]
        )
        scores.append(score_episode(episode, task, [], "key_args", votes))
    assert [s.flags for s in scores][3:] == [["judge_failed", "judge_budget_exhausted"]] * 2
    assert all(s.judge_tokens == 110 for s in scores)
    model = summarise(scores)["m"]
    assert model.flags["judge_budget_exhausted"] == 2 and model.n_unjudged == 2 and model.judge_tokens == 550
    assert model.tsq_mean == 1.0  # from the 3 judged episodes only: hence the warning
    judge = JudgeInfo(model="j", polls=1, rubric_version="r", budget_usd=0.01)
    warnings = judge_warnings(
        ReleaseDocument(release_id="r", kind="adhoc", suite="s", judge=judge, models={"m": model})
    )
    assert warnings == [
        "m: 2 of 5 episodes have no valid judge vote (40%): its TSQ comes from the other 3 only",
        "m: judge budget exhausted (budget_usd=0.01): 2 episodes not fully judged (flag judge_budget_exhausted)",
    ]
    one_in_forty = ModelScores.model_validate({**figures_of(40), "n_unjudged": 2})
    assert (
        judge_warnings(ReleaseDocument(release_id="r", kind="adhoc", suite="s", models={"m": one_in_forty})) == []
    )  # 5% is not more than 5%


def test_unpriced_costs_are_stored_in_scores_json_and_the_warehouse_and_every_table_shows_them(tmp_path):
    from toolchoice_pipeline.defs.metadata import scores_markdown
    from toolchoice_pipeline.releases.lineage import Lineage
    from toolchoice_pipeline.releases.publish import publish_release
    from toolchoice_pipeline.releases.store import ReleaseStore
    from toolchoice_pipeline.releases.warehouse import Warehouse
    from toolchoice_pipeline_tests.release_helpers import make_suite, model_episodes, votes_for

    suite = make_suite(4)
    episodes = model_episodes(suite, "openai/my-private-finetune") + model_episodes(suite, "local/bm25-router")
    lineage = Lineage(release_id="r1", suite=suite.name, catalog_version=suite.catalog_version, run_id="run-r1")
    published = publish_release(
        tmp_path,
        suite,
        lineage,
        "adhoc",
        episodes,
        votes_for(episodes),
        judge={"model": "openai/private-judge", "polls": 3, "rubric_version": "rv1"},
        unpriced_agents=["openai/my-private-finetune"],
        judge_unpriced=True,
    )
    stored = ReleaseStore(tmp_path).read_scores("r1")
    assert stored == published.scores
    private, local = stored.models["openai/my-private-finetune"], stored.models["local/bm25-router"]
    assert (private.agent_cost_unpriced, private.judge_cost_unpriced) == (True, True)
    assert (local.agent_cost_unpriced, local.judge_cost_unpriced) == (False, True)  # local/ is priced at 0
    columns = Warehouse(tmp_path).read_table(
        "release_scores", "r1", ["model", "agent_cost_unpriced", "judge_cost_unpriced"]
    )
    assert sorted(columns.to_pylist(), key=lambda row: row["model"]) == [
        {"model": "local/bm25-router", "agent_cost_unpriced": False, "judge_cost_unpriced": True},
        {"model": "openai/my-private-finetune", "agent_cost_unpriced": True, "judge_cost_unpriced": True},
    ]
    # The Dagster Markdown table and the console table read the stored flags: "unpriced", never 0.0000.
    rows = {line.split(" | ")[0].removeprefix("| "): line for line in scores_markdown(stored).splitlines()[2:]}
    assert rows["openai/my-private-finetune"].count("unpriced") == 2
    assert rows["local/bm25-router"].count("unpriced") == 1 and "0.0004" in rows["local/bm25-router"]
    table = scores_table(stored)
    agent_column = [c for c in table.columns if c.header == "agent USD"][0]
    judge_column = [c for c in table.columns if c.header == "judge USD"][0]
    models = list(stored.models)
    assert list(agent_column.cells)[models.index("openai/my-private-finetune")] == "unpriced"
    assert list(agent_column.cells)[models.index("local/bm25-router")] == "0.0004"
    assert set(judge_column.cells) == {"unpriced"}


def test_a_scores_json_written_before_the_unpriced_fields_reads_as_priced():
    old = ModelScores.model_validate(figures_of(3))
    assert not old.agent_cost_unpriced and not old.judge_cost_unpriced
    assert score_cells(old).count("0.0000") == 2
