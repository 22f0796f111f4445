"""The release's calibration: canary votes among the release's votes, a missing canary said plainly, and a
failed calibration that blocks promotion (``judge.calibration: fail``) or does not (``warn``)."""

from toolchoice_pipeline.ingest.canary import canary_problem
from toolchoice_pipeline.judge.calibration import CANARY_MODEL, calibrate, release_calibration
from toolchoice_pipeline.records.episodes import JudgeVote
from toolchoice_pipeline.releases.document import CalibrationInfo, GateDocument, JudgeInfo, ReleaseDocument
from toolchoice_pipeline.releases.store import _promotable


def vote(model, task_id, poll, verdict, cost=0.001):
    return JudgeVote(
        model=model,
        task_id=task_id,
        poll=poll,
        verdict=verdict,
        valid=True,
        judge_model="j",
        rubric_version="r",
        prompt_tokens=50,
        completion_tokens=5,
        cost_usd=cost,
    )


def canary_votes(verdicts):
    return [vote(CANARY_MODEL, f"canary-{turn}", 0, v) for turn, v in enumerate(verdicts)]


def test_a_missing_canary_fails_saying_so_not_toothless():
    result = calibrate({}, {}, None, canary_missing="data/sessions/canary.jsonl: file not found")
    assert not result.passed
    assert result.message.startswith(
        "judge calibration failed, the judge could not be checked: there is no "
        "canary session to judge (data/sessions/canary.jsonl: file not found)"
    )
    assert "toothless" not in result.message


def test_the_release_calibration_uses_the_canary_votes_and_counts_their_cost(tmp_path):
    good = release_calibration(canary_votes(["correct", "incorrect", "incorrect", "incorrect"]), {})
    assert good["passed"] and not good["blocks_promotion"] and good["canary_tsq"] == 0.25
    assert good["canary_judge_cost_usd"] == 0.004 and good["canary_judge_tokens"] == 220
    toothless = release_calibration(canary_votes(["correct"] * 4), {})
    assert not toothless["passed"] and toothless["blocks_promotion"] and "toothless" in toothless["message"]
    warned = release_calibration(canary_votes(["correct"] * 4), {}, mode="warn")
    assert not warned["passed"] and not warned["blocks_promotion"] and warned["mode"] == "warn"
    broken = tmp_path / "data"
    (broken / "sessions").mkdir(parents=True)
    (broken / "sessions" / "canary.jsonl").write_text("{}\n", encoding="utf-8")  # a data dir's own canary, broken
    missing = release_calibration([], {}, canary_problem(broken))
    assert missing["blocks_promotion"] and "no canary session to judge" in missing["message"]


def test_a_blocking_calibration_keeps_a_passing_release_from_being_promoted():
    def document(blocks: bool | None) -> ReleaseDocument:
        judge = (
            None
            if blocks is None
            else JudgeInfo(
                model="local/catalog-judge",
                polls=3,
                rubric_version="rv",
                calibration=CalibrationInfo(passed=not blocks, blocks_promotion=blocks),
            )
        )
        return ReleaseDocument(
            release_id="r1",
            kind="release",
            suite="s",
            models={},
            judge=judge,
            gate=GateDocument(passed=True, max_drop_points=2.0),
        )

    assert not _promotable(document(blocks=True))
    assert _promotable(document(blocks=False))
    assert _promotable(document(blocks=None))  # --no-judge
