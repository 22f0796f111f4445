"""Honest numbers on the run's terminal (issue 29): a model whose preflight failed reads FAILED on its bar (not
5/5) and in the scores table; the table gives the labelled and unlabelled counts beside the task count."""

from __future__ import annotations

from rich.console import Console

from toolchoice_pipeline.cli.run_display import RunDisplay, scores_table
from toolchoice_pipeline.releases.document import GateDocument, ReleaseDocument
from toolchoice_pipeline.scoring.summary import ModelScores
from toolchoice_pipeline_tests.test_judge_cost import figures_of


def rendered(table) -> list[str]:
    console = Console(width=250, record=True, file=open("/dev/null", "w"))  # noqa: SIM115 - closed with the console
    console.print(table)
    return console.export_text().splitlines()


def test_a_model_whose_preflight_failed_reads_failed_on_its_bar_not_n_of_n():
    display = RunDisplay(models=["local/ok", "openai/gpt-x"], n_tasks=5, judge=False)
    for done in range(1, 6):
        display("agents", "openai/gpt-x", done, 5)  # its episodes "finish" as errors, fast
        display("agents", "local/ok", done - 1, 5)
    display.failed("agents", "openai/gpt-x", "preflight call failed: AuthenticationError (401)")
    display("agents", "openai/gpt-x", 5, 5)  # a late count changes nothing
    bar = display.progress.tasks[display.tasks[("agents", "openai/gpt-x")]]
    assert bar.completed == 0 and "FAILED" in bar.description and "401" in bar.description
    assert not bar.started or bar.stop_time is not None  # its clock stopped
    display("agents", "local/ok", 5, 5)
    run_line = display.progress.tasks[display.run_line]
    assert "scoring" in run_line.description  # the failed model does not hold the run line on "agents"


def test_a_model_name_with_brackets_is_not_read_as_markup():
    display = RunDisplay(models=["m[bold]"], n_tasks=2, judge=False)
    bar = display.progress.tasks[display.tasks[("agents", "m[bold]")]]
    assert bar.description == "agents m\\[bold]"  # shown as written, not as bold
    display("judge", "j[x]", 1, 2)
    assert display.progress.tasks[display.tasks[("judge", "j[x]")]].description == "judge j\\[x]"
    display.failed("agents", "m[bold]", "cause [red]")
    assert "m\\[bold]" in bar.description and "cause \\[red]" in bar.description


def document(models: dict, not_evaluated=()) -> ReleaseDocument:
    return ReleaseDocument(
        release_id="r",
        kind="adhoc",
        suite="s",
        models={m: ModelScores.model_validate(f) for m, f in models.items()},
        gate=GateDocument(passed=not not_evaluated, max_drop_points=2.0, not_evaluated=list(not_evaluated)),
    )


def test_the_scores_table_gives_labelled_and_unlabelled_counts_beside_the_tasks():
    figures = figures_of(73) | {"n_scored": 70, "n_unlabelled": 3, "right_tool_pct": 50.0}
    lines = rendered(scores_table(document({"local/m": figures})))
    header = next(line for line in lines if "tasks" in line)
    names = [cell.strip() for cell in header.split("┃")]
    [row] = [line for line in lines if line.startswith("│ local/m")]
    cells = dict(zip(names, [cell.strip() for cell in row.split("│")]))
    assert (cells["tasks"], cells["labelled"], cells["unlabelled"]) == ("73", "70", "3")
    assert names.index("labelled") < names.index("right tool %")


def test_the_scores_table_marks_a_model_that_never_answered_or_was_not_evaluated():
    dead = figures_of(5) | {"errors": 5}
    flaky = figures_of(5) | {"errors": 2, "n_scored": 3}
    fine = figures_of(5) | {"n_scored": 5}
    text = "\n".join(rendered(scores_table(document({"a/dead": dead, "b/flaky": flaky, "c/fine": fine}, ["b/flaky"]))))
    assert text.count("FAILED") == 2
    assert "FAILED: every episode errored" in text and "FAILED: not evaluated" in text
    fine_rows = [line for line in text.splitlines() if "c/fine" in line]
    assert fine_rows and "FAILED" not in text.split("c/fine")[1]
