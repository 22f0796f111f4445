"""Judge calibration: agreement with right tool (accuracy, Cohen's kappa) and the canary session."""

import asyncio
import json
import shutil

import pytest

from toolchoice_pipeline.execution.llm import complete
from toolchoice_pipeline.ingest.canary import (
    CANARY_CATALOG,
    PACKAGED_CANARY,
    canary_expected_tsq,
    canary_labels,
    canary_source,
    canary_turns,
    describe_canary,
    read_session_turns,
)
from toolchoice_pipeline.judge import judge_episodes_sync, majority_verdicts
from toolchoice_pipeline.judge.calibration import calibrate, canary_ceiling, canary_tsq, cohen_kappa
from toolchoice_pipeline.providers import register_providers
from toolchoice_pipeline.records.calls import from_openai_message
from toolchoice_pipeline.records.episodes import Episode, StepRecord
from toolchoice_pipeline.scoring.matching import match_reply
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.catalog_files import load_catalog_file
from toolchoice_pipeline.suites.config import JudgeConfig, ModelSpec, RetryConfig, load_run_config
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline.util.errors import InputError, display_path
from toolchoice_pipeline_tests.conftest import DATA
from toolchoice_pipeline_tests.scoring_reference import score_episodes

RETRIES = RetryConfig(max_attempts=1)


def names_only(catalog: list[ToolDefinition]) -> list[ToolDefinition]:
    """The catalog with every description removed (tool and parameter descriptions): names and schemas only."""

    def strip(schema):
        if isinstance(schema, dict):
            return {k: strip(v) for k, v in schema.items() if k != "description"}
        if isinstance(schema, list):
            return [strip(v) for v in schema]
        return schema

    return [ToolDefinition(name=t.name, parameters=strip(t.parameters)) for t in catalog]


def test_cohen_kappa_matches_the_textbook_formula():
    # 10 items: both yes 4, both no 3, a-yes/b-no 2, a-no/b-yes 1 -> p_o 0.7, p_e 0.6*0.5 + 0.4*0.5 = 0.5
    pairs = [(True, True)] * 4 + [(False, False)] * 3 + [(True, False)] * 2 + [(False, True)]
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert cohen_kappa([(True, True), (False, False)]) == pytest.approx(1.0)
    assert cohen_kappa([(True, False), (False, True)]) == pytest.approx(-1.0)
    assert cohen_kappa([(True, True)] * 5) is None
    assert cohen_kappa([]) is None


def labelled(n, agree):
    """``n`` episodes, right tool alternating; the judge agrees on the first ``agree`` of them."""
    right = {("m", f"t{i}"): i % 2 == 0 for i in range(n)}
    judge = {key: (value if i < agree else not value) for i, (key, value) in enumerate(right.items())}
    return judge, right


def test_a_judge_with_teeth_passes():
    judge, right = labelled(20, 18)
    result = calibrate(judge, right, 0.25)
    assert result.passed and result.reasons == []
    assert result.n_labelled == 20 and result.accuracy == pytest.approx(0.9) and result.kappa == pytest.approx(0.8)
    assert result.message.startswith("judge calibration passed")


def test_a_canary_above_half_fails_and_says_why():
    judge, right = labelled(20, 18)
    result = calibrate(judge, right, 0.75, canary_expected_tsq=0.25)
    assert not result.passed
    assert "toothless" in result.message and "canary session scored TSQ 0.75 > 0.5" in result.message
    assert "(it should score 0.25)" in result.message


@pytest.mark.parametrize(
    ("expected", "scored", "passed"),
    [
        (0.75, 0.75, True),  # a data directory's canary with three good choices of four, judged as its labels say
        (0.75, 0.875, True),  # halfway to 1.0 is still under the ceiling
        (0.75, 1.0, False),  # a judge that passes every choice
        (0.5, 0.75, True),
        (0.5, 1.0, False),
        (0.25, 0.75, False),  # the shipped canary keeps the 0.5 ceiling
        (None, 0.75, False),
    ],
)
def test_the_canary_ceiling_follows_its_labels_so_a_canary_with_more_good_choices_can_pass(expected, scored, passed):
    judge, right = labelled(20, 18)
    result = calibrate(judge, right, scored, canary_expected_tsq=expected)
    assert result.passed is passed, result.message
    if not passed:
        assert f"> {canary_ceiling(expected):g}" in result.message and "toothless" in result.message


