"""``toolchoice report`` (the trend of each share per model, in the terminal and as a PNG) and
``toolchoice gate <id> --junit`` (exit 0/1, valid JUnit XML), through the installed console script, on three
demo releases: r1 and r2 pass, r3 (Bash description degraded) fails the gate; ``toolchoice run --chart`` draws
r3's chart, heatmaps and HTML report, which ``toolchoice report`` leaves alone.

The releases are produced in-process with the judge off (the report and the gate read the shares only), on the
demo trimmed to TASKS tasks (six of them Bash's): r1 and r2 materialised through Dagster, r3 by ``toolchoice run
--chart``. The report with its chart and the failing gate run as subprocesses (the console script's output and
exit code), the other commands in this process (``main``'s guard).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from PIL import Image

from toolchoice_pipeline_tests.pipeline_helpers import (
    DEMO_MODELS,
    copy_data,
    dagster_instance,
    materialise,
    read_scores,
    set_description,
    toolchoice,
    trim_tasks,
)
from toolchoice_pipeline_tests.small_runs import toolchoice_here

pytestmark = pytest.mark.slow

ROUTER = "local/bm25-router"
TASKS = 20


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """r1 and r2 materialised through Dagster; then, Bash's description degraded, r3 by ``toolchoice run --chart``
    (in this process): the data directory and r3's finished command."""
    root = tmp_path_factory.mktemp("cli_report")
    data_dir = copy_data(root / "data")
    trim_tasks(data_dir, TASKS)
    with dagster_instance(root / "dagster_home") as instance:
        assert materialise(data_dir, instance, "r1", kind="release", judge=False).success
        assert materialise(data_dir, instance, "r2", kind="release", judge=False).success
    set_description(data_dir, "Bash", "A utility.")
    ran = toolchoice_here(
        None, "run", "--release", "r3", "--kind", "release", "--no-judge", "--chart", "--data-dir", str(data_dir)
    )
    assert ran.returncode == 1, ran.stdout + ran.stderr  # scored; its gate failed
    return data_dir, ran


@pytest.fixture(scope="module")
def data_dir(releases):
    return releases[0]


@pytest.fixture(scope="module")
def report(data_dir, tmp_path_factory):
    """``toolchoice report --chart <new directory>/trend.png`` of r1-r3 (the console script): its chart's path and
    the finished process."""
    chart = tmp_path_factory.mktemp("report") / "charts" / "trend.png"
    return chart, toolchoice("report", "--data-dir", str(data_dir), "--chart", str(chart))


def test_report_prints_each_models_shares_per_release_and_the_gate(data_dir, report):
    chart, done = report
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {
        line.split("│")[1].strip(): line
        for line in done.stdout.splitlines()
        if line.startswith("│") and line.split("│")[1].strip().split(" ")[0] in ("r1", "r2", "r3")
    }
    assert list(rows) == ["r1", "r2 (baseline)", "r3"]  # oldest first; r3 failed, so r2 stays the baseline
    rows = {key.split(" ")[0]: line for key, line in rows.items()}
    for release_id, gate in (("r1", "pass"), ("r2", "pass"), ("r3", "FAIL")):
        figures = read_scores(data_dir, release_id)["models"]
        cells = [cell.strip() for cell in rows[release_id].split("│")]
        assert cells[2:4] == ["release", gate]
        for model in DEMO_MODELS:
            assert f"{figures[model]['right_tool_pct']:.2f} / {figures[model]['right_args_pct']:.2f}" in cells
    assert all(model in done.stdout for model in DEMO_MODELS)
    assert f"chart: {chart}" in done.stdout.replace("\n", "")


def test_report_writes_a_png_chart(report):
    chart, done = report
    assert done.returncode == 0, done.stdout + done.stderr
    with Image.open(chart) as image:
        assert image.format == "PNG" and image.width > 400 and image.height > 200


def test_run_draws_its_chart_only_when_asked_and_report_leaves_it_alone(releases, capsys):
    data_dir, ran = releases
    assert not (data_dir / "releases" / "r2" / "trend.png").exists()  # a release made without --chart has none
    runs_chart = data_dir / "releases" / "r3" / "trend.png"
    assert f"chart: {runs_chart}" in ran.stdout.replace("\n", "")
    with Image.open(runs_chart) as image:
        assert image.format == "PNG"
    for model in ("local-bm25-router", "local-name-match"):  # the confusion heatmaps beside it
        with Image.open(runs_chart.parent / f"confusion-{model}.png") as image:
            assert image.format == "PNG"
    page = (runs_chart.parent / "report.html").read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == 3 and "Gate FAILED against baseline r2" in page
    before = runs_chart.read_bytes()
    default = data_dir / "reports" / "coding_agent" / "trend.png"
    done = toolchoice_here(capsys, "report", "--data-dir", str(data_dir), "--suite", "coding_agent")
    assert done.returncode == 0, done.stderr
    with Image.open(default) as image:
        assert image.format == "PNG"
    assert runs_chart.read_bytes() == before


def test_report_on_a_suite_without_releases_exits_2_naming_it(data_dir, capsys):
    done = toolchoice_here(capsys, "report", "--data-dir", str(data_dir), "--suite", "no_such_suite")
    assert done.returncode == 2
    assert "no scored release found for suite no_such_suite" in done.stderr


def _junit(path):
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    [suite] = root.findall("testsuite")
    return suite, {case.get("name"): case for case in suite.findall("testcase")}


def test_gate_of_a_passing_release_exits_0_with_junit_xml(data_dir, tmp_path, capsys):
    junit = tmp_path / "out.xml"
    done = toolchoice_here(capsys, "gate", "r2", "--data-dir", str(data_dir), "--junit", str(junit))
    assert done.returncode == 0, done.stdout + done.stderr
    suite, cases = _junit(junit)
    assert set(cases) == set(DEMO_MODELS)
    assert suite.get("failures") == "0" and suite.get("tests") == "2"
    assert all(case.find("failure") is None for case in cases.values())
    assert "r1" in suite.get("name")


def test_gate_of_the_degraded_release_exits_1_with_the_regression_in_junit_xml(data_dir, tmp_path):
    junit, markdown = tmp_path / "out.xml", tmp_path / "summary.md"
    done = toolchoice("gate", "r3", "--data-dir", str(data_dir), "--junit", str(junit), "--markdown", str(markdown))
    assert done.returncode == 1, done.stdout + done.stderr
    suite, cases = _junit(junit)
    assert suite.get("failures") == "1"
    failure = cases[ROUTER].find("failure")
    assert failure is not None and failure.get("type") == "regression"
    flipped = read_scores(data_dir, "r3")["gate"]["flips"][ROUTER]["right_tool"]["right_to_wrong"]
    assert all(task_id in failure.text for task_id in flipped)
    assert cases["local/name-match"].find("failure") is None
    assert flipped[0] in done.stdout  # the Markdown summary
    # --markdown (a CI job's summary) leads with the confusion changes, Bash's edit beside them
    summary = markdown.read_text(encoding="utf-8")
    [largest] = read_scores(data_dir, "r3")["gate"]["confusion_changes"][:1]
    assert summary.index("What moved") < summary.index("| model | status |")
    assert f"{largest['baseline']} → {largest['now']}" in summary and "Bash's description changed" in summary


def test_gate_of_an_unknown_release_exits_2(data_dir, tmp_path, capsys):
    done = toolchoice_here(capsys, "gate", "r404", "--data-dir", str(data_dir), "--junit", str(tmp_path / "out.xml"))
    assert done.returncode == 2
    assert "r404" in done.stderr
    assert not (tmp_path / "out.xml").exists()
