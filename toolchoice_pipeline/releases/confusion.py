"""What moved between a release and its baseline: tool-confusion changes beside the catalog edits of the tools
involved (the gate's ``confusion_changes`` and ``catalog_changes``, DESIGN §3 "Tool confusion").

- :func:`confusion_changes_between`: per model, the ``(expected, chosen)`` pairs (:mod:`..scoring.confusion`)
  counted on the episodes both releases scored: the same ``(model, task_id, sample)`` scored in both (no
  infrastructure error, labelled, not ``any_call``), so tasks added or dropped and extra repeats never show as a
  change. Largest ``|now − baseline|`` first.
- :func:`catalog_changes`: per tool of the suite catalog that was added, removed or edited, the description before
  and after and the parameters added, removed or changed (``(required)`` when the required list changed).
- :func:`confusion_markdown`: each change in one line, with the catalog edits of its two tools, or a sentence saying
  neither changed (then the model or the tasks moved).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from toolchoice_pipeline.scoring.confusion import Pair, confusion_changes
from toolchoice_pipeline.util.duckdb_memory import memory_connection

if TYPE_CHECKING:
    import pyarrow as pa

CONFUSION_COLUMNS = [
    "model",
    "task_id",
    "sample",
    "right_tool",
    "error",
    "expected_tool",
    "expected_any_call",
    "first_tool",
]
MARKDOWN_CHANGES_SHOWN = 10
DESCRIPTION_SHOWN = 240


class ConfusionChange(BaseModel):
    """One pair whose count changed: episodes of ``model`` expecting ``expected`` first (None: no call) that chose
    ``chosen`` first (None: no call), in the baseline and now, on the episodes both releases scored."""

    model: str
    expected: str | None
    chosen: str | None
    baseline: int
    now: int


class ToolChange(BaseModel):
    """How one tool of the suite catalog changed from the baseline to this release."""

    tool: str
    change: Literal["added", "removed", "changed"]
    description_before: str | None = None
    description_after: str | None = None
    parameters_added: list[str] = Field(default_factory=list)
    parameters_removed: list[str] = Field(default_factory=list)
    parameters_changed: list[str] = Field(default_factory=list)

    @property
    def description_changed(self) -> bool:
        return self.change == "changed" and self.description_before != self.description_after


def _by_model(rows: Iterable[tuple[str, str | None, str | None, int]]) -> dict[str, dict[Pair, int]]:
    counts: dict[str, dict[Pair, int]] = {}
    for model, expected, chosen, n in rows:
        counts.setdefault(model, {})[(expected, chosen)] = n
    return counts


def confusion_changes_between(now: pa.Table, baseline: pa.Table) -> list[ConfusionChange] | None:
    """The changed pairs between two ``task_scores`` tables (:data:`CONFUSION_COLUMNS`), largest change first;
    None when either table predates ``expected_tool`` (no expectation recorded)."""
    if any(column not in table.column_names for table in (now, baseline) for column in CONFUSION_COLUMNS):
        return None
    con = memory_connection()
    try:
        scored = "error IS NULL AND right_tool IS NOT NULL AND expected_any_call = false"
        con.register("now_scores", now.select(CONFUSION_COLUMNS))
        con.register("baseline_scores", baseline.select(CONFUSION_COLUMNS))
        con.execute(f"""
            CREATE TEMP VIEW both_scored AS
            SELECT n.model, n.expected_tool AS expected_now, n.first_tool AS chosen_now,
                   b.expected_tool AS expected_before, b.first_tool AS chosen_before
            FROM (SELECT * FROM now_scores WHERE {scored}) n
            JOIN (SELECT * FROM baseline_scores WHERE {scored}) b
              ON n.model = b.model AND n.task_id = b.task_id AND coalesce(n.sample, 0) = coalesce(b.sample, 0)""")
        now_counts = _by_model(
            con.execute("SELECT model, expected_now, chosen_now, count(*) FROM both_scored GROUP BY ALL").fetchall()
        )
        before_counts = _by_model(
            con.execute(
                "SELECT model, expected_before, chosen_before, count(*) FROM both_scored GROUP BY ALL"
            ).fetchall()
        )
    finally:
        con.close()
    changes = [
        ConfusionChange(model=model, expected=e, chosen=c, baseline=was, now=is_)
        for model in sorted(now_counts.keys() | before_counts.keys())
        for e, c, was, is_ in confusion_changes(now_counts.get(model, {}), before_counts.get(model, {}))
    ]
    # Stable: within a model the order of confusion_changes; across models the largest change first.
    changes.sort(key=lambda ch: -abs(ch.now - ch.baseline))
    return changes


def _properties(parameters_json: str | None) -> tuple[dict[str, Any], list[str]]:
    try:
        schema = json.loads(parameters_json or "{}")
    except ValueError:
        return {}, []
    if not isinstance(schema, dict):
        return {}, []
    properties = schema.get("properties")
    required = schema.get("required")
    return (
        properties if isinstance(properties, dict) else {},
        sorted(r for r in required if isinstance(r, str)) if isinstance(required, list) else [],
    )


def catalog_changes(
    baseline: Mapping[str, tuple[str, str | None]], now: Mapping[str, tuple[str, str | None]]
) -> list[ToolChange]:
    """The tools added, removed or edited from ``baseline`` to ``now`` (each ``{name: (description,
    parameters_json)}``, the suite catalog's rows of ``tool_catalog``), in name order."""
    changes = []
    for tool in sorted(baseline.keys() | now.keys()):
        if tool not in baseline:
            changes.append(ToolChange(tool=tool, change="added", description_after=now[tool][0]))
            continue
        if tool not in now:
            changes.append(ToolChange(tool=tool, change="removed", description_before=baseline[tool][0]))
            continue
        (description_before, parameters_before), (description_after, parameters_after) = baseline[tool], now[tool]
        props_before, required_before = _properties(parameters_before)
        props_after, required_after = _properties(parameters_after)
        changed = sorted(p for p in props_before.keys() & props_after.keys() if props_before[p] != props_after[p])
        if required_before != required_after:
            changed.append("(required)")
        if parameters_before != parameters_after and not changed and props_before.keys() == props_after.keys():
            changed.append("(schema)")
        change = ToolChange(
            tool=tool,
            change="changed",
            description_before=description_before,
            description_after=description_after,
            parameters_added=sorted(props_after.keys() - props_before.keys()),
            parameters_removed=sorted(props_before.keys() - props_after.keys()),
            parameters_changed=changed,
        )
        if change.description_changed or change.parameters_added or change.parameters_removed or changed:
            changes.append(change)
    return changes


def _name(tool: str | None) -> str:
    return "no call" if tool is None else tool


def shortened(text: str | None, limit: int = DESCRIPTION_SHOWN) -> str:
    """``text`` on one line (runs of whitespace as one space), cut to ``limit`` characters with an ellipsis."""
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quoted(text: str | None) -> str:
    return f"“{shortened(text)}”"


def describe_tool_change(change: ToolChange) -> str:
    """One clause: ``Grep's description changed: “old” → “new”; parameters changed: pattern``."""
    if change.change == "added":
        return f"{change.tool} was added ({_quoted(change.description_after)})"
    if change.change == "removed":
        return f"{change.tool} was removed"
    parts = []
    if change.description_changed:
        parts.append(
            f"{change.tool}'s description changed: {_quoted(change.description_before)} → "
            f"{_quoted(change.description_after)}"
        )
    for label, names in (
        ("added", change.parameters_added),
        ("removed", change.parameters_removed),
        ("changed", change.parameters_changed),
    ):
        if names:
            parts.append(f"{change.tool}'s parameters {label}: {', '.join(names)}")
    return "; ".join(parts)


def involved_changes(change: ConfusionChange, catalog: Mapping[str, ToolChange]) -> list[ToolChange]:
    """The catalog edits of the change's expected and chosen tools (in that order)."""
    tools = [t for t in dict.fromkeys((change.expected, change.chosen)) if t is not None]
    return [catalog[t] for t in tools if t in catalog]


def change_line(
    change: ConfusionChange, catalog: Mapping[str, ToolChange], unit: str = "tasks", described: set[str] | None = None
) -> str:
    """``Grep → WebSearch: 0 → 7 tasks; Grep's description changed: …`` (the model named by the caller).

    A tool whose edit an earlier line already showed is named only (``described`` collects them); when neither tool
    changed, the line says so, and whether other tools' edits or nothing in the catalog can explain it."""
    described = set() if described is None else described
    head = f"**{_name(change.expected)} → {_name(change.chosen)}: {change.baseline} → {change.now} {unit}**"
    edits = involved_changes(change, catalog)
    if edits:
        clauses = [
            f"{edit.tool} {'was ' + edit.change if edit.change != 'changed' else 'changed'} (above)"
            if edit.tool in described
            else describe_tool_change(edit)
            for edit in edits
        ]
        described.update(edit.tool for edit in edits)
        return head + "; " + "; ".join(clauses)
    tools = " or ".join(_name(t) for t in dict.fromkeys((change.expected, change.chosen)) if t is not None)
    if not catalog:
        return head + "; the catalog did not change (the model or the tasks moved)"
    others = ", ".join(sorted(catalog))
    return head + f"; no description or parameter of {tools} changed (edits of {others} may have moved it)"


def confusion_lines(gate: Any, limit: int = MARKDOWN_CHANGES_SHOWN, unit: str = "tasks") -> list[str]:
    """The largest changes of a stored gate (``scores.json``'s ``gate``: ``confusion_changes`` and
    ``catalog_changes``) as plain lines for a terminal: ``model: Grep → WebSearch: 0 → 7 tasks; …``."""
    changes = [ConfusionChange.model_validate(c) for c in _dumped(gate.confusion_changes)]
    catalog = {t.tool: t for t in (ToolChange.model_validate(c) for c in _dumped(gate.catalog_changes))}
    described: set[str] = set()
    lines = [f"{c.model}: {change_line(c, catalog, unit, described).replace('**', '')}" for c in changes[:limit]]
    if len(changes) > limit:
        lines.append(f"and {len(changes) - limit} smaller confusion changes (gate.md)")
    return lines


def _dumped(items: Iterable[Any]) -> list[Any]:
    return [item.model_dump() if hasattr(item, "model_dump") else item for item in items]


def confusion_markdown(
    changes: list[ConfusionChange],
    catalog: list[ToolChange],
    unit: str = "tasks",
    limit: int = MARKDOWN_CHANGES_SHOWN,
) -> str:
    """The gate report's lead section: the largest confusion changes, each beside its tools' catalog edits."""
    if not changes:
        return ""
    by_tool = {change.tool: change for change in catalog}
    lines = ["### What moved: tool confusion against the baseline (largest change first)", ""]
    described: set[str] = set()
    lines += [f"- `{c.model}`: {change_line(c, by_tool, unit, described)}" for c in changes[:limit]]
    if len(changes) > limit:
        lines.append(f"- and {len(changes) - limit} smaller changes (scores.json gate.confusion_changes)")
    unexplained = [t for t in catalog if not any(t in involved_changes(c, by_tool) for c in changes)]
    if unexplained:
        lines += ["", "Other catalog edits: " + "; ".join(describe_tool_change(t) for t in unexplained) + "."]
    return "\n".join(lines)
