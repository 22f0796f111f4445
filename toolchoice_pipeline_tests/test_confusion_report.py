"""The gate report's lead section on tool confusion: the largest change first with both counts, each beside the
catalog edits of its two tools, or a sentence saying neither changed and what else did."""

from toolchoice_pipeline.releases.confusion import (
    ConfusionChange,
    ToolChange,
    catalog_changes,
    confusion_lines,
    confusion_markdown,
)
from toolchoice_pipeline.releases.gate import check_gate, gate_markdown

FIGURES = {"n_tasks": 10, "errors": 0, "right_tool_pct": 50.0, "right_args_pct": 40.0}


def change(expected, chosen, baseline, now, model="m/a"):
    return ConfusionChange(model=model, expected=expected, chosen=chosen, baseline=baseline, now=now)


def test_catalog_changes_name_description_and_parameter_edits():
    before = {
        "Grep": ("Search file contents.", '{"properties":{"pattern":{"type":"string"}},"required":["pattern"]}'),
        "Read": ("Show a file.", '{"properties":{"path":{"type":"string"}}}'),
        "Old": ("Gone soon.", "{}"),
    }
    after = {
        "Grep": ("Search.", '{"properties":{"pattern":{"type":"integer"},"glob":{"type":"string"}},"required":[]}'),
        "Read": ("Show a file.", '{"properties":{"path":{"type":"string"}}}'),
        "New": ("Brand new.", "{}"),
    }
    changes = {c.tool: c for c in catalog_changes(before, after)}
    assert set(changes) == {"Grep", "Old", "New"}
    grep = changes["Grep"]
    assert (grep.description_before, grep.description_after) == ("Search file contents.", "Search.")
    assert grep.parameters_added == ["glob"] and grep.parameters_changed == ["pattern", "(required)"]
    assert changes["Old"].change == "removed" and changes["New"].change == "added"


def test_the_largest_change_leads_the_gate_report_beside_the_edit_of_its_tool():
    edits = [
        ToolChange(
            tool="Grep", change="changed", description_before="Search file contents.", description_after="Search."
        )
    ]
    changes = [change("Grep", "WebSearch", 0, 7), change("Read", None, 3, 2), change("Grep", "Bash", 2, 1, "m/b")]
    result = check_gate(
        "r2", {"m/a": FIGURES}, "r1", {"m/a": FIGURES}, confusion_changes=changes, catalog_changes=edits
    )
    text = gate_markdown(result, {"m/a": FIGURES}, {"m/a": FIGURES})
    lead = "- `m/a`: **Grep → WebSearch: 0 → 7 tasks**; Grep's description changed: “Search file contents.” → “Search.”"
    assert lead in text and text.index(lead) < text.index("| model | status |")
    # Grep's edit is shown once; later lines point back to it. Read did not change: the line says so.
    assert "**Grep → Bash: 2 → 1 tasks**; Grep changed (above)" in text
    assert (
        "**Read → no call: 3 → 2 tasks**; no description or parameter of Read changed (edits of Grep may have moved it)"
        in text
    )
    assert result.to_json()["confusion_changes"][0] == {
        "model": "m/a",
        "expected": "Grep",
        "chosen": "WebSearch",
        "baseline": 0,
        "now": 7,
    }


def test_with_no_catalog_edit_the_report_says_the_model_or_the_tasks_moved():
    text = confusion_markdown([change(None, "Bash", 1, 4)], [])
    assert "**no call → Bash: 1 → 4 tasks**; the catalog did not change (the model or the tasks moved)" in text
    assert confusion_markdown([], []) == ""


def test_terminal_lines_are_plain_and_bounded():
    class Gate:
        confusion_changes = [change("A", "B", 0, n).model_dump() for n in range(9, 0, -1)]
        catalog_changes = []

    lines = confusion_lines(Gate(), limit=3, unit="episodes")
    assert lines[0] == "m/a: A → B: 0 → 9 episodes; the catalog did not change (the model or the tasks moved)"
    assert len(lines) == 4 and lines[-1] == "and 6 smaller confusion changes (gate.md)"
    assert all("**" not in line for line in lines)


def test_any_call_tasks_are_said_to_be_counted_apart():
    figures = {**FIGURES, "any_call": {"episodes": 12, "no_call": 3}}
    result = check_gate("r2", {"m/a": figures}, "r1", {"m/a": FIGURES})
    text = gate_markdown(result, {"m/a": figures}, {"m/a": FIGURES})
    assert (
        "`m/a`: 12 episodes of any-call tasks (any call is right) are counted apart from the tool confusion; 3 of them made no call."
        in text
    )