def test_kappa_at_chance_on_twenty_labelled_episodes_fails_and_says_why():
    judge, right = labelled(20, 10)
    result = calibrate(judge, right, 0.25)
    assert not result.passed and result.kappa == pytest.approx(0.0)
    assert "no better than chance: Cohen's kappa 0.00 <= 0.2 on 20 labelled episodes" in result.message


def test_kappa_is_not_judged_on_fewer_than_twenty_labelled_episodes():
    judge, right = labelled(19, 9)
    result = calibrate(judge, right, 0.25)
    assert result.passed and "checked from 20" in result.message


def test_a_canary_below_a_quarter_passes_with_a_warning():
    judge, right = labelled(20, 18)
    result = calibrate(judge, right, 0.0, canary_expected_tsq=0.25)
    assert result.passed and result.reasons == []
    assert result.warnings and "scored TSQ 0.00, not 0.25" in result.message
    assert "canary TSQ 0.00 (want 0.25)" in result.message
    # the same score is what a canary of four bad choices should get: no warning then
    exact = calibrate(judge, right, 0.0, canary_expected_tsq=0.0)
    assert exact.passed and exact.warnings == [] and "canary TSQ 0.00 (want 0.00)" in exact.message


def test_the_canary_is_judged_against_its_own_catalog_snapshot(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(PACKAGED_CANARY, data / "sessions")
    shutil.copytree(DATA / "suites" / "coding_agent", data / "suites" / "coding_agent")
    (data / "suites" / "coding_agent" / "catalog.yaml").write_text("[]\n", encoding="utf-8")
    items = canary_turns(data)
    assert {t.name for t in items[0].catalog} >= {"Read", "Bash", "Glob", "WebSearch"}


def test_kappa_is_not_judged_when_right_tool_is_the_same_on_every_episode():
    # A gold replay: every choice right; a judge that fails some of them is not "at chance" on that evidence.
    right = {("m", f"t{i}"): True for i in range(40)}
    judge = {key: i % 3 != 0 for i, key in enumerate(right)}
    result = calibrate(judge, right, 0.25)
    assert result.passed and result.kappa is None
    assert "kappa not checked: right tool is the same on every labelled episode" in result.message


def test_unlabelled_episodes_and_ties_are_left_out():
    judge, right = labelled(20, 18)
    judge[("m", "extra")] = True
    right[("m", "unlabelled")] = None
    judge[("m", "unlabelled")] = True
    judge[("m", "t0")] = None
    assert calibrate(judge, right, 0.25).n_labelled == 19


def test_no_valid_canary_vote_fails():
    judge, right = labelled(20, 18)
    assert "no valid judge vote" in calibrate(judge, right, None).message


def test_canary_turns_are_read_from_the_session_with_earlier_turns():
    items = canary_turns(DATA)
    assert [i.task_id for i in items] == ["canary-0", "canary-1", "canary-2", "canary-3"]
    assert [i.reply.first_call.name for i in items] == ["Read", "WebSearch", "Read", "WebSearch"]
    assert items[1].conversation[0] == {"role": "user", "content": "show me src/app/main.py"}
    assert items[1].conversation[-1] == {"role": "user", "content": "which git branch is this repo on?"}
    assert [m["role"] for m in items[1].conversation] == ["user", "assistant", "tool", "assistant", "user"]
    assert items[1].conversation[1]["tool_calls"][0]["function"]["name"] == "Read"
    assert [t.name for t in items[0].catalog] == [t.name for t in load_catalog_file(PACKAGED_CANARY / CANARY_CATALOG)]


def test_canary_labels_make_one_good_and_three_bad_choices():
    labels = canary_labels(DATA)
    right = [match_reply(labels[i.task_id], i.reply, i.catalog, "key_args").right_tool for i in canary_turns(DATA)]
    assert right == [True, False, False, False]


def test_the_expected_canary_score_comes_from_the_canarys_labels(tmp_path):
    assert canary_expected_tsq(DATA) == 0.25  # the packaged canary: one right choice in four turns
    own = tmp_path / "sessions"
    shutil.copytree(PACKAGED_CANARY, own)
    labels = [json.loads(line) for line in (own / "canary.labels.jsonl").read_text(encoding="utf-8").splitlines()]
    labels[3]["expected"] = {"tool": "WebSearch"}  # turn 3's recorded WebSearch labelled right: two right in four
    (own / "canary.labels.jsonl").write_text("".join(json.dumps(label) + "\n" for label in labels), encoding="utf-8")
    assert canary_expected_tsq(tmp_path) == 0.5
    (own / "canary.labels.jsonl").write_text(
        "".join(json.dumps(label) + "\n" for label in labels[:3]), encoding="utf-8"
    )
    assert canary_expected_tsq(tmp_path) is None  # a turn without a label: nothing to expect


def test_offline_judge_scores_the_canary_a_quarter_with_the_demo_catalog():
    register_providers()
    assert canary_tsq(canary_turns(DATA), JudgeConfig(), RETRIES) == pytest.approx(0.25)


def test_with_a_names_only_catalog_the_calibration_check_fails_and_says_why():
    register_providers()
    catalog = names_only(load_catalog_file(PACKAGED_CANARY / CANARY_CATALOG))
    score = canary_tsq(canary_turns(DATA, catalog), JudgeConfig(), RETRIES)
    assert score > 0.5
    result = calibrate({}, {}, score)
    assert not result.passed
    assert "the judge is toothless" in result.message and "does it see the tool descriptions?" in result.message


def test_a_data_dirs_own_canary_without_a_user_turn_is_bad_input(tmp_path):
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "canary.jsonl").write_text('{"type": "summary", "summary": "nothing"}\n')
    with pytest.raises(InputError, match="canary.jsonl"):
        canary_turns(tmp_path, [ToolDefinition(name="Read")])


