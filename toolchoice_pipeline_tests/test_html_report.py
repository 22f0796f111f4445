"""The confusion heatmaps and the HTML release report (releases/confusion_chart.py, releases/html_report.py,
``toolchoice report --html``).

The matrix is checked against counts taken straight from random task scores; the page is rendered from documents
built in memory (hostile ids, descriptions and replies) and parsed with ``html.parser``; the command runs
in-process on two releases published from records (real DuckDB and Parquet, no Dagster).
"""

from __future__ import annotations

import random
from collections import Counter
from html.parser import HTMLParser
from io import BytesIO

import pytest
from PIL import Image

from toolchoice_pipeline.cli import main
from toolchoice_pipeline.records.episodes import TaskScore
from toolchoice_pipeline.releases.confusion import ConfusionChange, ToolChange
from toolchoice_pipeline.releases.confusion_chart import (
    confusion_matrix,
    heatmap_pngs,
    matrix_pair,
    model_slugs,
)
from toolchoice_pipeline.releases.document import GateDocument, ReleaseDocument
from toolchoice_pipeline.releases.gate import Comparison, GateFailure, TaskFlips
from toolchoice_pipeline.releases.html_report import ReportData, render_html
from toolchoice_pipeline.suites.suite import Suite
from toolchoice_pipeline_tests.release_helpers import CATALOG, make_suite, publish
from toolchoice_pipeline_tests.scoring_reference import summarise

TOOLS = ["Read", "Grep", "Bash", "WebSearch", "edit_file"]
HOSTILE = '<script>alert("x")</script>'


def random_scores(rng: random.Random, model: str, n: int) -> list[TaskScore]:
    """Scored, erroring, unlabelled and any-call episodes; chosen tools include no call and a tool outside TOOLS."""
    scores = []
    for i in range(n):
        expected = rng.choice([*TOOLS, None])
        chosen = rng.choice([*TOOLS, None, "Hallucinated"]) if rng.random() < 0.6 else expected
        kind = rng.random()
        scores.append(
            TaskScore(
                model=model,
                task_id=f"t{i % (n // 2 + 1)}",
                sample=i // (n // 2 + 1),
                right_tool=None if kind < 0.1 else chosen == expected,
                right_args=None if kind < 0.1 else chosen == expected,
                calls=0 if chosen is None else 1,
                first_tool=chosen,
                error="APIError: down" if 0.1 <= kind < 0.15 else None,
                expected_tool=expected,
                expected_any_call=None if kind < 0.1 else 0.15 <= kind < 0.2,
            )
        )
    return scores


@pytest.mark.parametrize("seed", range(8))
def test_the_matrix_equals_the_pair_counts_of_the_scored_episodes(seed):
    rng = random.Random(seed)
    scores = random_scores(rng, "m", rng.randint(1, 160))
    [figures] = summarise(scores).values()
    pairs = Counter(
        (s.expected_tool, s.first_tool)
        for s in scores
        if s.error is None and s.right_tool is not None and s.expected_any_call is False
    )
    matrix = confusion_matrix(figures.model_dump(mode="json"))  # as scores.json holds it
    assert set(matrix.labels) == {t for pair in pairs for t in pair}
    assert matrix.labels == sorted(matrix.labels, key=lambda t: (t is None, t or ""))  # no call last
    for i, expected in enumerate(matrix.labels):
        for j, chosen in enumerate(matrix.labels):
            assert matrix.counts[i][j] == pairs.get((expected, chosen), 0)
    assert sum(map(sum, matrix.counts)) == sum(pairs.values())


def test_two_releases_share_their_labels_and_keep_their_counts():
    now = {"tools": [{"tool": "Read", "right": 4}], "confusion": [{"expected": "Read", "chosen": None, "count": 2}]}
    before = {
        "tools": [{"tool": "Grep", "right": 1}],
        "confusion": [{"expected": "Grep", "chosen": "Read", "count": 3}],
    }
    a, b = matrix_pair(now, before)
    assert a.labels == b.labels == ["Grep", "Read", None]
    assert (a.count("Read", "Read"), a.count("Read", None), a.count("Grep", "Read")) == (4, 2, 0)
    assert (b.count("Grep", "Grep"), b.count("Grep", "Read"), b.count("Read", "Read")) == (1, 3, 0)


