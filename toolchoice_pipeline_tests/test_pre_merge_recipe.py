"""The README's pre-merge recipe for a description change, command by command as a CI job runs it: the promoted
baseline comes from main, the pull request's candidate catalog runs as an adhoc release against it, and the job
summary (`toolchoice gate --markdown`) leads with the confusion changes beside the edited description. The adhoc
release never becomes the baseline. The pull request's two commands run through the console script; main's
release, which the job restores, is made by the same command in this process (``main``'s guard). The data
directory holds the demo trimmed to 20 tasks spread over it (six of them Bash's)."""

import re

import pytest

from toolchoice_pipeline_tests.pipeline_helpers import copy_data, read_scores, toolchoice, trim_tasks
from toolchoice_pipeline_tests.small_runs import toolchoice_here

pytestmark = pytest.mark.slow


def test_a_candidate_catalog_is_gated_as_adhoc_and_the_summary_shows_what_moved(tmp_path, capsys):
    data_dir = copy_data(tmp_path / "data")
    trim_tasks(data_dir, 20)
    main = toolchoice_here(
        capsys, "run", "--data-dir", str(data_dir), "--kind", "release", "--release", "main-1", "--no-judge"
    )
    assert main.returncode == 0, main.stdout + main.stderr

    catalog = data_dir / "suites" / "coding_agent" / "catalog.yaml"
    text = catalog.read_text(encoding="utf-8")
    candidate = re.sub(r"(- name: Bash\n  description: )>-\n(?:    .*\n)+?(  parameters)", r"\1A utility.\n\2", text)
    assert candidate != text
    catalog.write_text(candidate, encoding="utf-8")

    pr = toolchoice("run", "--data-dir", str(data_dir), "--kind", "adhoc", "--release", "pr-7-abc", "--no-judge")
    assert pr.returncode == 1, pr.stdout + pr.stderr
    summary = tmp_path / "step_summary.md"
    gate = toolchoice("gate", "pr-7-abc", "--data-dir", str(data_dir), "--markdown", str(summary))
    assert gate.returncode == 1 and "Traceback" not in gate.stderr

    scores = read_scores(data_dir, "pr-7-abc")
    assert scores["kind"] == "adhoc" and scores["baseline_release_id"] == "main-1"
    largest = scores["gate"]["confusion_changes"][0]
    name = {None: "no call"}
    line = (
        f"**{name.get(largest['expected'], largest['expected'])} → {name.get(largest['chosen'], largest['chosen'])}: "
        f"{largest['baseline']} → {largest['now']} tasks**"
    )
    markdown = summary.read_text(encoding="utf-8")
    assert markdown.index("### What moved") < markdown.index("| model | status |")
    assert line in markdown
    assert "Bash's description changed:" in markdown and "“A utility.”" in markdown
    # The terminal output of the run shows the largest changes too.
    assert line.strip("*") in pr.stdout
    # The candidate was gated, not promoted: main's release stays the baseline.
    assert (data_dir / "releases" / "baseline.json").read_text(encoding="utf-8").count("pr-7-abc") == 0