def test_a_data_dir_without_a_canary_uses_the_packaged_one_and_validate_says_which(tmp_path):
    assert canary_source(tmp_path) == PACKAGED_CANARY
    assert [i.task_id for i in canary_turns(tmp_path)] == ["canary-0", "canary-1", "canary-2", "canary-3"]
    assert describe_canary(tmp_path) == (
        f"judge canary {display_path(PACKAGED_CANARY / 'canary.jsonl')} (the packaged canary)"
    )
    (tmp_path / "sessions").mkdir()
    shutil.copy(PACKAGED_CANARY / "canary.jsonl", tmp_path / "sessions" / "canary.jsonl")
    assert canary_source(tmp_path) == tmp_path / "sessions"
    assert describe_canary(tmp_path).endswith("sessions/canary.jsonl (the data directory's own canary)")


def test_session_reader_joins_the_lines_of_one_message_and_skips_meta_lines(tmp_path):
    lines = [
        '{"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", '
        '"content": "Show me src/server.py"}}',
        '{"type": "user", "uuid": "m1", "sessionId": "s", "isMeta": true, "message": {"role": "user", '
        '"content": "<command-name>/clear</command-name>"}}',
        '{"type": "assistant", "uuid": "a1", "sessionId": "s", "message": {"id": "A", "role": "assistant", '
        '"content": [{"type": "text", "text": "Reading it."}]}}',
        '{"type": "assistant", "uuid": "a2", "sessionId": "s", "message": {"id": "A", "role": "assistant", '
        '"content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "src/server.py"}}]}}',
    ]
    (tmp_path / "s.jsonl").write_text("\n".join(lines) + "\n")
    ((session, turn, conversation, reply),) = read_session_turns(tmp_path / "s.jsonl")
    assert (session, turn) == ("s", 0)
    assert conversation == [{"role": "user", "content": "Show me src/server.py"}]
    assert reply.text == "Reading it." and [(c.name, c.arguments) for c in reply.calls] == [
        ("Read", {"file_path": "src/server.py"})
    ]


