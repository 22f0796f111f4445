"""Tool confusion (DESIGN §3 "Tool confusion"): the ``confusion``/``tools``/``any_call`` figures of ``scores.json``,
the ``tool_confusion``/``tool_scores`` views and the gate's ``confusion_changes``, each against an independent count
of the generated releases (what each task expected first, what each episode chose first)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolchoice_pipeline.records.calls import Reply, make_call
from toolchoice_pipeline.records.episodes import Episode, StepRecord
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.publish import publish_release
from toolchoice_pipeline.releases.regate import regate
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.releases.warehouse_tables import agent_calls_table, judge_votes_table
from toolchoice_pipeline.scoring.columnar import score_release
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.suite import Suite, SuiteSpec
from toolchoice_pipeline.suites.tasks import Task
from toolchoice_pipeline_tests.scoring_reference import score_episodes, summarise

TOOLS = ["Bash", "Edit", "Grep", "Read"]
GHOST = "DeleteEverything"  # a tool no catalog has: a hallucinated call keeps its name
ERROR = "error"
KINDS = ["tool", "no_call", "any_call", "calls", "unlabelled"]
MODELS = ["m/a", "m/b"]


def catalog(descriptions: dict[str, str] | None = None) -> list[ToolDefinition]:
    descriptions = descriptions or {}
    return [
        ToolDefinition(
            name=name,
            description=descriptions.get(name, f"The {name} tool."),
            parameters={"type": "object", "properties": {"x": {"type": "string"}}},
        )
        for name in TOOLS
    ]


def task(task_id: str, kind: str, tool: str, second: str) -> Task:
    expected: dict | None
    if kind == "tool":
        expected = {"tool": tool, "arguments": {}}
    elif kind == "no_call":
        expected = {"tool": None}
    elif kind == "any_call":
        expected = {"tool": None, "any_call": True}
    elif kind == "calls":
        expected = {"tool": tool, "calls": [{"tool": tool, "arguments": {}}, {"tool": second, "arguments": {}}]}
    else:
        expected = None
    return Task.model_validate(
        {"id": task_id, "messages": [{"role": "user", "content": f"do {task_id}"}], "expected": expected}
    )


def expected_first(t: Task) -> tuple[str, str | None] | None:
    """Independently of the scorer: ('any', None), ('tool', name or None), or None for an unlabelled task."""
    if t.expected is None:
        return None
    if t.expected.any_call:
        return ("any", None)
    return ("tool", t.expected.tool)


def episode(model: str, task_id: str, sample: int, choice: str | None) -> Episode:
    if choice == ERROR:
        return Episode(
            model=model, task_id=task_id, sample=sample, error="boom", steps=[StepRecord(step=0, error="boom")]
        )
    reply = Reply(text="nothing to call") if choice is None else Reply(calls=[make_call(choice, {"x": "v"})])
    return Episode(model=model, task_id=task_id, sample=sample, steps=[StepRecord(step=0, reply=reply)])


@st.composite
def releases(draw, prefix: str = "t"):
    n_tasks = draw(st.integers(1, 10))
    repeats = draw(st.integers(1, 3))
    tasks = [
        task(
            f"{prefix}{i}",
            draw(st.sampled_from(KINDS)),
            draw(st.sampled_from(TOOLS)),
            draw(st.sampled_from(TOOLS)),
        )
        for i in range(n_tasks)
    ]
    choices = st.sampled_from([*TOOLS, None, GHOST, ERROR])
    episodes = [
        episode(model, t.id, sample, draw(choices)) for model in MODELS for t in tasks for sample in range(repeats)
    ]
    return tasks, episodes


def make_suite(tasks: list[Task], descriptions: dict[str, str] | None = None) -> Suite:
    return Suite(
        spec=SuiteSpec(name="confusion"),
        directory=Path("suites/confusion"),
        curated=catalog(descriptions),
        live=[],
        tasks=tasks,
    )


def independent_counts(tasks: list[Task], episodes: list[Episode]):
    """Per model: Counter of (expected, chosen) over scored episodes, and the any_call (episodes, no call)."""
    by_id = {t.id: t for t in tasks}
    pairs: dict[str, Counter] = {m: Counter() for m in MODELS}
    any_call: dict[str, list[int]] = {m: [0, 0] for m in MODELS}
    for e in episodes:
        first = expected_first(by_id[e.task_id])
        if e.error is not None or first is None:
            continue
        chosen = e.steps[0].reply.calls[0].name if e.steps[0].reply.calls else None
        if first[0] == "any":
            any_call[e.model][0] += 1
            any_call[e.model][1] += chosen is None
        else:
            pairs[e.model][(first[1], chosen)] += 1
    return pairs, any_call


def assert_figures_match(models, pairs, any_call):
    for model, counter in pairs.items():
        figures = models[model]
        off_diagonal = {(e, c): n for (e, c), n in counter.items() if e != c}
        assert {(x.expected, x.chosen): x.count for x in figures.confusion} == off_diagonal
        counts = [x.count for x in figures.confusion]
        assert counts == sorted(counts, reverse=True)
        tools = {x.tool: x for x in figures.tools}
        names = {e for e, _ in counter} | {c for _, c in counter}
        assert set(tools) == names
        for name in names:
            expected = sum(n for (e, _), n in counter.items() if e == name)
            chosen = sum(n for (_, c), n in counter.items() if c == name)
            right = counter.get((name, name), 0)
            row = tools[name]
            assert (row.expected, row.chosen, row.right) == (expected, chosen, right)
            assert row.precision == (right / chosen if chosen else None)
            assert row.recall == (right / expected if expected else None)
        episodes, no_call = any_call[model]
        if episodes:
            assert (figures.any_call.episodes, figures.any_call.no_call) == (episodes, no_call)
        else:
            assert figures.any_call is None


LINEAGE = Lineage(release_id="r", suite="confusion", catalog_version="v", run_id="run")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(releases())
def test_confusion_and_tool_figures_equal_an_independent_count_on_both_scoring_paths(release):
    tasks, episodes = release
    suite = make_suite(tasks)
    pairs, any_call = independent_counts(tasks, episodes)
    columnar = score_release(suite, agent_calls_table(episodes, LINEAGE, suite), judge_votes_table([], LINEAGE))
    assert_figures_match(columnar.models, pairs, any_call)
    assert_figures_match(summarise(score_episodes(suite, episodes)), pairs, any_call)


def test_no_call_and_hallucinated_choices_keep_their_place_in_the_table():
    tasks = [task("a", "tool", "Grep", "Grep"), task("b", "no_call", "Grep", "Grep"), task("c", "tool", "Read", "Read")]
    episodes = [
        episode("m/a", "a", 0, GHOST),  # a tool outside the catalog keeps its name
        episode("m/a", "b", 0, "Bash"),  # a call where none was expected: expected None
        episode("m/a", "c", 0, None),  # no call where Read was expected: chosen None
    ]
    suite = make_suite(tasks)
    models = score_release(suite, agent_calls_table(episodes, LINEAGE, suite), judge_votes_table([], LINEAGE)).models
    confusion = [(x.expected, x.chosen, x.count) for x in models["m/a"].confusion]
    assert sorted(confusion, key=str) == sorted([("Grep", GHOST, 1), (None, "Bash", 1), ("Read", None, 1)], key=str)
    ghost = next(x for x in models["m/a"].tools if x.tool == GHOST)
    assert (ghost.expected, ghost.chosen, ghost.right, ghost.precision, ghost.recall) == (0, 1, 0, 0.0, None)


def publish(data_dir: Path, suite: Suite, release_id: str, episodes: list[Episode]):
    lineage = Lineage(release_id=release_id, suite=suite.name, catalog_version=suite.catalog_version, run_id=release_id)
    return publish_release(data_dir, suite, lineage, "release", episodes, [], judge=None)


def view_rows(data_dir: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(data_dir / "warehouse" / "toolchoice.duckdb"), read_only=True) as con:
        return con.execute(sql).fetchall()


def shared_changes(tasks_now, episodes_now, tasks_before, episodes_before):
    """Independently: per model, off-diagonal pair counts on the (task, sample) both releases scored."""

    def scored(tasks, episodes):
        by_id = {t.id: t for t in tasks}
        out = {}
        for e in episodes:
            first = expected_first(by_id[e.task_id])
            if e.error is None and first is not None and first[0] == "tool":
                chosen = e.steps[0].reply.calls[0].name if e.steps[0].reply.calls else None
                out[(e.model, e.task_id, e.sample)] = (first[1], chosen)
        return out

    now, before = scored(tasks_now, episodes_now), scored(tasks_before, episodes_before)
    shared = now.keys() & before.keys()
    changes = {}
    for model in MODELS:
        c_now = Counter(now[k] for k in shared if k[0] == model)
        c_before = Counter(before[k] for k in shared if k[0] == model)
        for pair in c_now.keys() | c_before.keys():
            if pair[0] != pair[1] and c_now[pair] != c_before[pair]:
                changes[(model, *pair)] = (c_before[pair], c_now[pair])
    return changes


@pytest.mark.slow  # 8 examples, each publishing two releases to a real warehouse: 86 s of the inner loop under load
@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(before=releases(), now=releases(), overlap=st.integers(0, 10))
def test_views_and_gate_changes_agree_with_an_independent_count_on_mixed_task_sets(
    tmp_path_factory, before, now, overlap
):
    """Two published releases whose task sets overlap in part and whose repeats may differ: the views equal each
    release's scores.json, and gate.confusion_changes counts only the episodes both scored."""
    data_dir = tmp_path_factory.mktemp("data")
    (data_dir / "toolchoice.yaml").write_text("models: [{model: local/name-match}]\n")
    tasks_before, episodes_before = before
    tasks_now, episodes_now = now
    # The first `overlap` tasks of the new release take the ids (and expectations) of the baseline's.
    renamed = {}
    for i, t in enumerate(tasks_now):
        if i < min(overlap, len(tasks_before)):
            renamed[t.id] = tasks_before[i].id
            tasks_now[i] = tasks_before[i]
        else:
            renamed[t.id] = f"n{i}"
            tasks_now[i] = t.model_copy(update={"id": f"n{i}"})
    episodes_now = [e.model_copy(update={"task_id": renamed[e.task_id]}) for e in episodes_now]
    publish(data_dir, make_suite(tasks_before), "r1", episodes_before)
    published = publish(data_dir, make_suite(tasks_now, {"Grep": "Search."}), "r2", episodes_now)
    for release_id in ("r1", "r2"):
        document = ReleaseStore(data_dir).read_scores(release_id)
        confusion = sorted(
            view_rows(
                data_dir,
                f"SELECT model, expected_tool, chosen_tool, n FROM tool_confusion WHERE release_id = '{release_id}'",
            ),
            key=str,
        )
        stored = sorted(
            [(m, x.expected, x.chosen, x.count) for m, s in document.models.items() for x in s.confusion], key=str
        )
        assert confusion == stored
        tools = sorted(
            view_rows(
                data_dir,
                'SELECT model, tool, expected, chosen, "right", precision, recall FROM tool_scores '
                f"WHERE release_id = '{release_id}'",
            ),
            key=str,
        )
        stored_tools = sorted(
            [
                (m, x.tool, x.expected, x.chosen, x.right, x.precision, x.recall)
                for m, s in document.models.items()
                for x in s.tools
            ],
            key=str,
        )
        assert tools == stored_tools
    # r1 is the baseline only when its own gate passed (a model with only errors is "not evaluated"): the stored
    # gate is checked when it is, and a re-gate against r1 either way.
    stored_gate = published.scores.gate
    gate, _ = regate(data_dir, "r2", "r1")
    if published.scores.baseline_release_id == "r1":
        assert stored_gate.confusion_changes == gate.confusion_changes
        assert stored_gate.catalog_changes == gate.catalog_changes
    else:
        assert stored_gate.confusion_changes == [] and stored_gate.catalog_changes == []
    got = {(c.model, c.expected, c.chosen): (c.baseline, c.now) for c in gate.confusion_changes}
    assert got == shared_changes(tasks_now, episodes_now, tasks_before, episodes_before)
    sizes = [abs(c.now - c.baseline) for c in gate.confusion_changes]
    assert sizes == sorted(sizes, reverse=True)
    assert [(c.tool, c.change, c.description_after) for c in gate.catalog_changes] == [("Grep", "changed", "Search.")]
