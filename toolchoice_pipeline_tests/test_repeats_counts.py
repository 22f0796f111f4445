"""Shares of episodes under repeats (issue 30): every episode is one sample of one task, so a share of episodes
is over tasks × k, never over tasks. A property test over k, tasks, unjudged and errored episodes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolchoice_pipeline.cli.run_display import judge_warnings
from toolchoice_pipeline.records.episodes import FLAG_JUDGE_FAILED, TaskScore
from toolchoice_pipeline.releases.document import ReleaseDocument
from toolchoice_pipeline.releases.gate import check_gate, gate_markdown
from toolchoice_pipeline_tests.scoring_reference import summarise

MODEL = "sim/m"


def episodes(n_tasks: int, k: int, unjudged: int, errored: int) -> list[TaskScore]:
    """n_tasks × k task scores: the first ``errored`` episodes with an infrastructure error, the next
    ``unjudged`` ran but got no valid judge vote, the rest judged."""
    out = []
    for index in range(n_tasks * k):
        task, sample = divmod(index, k)
        error = index < errored
        failed = not error and index < errored + unjudged
        out.append(
            TaskScore(
                model=MODEL,
                task_id=f"t{task:03d}",
                sample=sample,
                right_tool=None if error else True,
                right_args=None if error else True,
                calls=0 if error else 1,
                first_tool=None,
                tsq=None if error or failed else 1.0,
                error="boom" if error else None,
                flags=["infra_error"] if error else ([FLAG_JUDGE_FAILED] if failed else []),
            )
        )
    return out


@settings(max_examples=60, deadline=None)
@given(
    n_tasks=st.integers(1, 80),
    k=st.integers(1, 6),
    unjudged_share=st.floats(0.0, 1.0),
    errored_share=st.floats(0.0, 0.5),
)
def test_shares_of_episodes_count_every_sample(n_tasks, k, unjudged_share, errored_share):
    total = n_tasks * k
    errored = int(errored_share * total)
    unjudged = int(unjudged_share * (total - errored))
    figures = summarise(episodes(n_tasks, k, unjudged, errored))[MODEL]
    assert (figures.n_tasks, figures.n_samples, figures.n_episodes) == (n_tasks, total, total)
    assert (figures.errors, figures.n_unjudged) == (errored, unjudged)
    assert figures.error_pct == round(100.0 * errored / total, 2)
    ran = total - errored
    warnings = judge_warnings(ReleaseDocument(release_id="r", kind="adhoc", suite="s", models={MODEL: figures}))
    if ran and unjudged / ran > 0.05:
        [warning] = warnings
        assert warning.startswith(f"{MODEL}: {unjudged} of {ran} episodes have no valid judge vote ")
        assert f"({100 * unjudged / ran:.0f}%)" in warning and f"the other {ran - unjudged} only" in warning
    else:
        assert warnings == []
    result = check_gate("r", {MODEL: figures}, "b", {MODEL: figures})
    assert f"| {errored}/{total} |" in gate_markdown(result, {MODEL: figures}, {MODEL: figures})
    assert (result.models[MODEL].status == "not_evaluated") == (errored * 100.0 > 5.0 * total)


def test_the_issue_30_count_is_of_219_episodes_not_73():
    """73 tasks × 3 samples, 15 unjudged: 6.8% (a warning) of 219, where dividing by tasks said 21%."""
    figures = summarise(episodes(73, 3, 15, 0))[MODEL]
    [warning] = judge_warnings(ReleaseDocument(release_id="r", kind="adhoc", suite="s", models={MODEL: figures}))
    assert "15 of 219 episodes" in warning and "(7%)" in warning
    quiet = summarise(episodes(73, 3, 10, 0))[MODEL]  # 10 of 219 = 4.6%: below the 5% line (10 of 73 was 14%)
    assert judge_warnings(ReleaseDocument(release_id="r", kind="adhoc", suite="s", models={MODEL: quiet})) == []


def test_the_columnar_scores_count_episodes_as_the_pure_path_does():
    from toolchoice_pipeline.releases.lineage import Lineage
    from toolchoice_pipeline.releases.warehouse_tables import task_scores_table
    from toolchoice_pipeline.scoring.columnar import summarise_columnar

    scores = episodes(73, 3, 15, 4)
    lineage = Lineage(release_id="r", suite="s", catalog_version="c", run_id="run")
    columnar = summarise_columnar(task_scores_table(scores, lineage))[MODEL]
    pure = summarise(scores)[MODEL]
    for figures in (columnar, pure):
        assert (figures.n_tasks, figures.n_samples, figures.n_episodes) == (73, 219, 219)
        assert (figures.errors, figures.n_unjudged, figures.error_pct) == (4, 15, round(400 / 219, 2))