async def first_steps(suite, specs):
    """Each model's first-step reply on every task, through LiteLLM (the local baseline agents, replay models)."""

    async def one(spec, task):
        done = await complete(
            spec,
            task.message_dicts(),
            retries=RETRIES,
            tools=[tool.to_openai_tool() for tool in suite.task_catalog(task)],
            metadata={"task_id": task.id, "sample": 0},
        )
        return Episode(
            model=spec.model, task_id=task.id, steps=[StepRecord(step=0, reply=from_openai_message(done.message))]
        )

    return await asyncio.gather(*(one(spec, task) for spec in specs for task in suite.tasks))


@pytest.fixture(scope="module")
def demo_judged():
    """The demo suite, its judge with one poll, and the baselines' first steps on every task with their votes:
    judged once for the module's tests. The offline judge's verdict is a function of the episode (temperature and
    seed pick only the reasoning's wording), so the majority of its three polls is its one poll's verdict."""
    register_providers()
    suite = load_suite(DATA, "coding_agent")
    config = load_run_config(DATA)
    judge = config.judge.model_copy(update={"polls": 1})
    episodes = asyncio.run(first_steps(suite, [ModelSpec(model=m) for m in config.model_names()]))
    votes = judge_episodes_sync(suite, episodes, judge, retries=RETRIES)
    canary = canary_tsq(canary_turns(DATA), judge, RETRIES)
    return suite, config.model_names(), judge, episodes, votes, canary


def test_offline_judge_has_teeth_on_the_demo_suite(demo_judged):
    suite, models, _, episodes, votes, canary = demo_judged
    right_tool = {(s.model, s.task_id): s.right_tool for s in score_episodes(suite, episodes)}
    result = calibrate(majority_verdicts(votes), right_tool, canary)
    assert result.passed, result.message
    # An episode without a valid vote is one the offline judge abstained on (no tool shares a word with it).
    unvoted = {(v.model, v.task_id) for v in votes if not v.valid}
    assert all(v.error.startswith("the judge abstained") for v in votes if not v.valid)
    assert result.n_labelled == len(episodes) - len(unvoted) and len(episodes) == len(models) * len(suite.tasks) > 0
    assert len(models) == 2 and result.canary_tsq == pytest.approx(0.25) and result.kappa > 0.2


def test_a_poor_model_beside_good_baselines_fails_calibration_naming_it():
    """Issue 30: pooled over models, two baselines the judge reads well hide a model it cannot read."""
    judge, right = {}, {}
    for model, agree in (("local/bm25-router", 70), ("local/name-match", 68), ("openai/needle-3", 42)):
        for i in range(73):
            key = (model, f"t{i:03d}")
            right[key] = i % 2 == 0
            judge[key] = right[key] if i < agree else not right[key]
    result = calibrate(judge, right, 0.25)
    assert result.kappa > 0.5  # the pool alone passes
    poor = result.per_model["openai/needle-3"]
    assert poor.n_labelled == 73 and not poor.passed and poor.kappa <= 0.2
    assert poor.accuracy == pytest.approx(42 / 73)
    assert all(result.per_model[m].passed for m in ("local/bm25-router", "local/name-match"))
    assert not result.passed
    assert "on openai/needle-3 the judge agrees with right tool no better than chance" in result.message
    assert f"Cohen's kappa {poor.kappa:.2f} <= 0.2 on 73 labelled episodes" in result.message
    assert "its TSQ is not to be trusted" in result.message
    # A model with fewer than 20 labelled episodes is shown but not judged.
    few = {k: v for k, v in judge.items() if k[0] != "openai/needle-3" or int(k[1][1:]) < 19}
    assert calibrate(few, right, 0.25).passed


