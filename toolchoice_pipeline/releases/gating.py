"""Gating a release that is in the warehouse against a baseline document: pairing, flipped tasks, confusion and
catalog changes read from both releases' committed tables, then :func:`~.gate.check_gate`.

The settings come from the caller, never from ``toolchoice.yaml``: publishing passes the release's pinned run
configuration's ``gate.noise``; a re-gate of a stored release passes the ``noise`` its gate recorded.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

import pyarrow as pa

from toolchoice_pipeline.releases.confusion import (
    CONFUSION_COLUMNS,
    ToolChange,
    catalog_changes,
    confusion_changes_between,
)
from toolchoice_pipeline.releases.document import ReleaseDocument
from toolchoice_pipeline.releases.gate import GateResult, NoiseMode, check_gate, gate_junit_xml, task_flips
from toolchoice_pipeline.releases.gate_scope import exempt
from toolchoice_pipeline.releases.pairing import PAIRED_COLUMNS, paired_tasks
from toolchoice_pipeline.releases.warehouse import Warehouse
from toolchoice_pipeline.scoring.summary import ModelScores
from toolchoice_pipeline.util.atomic import write_file_atomically
from toolchoice_pipeline.util.errors import InputError, Problem

# The task_scores columns the gate reads of a release and its baseline: pairing, flips and confusion changes.
GATE_COLUMNS = list(dict.fromkeys(PAIRED_COLUMNS + CONFUSION_COLUMNS))


def stored_noise(document: ReleaseDocument) -> NoiseMode:
    """The noise mode a stored release was gated with (pinned from its run configuration when it was published;
    ``report`` for a release without a gate)."""
    return "require" if document.gate is not None and document.gate.noise == "require" else "report"


def gate_against(
    data_dir: Path,
    release_id: str,
    models: Mapping[str, ModelScores],
    suite: str,
    baseline: ReleaseDocument | None,
    *,
    noise: NoiseMode,
    ungated: Collection[str] = (),
    baseline_file: str = "<baseline>",
) -> GateResult:
    """Gate ``release_id`` (its per-model ``models`` of ``suite``) against the ``baseline`` document (None: no
    baseline yet, every model passes as new), with ``noise`` as pinned by the caller; ``ungated`` models are
    reported without gating (:func:`.gate_scope.exempt`). Raises :class:`InputError` naming ``baseline_file`` for
    a baseline of another suite."""
    if baseline is None:
        return exempt(check_gate(release_id, models, noise=noise), ungated)
    baseline_id = baseline.release_id
    if baseline.suite != suite:
        raise InputError(
            Problem(
                file=baseline_file,
                field="suite",
                message=f"baseline '{baseline_id}' is of suite '{baseline.suite}', "
                f"release '{release_id}' of suite '{suite}'",
            )
        )
    warehouse = Warehouse(data_dir)
    flips = {}
    paired = confusion = None
    catalog: list[ToolChange] = []
    notes = []
    if warehouse.commit(baseline_id) is not None and warehouse.commit(release_id) is not None:
        now_table, baseline_table = (_gate_columns(warehouse, release_id), _gate_columns(warehouse, baseline_id))
        flips = task_flips(_first_samples(now_table), _first_samples(baseline_table))
        paired = paired_tasks(now_table, baseline_table)
        confusion = confusion_changes_between(now_table, baseline_table)
        if confusion is None:
            notes.append("the release or the baseline predates tool-confusion columns: no confusion changes listed")
        catalog = catalog_changes(_suite_tools(warehouse, baseline_id), _suite_tools(warehouse, release_id))
    else:
        notes.append(
            "task scores of the release or the baseline are not in the warehouse: no flipped tasks listed, no intervals"
        )
    result = check_gate(
        release_id,
        models,
        baseline_id,
        baseline.models,
        flips,
        paired=paired,
        noise=noise,
        confusion_changes=confusion,
        catalog_changes=catalog,
    )
    result = exempt(result, ungated)
    result.notes.extend(notes)
    return result


def _gate_columns(warehouse: Warehouse, release_id: str) -> pa.Table:
    """A release's ``task_scores`` columns the gate pairs on and counts confusion changes from, read once. A release
    written before ``expected_tool`` gets the paired columns only (:func:`confusion_changes_between` then lists
    none), and one written before repeats a ``sample`` of 0."""
    try:
        return warehouse.read_table("task_scores", release_id, GATE_COLUMNS)
    except (KeyError, pa.ArrowInvalid):
        pass
    try:
        return warehouse.read_table("task_scores", release_id, PAIRED_COLUMNS)
    except (KeyError, pa.ArrowInvalid):
        table = warehouse.read_table("task_scores", release_id, [c for c in PAIRED_COLUMNS if c != "sample"])
        return table.append_column("sample", pa.array([0] * table.num_rows, pa.int32()))


def _suite_tools(warehouse: Warehouse, release_id: str) -> dict[str, tuple[str, str | None]]:
    """``{tool: (description, parameters_json)}`` of the suite catalog a release ran with (its ``tool_catalog``
    rows without a task)."""
    table = warehouse.read_table("tool_catalog", release_id, ["task_id", "tool_name", "description", "parameters_json"])
    return {
        row["tool_name"]: (row["description"], row["parameters_json"])
        for row in table.to_pylist()
        if row["task_id"] is None
    }


def _first_samples(table: pa.Table) -> pa.Table:
    """Sample 0 of every task: the flipped tasks are listed between first samples."""
    import pyarrow.compute as pc

    return table.filter(pc.equal(pc.fill_null(table.column("sample"), 0), 0))


def write_junit(path: Path, gate: GateResult, suite: str | None = None) -> None:
    """Write the gate's JUnit XML to ``path`` (atomically)."""
    write_file_atomically(Path(path), gate_junit_xml(gate, suite))