def test_heatmaps_are_pngs_with_a_second_panel_beside_a_baseline():
    rng = random.Random(3)
    now = summarise(random_scores(rng, "a/m", 120) + random_scores(rng, "b/m", 40))
    before = summarise(random_scores(rng, "a/m", 120))
    pngs = heatmap_pngs(now, before, "r2", "r1")
    assert set(pngs) == {"a/m", "b/m"}
    sizes = {}
    for model, data in pngs.items():
        with Image.open(BytesIO(data)) as image:
            assert image.format == "PNG"
            sizes[model] = image.size
    assert sizes["a/m"][0] > 1.5 * sizes["b/m"][0]  # b/m has no baseline: one panel


def test_thirty_tools_draw_in_a_bounded_picture_with_the_panels_stacked():
    names = [f"tool_{i:02d}_with_a_rather_long_name" for i in range(30)]
    # every name is a label (the tools list names all thirty); the picture's size rests on them, not on the counts
    pairs = Counter((random.Random(i).choice(names), random.Random(i + 99).choice(names)) for i in range(60))
    figures = {
        "tools": [{"tool": t, "right": pairs.get((t, t), 0)} for t in names],
        "confusion": [{"expected": e, "chosen": c, "count": n} for (e, c), n in pairs.items() if e != c],
    }
    [data] = heatmap_pngs({"m": figures}, {"m": figures}).values()
    with Image.open(BytesIO(data)) as image:  # one panel wide (a page's width), the change panel below
        assert 1200 < image.width < 1700 and 2 * image.width > image.height > 1.5 * image.width


def test_model_slugs_are_file_names_and_distinct():
    slugs = model_slugs(["openai/gpt-4o", "openai-gpt-4o", "../x", "ollama_chat/llama3.1:8b"])
    assert len(set(slugs.values())) == 4
    assert all("/" not in s and ":" not in s and not s.startswith(".") for s in slugs.values())


# --- the page ------------------------------------------------------------------------------------------------

VOID = {"meta", "img", "br", "hr", "link", "input"}