def test_the_release_calibration_and_the_run_table_show_the_agreement_per_model():
    from toolchoice_pipeline.cli.run_display import scores_table
    from toolchoice_pipeline.judge.calibration import CANARY_MODEL, release_calibration
    from toolchoice_pipeline.records.episodes import JudgeVote
    from toolchoice_pipeline.releases.document import ReleaseDocument
    from toolchoice_pipeline.scoring.summary import ModelScores

    def vote(model, task, verdict):
        return JudgeVote(
            model=model,
            task_id=task,
            sample=0,
            poll=0,
            verdict=verdict,
            valid=True,
            judge_model="j",
            rubric_version="v",
        )

    votes, right = [], {}
    for model, agree in (("local/good", 30), ("sim/poor", 16)):
        for i in range(30):
            right[(model, f"t{i}")] = i % 2 == 0
            correct = right[(model, f"t{i}")] == (i < agree)
            votes.append(vote(model, f"t{i}", "correct" if correct else "incorrect"))
    votes += [vote(CANARY_MODEL, f"c{i}", v) for i, v in enumerate(["correct", "incorrect", "incorrect", "incorrect"])]
    calibration = release_calibration(votes, right)
    assert calibration["per_model"]["local/good"] == {"kappa": 1.0, "accuracy": 1.0, "n_labelled": 30, "passed": True}
    assert calibration["per_model"]["sim/poor"]["passed"] is False and not calibration["passed"]
    figures = ModelScores(
        n_tasks=30,
        errors=0,
        right_tool_pct=50.0,
        right_args_pct=50.0,
        calls_per_task=1.0,
        tsq_mean=0.5,
        agent_cost_usd=0.0,
        judge_cost_usd=0.0,
        latency_ms_p50=None,
        latency_ms_p95=None,
    )
    document = ReleaseDocument.model_validate(
        {
            "release_id": "r",
            "kind": "adhoc",
            "suite": "s",
            "judge": {"model": "j", "polls": 1, "rubric_version": "v", "calibration": calibration},
            "models": {"local/good": figures.model_dump(), "sim/poor": figures.model_dump()},
        }
    )
    table = scores_table(document)
    assert table.columns[-1].header == "judge κ"
    assert list(table.columns[-1].cells) == ["1.00", f"{calibration['per_model']['sim/poor']['kappa']:.2f} (fails)"]


def test_on_the_demo_suite_a_model_the_offline_judge_cannot_read_fails_calibration_beside_the_baselines(
    tmp_path, demo_judged
):
    """Issue 30 with the real offline judge: a replay model that calls the expected tool on every other task and
    another tool on the rest, always with empty arguments. Right tool sees the tool only; the judge grades the
    whole call and finds every one wrong (required arguments missing), so on this model it agrees with right
    tool at chance, while the pool over the two baselines and it still passes."""
    suite, models, judge, baseline_episodes, baseline_votes, canary = demo_judged
    lines = []
    for i, task in enumerate(suite.tasks):
        names = [tool.name for tool in suite.task_catalog(task)]
        expected = task.expected.tool if task.expected is not None else None
        tool = expected if i % 2 == 0 and expected else next(n for n in names if n != expected)
        lines.append(json.dumps({"task_id": task.id, "tool_calls": [{"name": tool, "arguments": {}}]}))
    (tmp_path / "poor.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    poor = f"replay/{tmp_path / 'poor.jsonl'}"

    poor_episodes = asyncio.run(first_steps(suite, [ModelSpec(model=poor)]))
    episodes = [*baseline_episodes, *poor_episodes]
    votes = [*baseline_votes, *judge_episodes_sync(suite, poor_episodes, judge, retries=RETRIES)]
    right_tool = {(s.model, s.task_id): s.right_tool for s in score_episodes(suite, episodes)}
    result = calibrate(majority_verdicts(votes), right_tool, canary)
    assert result.kappa > 0.2  # pooled, the check would pass
    assert result.per_model[poor].kappa <= 0.2 and not result.per_model[poor].passed
    assert all(result.per_model[m].passed and result.per_model[m].kappa > 0.3 for m in models)
    assert not result.passed and f"on {poor} the judge agrees with right tool no better than chance" in result.message