class Page(HTMLParser):
    """Tags (checked balanced), attributes and text of a page."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.rows: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "tr":
            self.rows.append("")
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)
        if "tr" in self.stack and self.rows:
            self.rows[-1] += data


def figures(right_tool: float, **extra):
    return {
        "n_tasks": 10,
        "errors": 0,
        "n_scored": 10,
        "right_tool_pct": right_tool,
        "right_args_pct": right_tool - 10,
        "right_tool_ci95_pct": [right_tool - 20, right_tool + 9],
        "right_args_ci95_pct": [right_tool - 30, right_tool - 1],
        "calls_per_task": 1.0,
        "tsq_mean": 0.5,
        "agent_cost_usd": 0.01,
        "judge_cost_usd": 0.0,
        "latency_ms_p50": 1.0,
        "latency_ms_p95": 2.0,
        **extra,
    }


def hostile_report() -> ReportData:
    model = f"local/{HOSTILE}"
    task = f"task-{HOSTILE}"
    gate = GateDocument(
        passed=False,
        max_drop_points=2.0,
        baseline_release_id="r1",
        failures=[GateFailure(model=model, metric="right_tool_pct", reason=f"dropped {HOSTILE}")],
        flips={model: {"right_tool": TaskFlips(right_to_wrong=[task, "plain-task"])}},
        comparisons=[Comparison(model=model, metric="right_tool_pct", baseline=70.0, now=50.0, drop=20.0)],
        confusion_changes=[
            ConfusionChange(model=model, expected="Grep", chosen="WebSearch", baseline=0, now=7),
            ConfusionChange(model=model, expected=HOSTILE, chosen=None, baseline=3, now=1),
        ],
        catalog_changes=[
            ToolChange(
                tool="Grep",
                change="changed",
                description_before="Search file contents.",
                description_after=f'Search. "><img src="https://evil.example/x.png">{HOSTILE}',
                parameters_changed=["pattern"],
            )
        ],
    )
    document = ReleaseDocument(
        release_id="r2",
        kind="release",
        suite=f"suite{HOSTILE}",
        models={model: figures(50.0)},
        gate=gate,
    )
    baseline = ReleaseDocument(release_id="r1", kind="release", suite="s", models={model: figures(70.0)})
    calls = [
        {
            "step": 0,
            "calls_json": f'[{{"name": "WebSearch", "arguments": {{"query": "{HOSTILE.replace(chr(34), "")}"}}}}]',
            "content": None,
        },
        {"step": 1, "calls_json": "[]", "content": f"done </td></tr></table>{HOSTILE}", "error": None},
    ]
    return ReportData(
        document=document,
        baseline=baseline,
        heatmaps={model: b"\x89PNG fake"},
        calls={"r2": {(model, task): calls}, "r1": {(model, task): [{"step": 0, "calls_json": "[]"}]}},
        expected={(model, task): "Grep"},
    )


def test_the_page_is_well_formed_self_contained_and_escapes_the_data():
    text = render_html(hostile_report())
    page = Page(text)
    assert page.stack == ["html"] or page.stack == []  # the parser stops at </html>
    tags = [tag for tag, _ in page.tags]
    assert "script" not in tags and tags.count("img") == 1  # only the heatmap: the description's img is text
    for tag, attrs in page.tags:
        for name, value in attrs.items():
            if name in ("src", "href", "action", "srcset"):
                assert value is not None and value.startswith("data:image/png;base64,"), (tag, name, value)
    assert not any(marker in text for marker in ('src="http', "src='http", 'href="', 'src="//', "@import", "url("))
    [csp] = [a for tag, a in page.tags if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert "default-src 'none'" in (csp["content"] or "") and "script-src" not in (csp["content"] or "")
    words = "".join(page.text)
    assert f"task-{HOSTILE}" in words and f"local/{HOSTILE}" in words  # shown as text, intact
    assert "&lt;script&gt;" in text and "<script>" not in text


def test_the_page_leads_with_the_verdict_and_shows_each_change_beside_its_catalog_edit():
    text = render_html(hostile_report())
    page = Page(text)
    words = " ".join(" ".join(page.text).split())
    assert words.index("Gate FAILED against baseline r1") < words.index("What moved")
    [row] = [r for r in page.rows if "Grep → WebSearch" in " ".join(r.split())]
    row = " ".join(row.split())
    assert "0 → 7 (+7)" in row
    assert "before: Search file contents." in row and 'after: Search. "><img src="https://evil.example' in row
    assert "parameters changed: pattern" in row
    [row] = [r for r in page.rows if f"{HOSTILE} → no call" in " ".join(r.split())]
    assert "3 → 1 (-2)" in row and f"no description or parameter of {HOSTILE} changed" in row
    [flip] = [r for r in page.rows if f"task-{HOSTILE}" in r]
    assert "right tool: right → wrong" in flip and "WebSearch" in flip and "done </td></tr></table>" in flip
    assert "[30.00, 59.00]" in words  # the interval of the right-tool share
    assert "20.00" in words and "over the limit" in words  # the comparison


# --- the command -----------------------------------------------------------------------------------------------


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_:
        main(list(args))
    out, err = capsys.readouterr()
    return exit_.value.code, out, err


@pytest.fixture(scope="module")
def two_releases(tmp_path_factory):
    """r1; r2 with Grep's description edited and local/a choosing Grep on 6 tasks (its gate fails). Published once
    for the module: its tests only read the releases (the report's pictures go to ``reports/``)."""
    tmp_path = tmp_path_factory.mktemp("two_releases")
    suite = make_suite(20)
    publish(tmp_path, suite, "r1")
    curated = [CATALOG[0], CATALOG[1].model_copy(update={"description": "Read anything."})]
    edited = Suite(spec=suite.spec, directory=suite.directory, curated=curated, live=[], tasks=suite.tasks)
    wrong = {f"t{i:02d}" for i in range(6)}
    published = publish(tmp_path, edited, "r2", models={"local/a": {"wrong_tool": wrong}, "local/b": {}})
    assert not published.gate.passed
    return tmp_path, wrong


def test_report_html_writes_the_page_and_the_heatmaps(two_releases, capsys, tmp_path):
    data_dir, wrong = two_releases
    out = tmp_path / "page.html"
    code, stdout, stderr = run_cli(capsys, "report", "--data-dir", str(data_dir), "--html", str(out))
    assert code == 0, stderr
    text = out.read_text(encoding="utf-8")
    page = Page(text)
    words = " ".join(" ".join(page.text).split())
    assert "Gate FAILED against baseline r1" in words
    assert "Read → Grep" in words and f"0 → {len(wrong)}" in words and "after: Read anything." in words
    flipped = [r for r in page.rows if any(t in r for t in wrong)]
    assert len(flipped) == len(wrong) and all('Grep({"pattern":' in " ".join(r.split()) for r in flipped)
    assert text.count("data:image/png;base64,") == 3  # the trend and a heatmap per model
    heatmap = data_dir / "reports" / "unit" / "confusion-local-a.png"
    with Image.open(heatmap) as image:
        assert image.format == "PNG"
    assert "HTML report of r2" in stdout


def test_report_html_of_an_unknown_release_or_into_a_missing_directory_exits_2(two_releases, capsys, tmp_path):
    data_dir, _ = two_releases
    out = tmp_path / "page.html"
    code, _, stderr = run_cli(capsys, "report", "--data-dir", str(data_dir), "--html", str(out), "--release", "r9")
    assert code == 2 and "no finished release 'r9'" in stderr and "Traceback" not in stderr
    code, _, stderr = run_cli(capsys, "report", "--data-dir", str(data_dir), "--html", str(tmp_path / "no" / "p.html"))
    assert code == 2 and "--html" in stderr and "Traceback" not in stderr
    assert not out.exists()


def test_a_first_release_has_no_changes_section_and_no_flips():
    document = ReleaseDocument(
        release_id="r1",
        kind="release",
        suite="s",
        models={"local/a": figures(60.0)},
        gate=GateDocument(passed=True, max_drop_points=2.0),
    )
    words = " ".join(" ".join(Page(render_html(ReportData(document=document))).text).split())
    assert "Gate PASSED against no baseline" in words
    assert "What moved" not in words and "Flipped tasks" not in words and "Tool confusion per model" not in words
    assert "The judge did not run" in words


def test_the_page_lists_regressions_first_and_at_most_thirty_tasks_per_model():
    better = [f"a{i:02d}" for i in range(20)]  # sort before the regressions by id
    worse = [f"z{i:02d}" for i in range(40)]
    document = ReleaseDocument(
        release_id="r2",
        kind="release",
        suite="s",
        models={"m": figures(50.0)},
        gate=GateDocument(
            passed=False,
            max_drop_points=2.0,
            baseline_release_id="r1",
            flips={
                "m": {
                    "right_tool": TaskFlips(right_to_wrong=worse[:25], wrong_to_right=better),
                    "right_args": TaskFlips(right_to_wrong=worse[20:]),
                }
            },
        ),
    )
    page = Page(render_html(ReportData(document=document)))
    listed = [row[:3] for row in page.rows if row[:1] in ("a", "z")]  # a row's text starts with its task id
    assert listed == worse[:30]
    assert "60 tasks flipped" in " ".join(page.text) and "and 30 more" in " ".join(page.text)
