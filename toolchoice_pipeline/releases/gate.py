"""The regression gate (DESIGN §2, §3): each model against the baseline, with the tasks that flipped.

Rules, per model:

- **fail** when ``right_tool_pct`` or ``right_args_pct`` is more than ``max_drop_points`` (2.0) points below the
  baseline's (the drop is taken between the stored 2-decimal shares and rounded to 2 decimals, so a re-check
  from ``scores.json`` gives the same verdict);
- **fail as "not evaluated"** when more than ``max_error_pct`` (5.0%) of its tasks had an infrastructure error:
  its shares would rest on too few tasks to pass;
- a model new in this release passes with a note; a model in the baseline but missing now is reported;
- with no baseline at all (the first release of a suite) every model passes as new.

The gate also lists per model and metric the tasks that flipped right→wrong and wrong→right against the
baseline (tasks scored in both releases), so a failure can be read in a minute. Output: the ``gate`` object of
``scores.json`` (:meth:`GateResult.to_json`), a Markdown summary and JUnit XML.

Noise (docs/scoring.md): given the paired tasks (:mod:`.pairing`), every compared model and metric gets a
:class:`Comparison` with the 95% interval of its drop (:func:`.noise.drop_interval`: within-task, from the
samples' disagreement, with two or more samples per task; else the paired bootstrap) and whether the drop is
beyond noise (the interval excludes 0). Releases with different task sets or repeats are compared on what they
share only (the shares of that shared part replace the stored ones, and a note says so). ``noise="report"``
(default): the verdict stays the 2-point rule. ``noise="require"``: a drop of more than 2 points that is
within noise passes with a warning naming the interval. ``advice`` per model: the 2-point rule's false-fail
rate on an unchanged model at the flip rate seen in this release's samples (else the baseline's), and the k
that brings it under 5%.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from toolchoice_pipeline.releases.confusion import ConfusionChange, ToolChange, confusion_markdown
from toolchoice_pipeline.releases.noise import (
    FALSE_FAIL_TARGET,
    drop_interval,
    false_fail_rate,
    repeats_for_false_fails,
)
from toolchoice_pipeline.releases.pairing import Paired
from toolchoice_pipeline.util.duckdb_memory import memory_connection

if TYPE_CHECKING:  # pyarrow only for the annotation: `toolchoice gate` imports it only to list flipped tasks
    import pyarrow as pa

MAX_DROP_POINTS = 2.0
MAX_ERROR_PCT = 5.0
GATED_METRICS = ("right_tool_pct", "right_args_pct")
FLIP_METRICS = ("right_tool", "right_args")
MARKDOWN_FLIPS_SHOWN = 25

ModelStatus = Literal["passed", "failed", "not_evaluated", "new", "missing", "not_gated"]  # not_gated: .gate_scope
NoiseMode = Literal["report", "require"]


class GateFailure(BaseModel):
    """One reason a model failed. For a drop: ``baseline``/``now``/``drop`` in points; for "not evaluated":
    ``metric`` is ``error_pct`` and ``now`` the model's infrastructure-error share in points."""

    model: str
    metric: str
    baseline: float | None = None
    now: float | None = None
    drop: float | None = None
    reason: str


class Comparison(BaseModel):
    """One model and metric against the baseline (points): ``drop`` = baseline − now; ``ci95`` the 95% paired
    interval of the drop and ``beyond_noise`` whether it excludes 0 (both None without paired task scores);
    ``ci_method`` how the interval was made: ``within_task`` or ``task_bootstrap`` (:func:`.noise.drop_interval`)."""

    model: str
    metric: str
    baseline: float
    now: float
    drop: float
    ci95: list[float] | None = None
    beyond_noise: bool | None = None
    ci_method: str | None = None


class TaskFlips(BaseModel):
    """Task ids (sorted) whose outcome changed against the baseline."""

    right_to_wrong: list[str] = Field(default_factory=list)
    wrong_to_right: list[str] = Field(default_factory=list)


Flips = dict[str, dict[str, TaskFlips]]  # model -> metric (right_tool / right_args) -> flips


class ModelGate(BaseModel):
    """The gate's verdict on one model."""

    model: str
    status: ModelStatus
    failures: list[GateFailure] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    flips: dict[str, TaskFlips] = Field(default_factory=dict)
    comparisons: list[Comparison] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    advice: str | None = None


class GateResult(BaseModel):
    """The gate's verdict on a release: passed when no model failed."""

    release_id: str
    baseline_release_id: str | None
    passed: bool
    max_drop_points: float = MAX_DROP_POINTS
    max_error_pct: float = MAX_ERROR_PCT
    models: dict[str, ModelGate] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    noise: NoiseMode = "report"
    confusion_changes: list[ConfusionChange] = Field(default_factory=list)
    catalog_changes: list[ToolChange] = Field(default_factory=list)

    @property
    def failures(self) -> list[GateFailure]:
        return [failure for gate in self.models.values() for failure in gate.failures]

    @property
    def comparisons(self) -> list[Comparison]:
        return [comparison for gate in self.models.values() for comparison in gate.comparisons]

    @property
    def warnings(self) -> list[str]:
        return [f"{gate.model}: {warning}" for gate in self.models.values() for warning in gate.warnings]

    @property
    def advice(self) -> list[str]:
        return [f"{gate.model}: {gate.advice}" for gate in self.models.values() if gate.advice]

    def models_with(self, status: ModelStatus) -> list[str]:
        return [name for name, gate in self.models.items() if gate.status == status]

    def to_json(self) -> dict[str, Any]:
        """The ``gate`` object of ``scores.json`` (DESIGN §3 plus ``flips`` and the model lists)."""
        return {
            "passed": self.passed,
            "max_drop_points": self.max_drop_points,
            "max_error_pct": self.max_error_pct,
            "baseline_release_id": self.baseline_release_id,
            "failures": [f.model_dump() for f in self.failures],
            "not_evaluated": self.models_with("not_evaluated"),
            "new_models": self.models_with("new"),
            "missing_models": self.models_with("missing"),
            "not_gated": self.models_with("not_gated"),
            "notes": self.notes + [f"{gate.model}: {note}" for gate in self.models.values() for note in gate.notes],
            "flips": {
                name: {metric: flips.model_dump() for metric, flips in gate.flips.items()}
                for name, gate in self.models.items()
                if gate.flips
            },
            "noise": self.noise,
            "comparisons": [c.model_dump() for c in self.comparisons],
            "warnings": self.warnings,
            "advice": self.advice,
            "confusion_changes": [c.model_dump() for c in self.confusion_changes],
            "catalog_changes": [c.model_dump() for c in self.catalog_changes],
        }


def _figures(scores: Any) -> dict[str, Any]:
    return scores.model_dump() if hasattr(scores, "model_dump") else dict(scores)


def _advice(now: Mapping[str, Any], before: Mapping[str, Any] | None, max_drop_points: float) -> str:
    """The false-fail advice line of one model (module docstring)."""
    n_tasks, k = int(now.get("n_tasks") or 0), int(now.get("repeats") or 1)
    flip, source = now.get("flip_rate"), "observed in this release's samples"
    if flip is None and before is not None and before.get("flip_rate") is not None:
        flip, source = before.get("flip_rate"), "observed in the baseline's samples"
    if flip is None:
        return (
            "flip rate not observable with one sample per task: run with repeats of 2 or more to learn how "
            f"often the {max_drop_points}-point rule fails an unchanged model"
        )
    rate = false_fail_rate(n_tasks, k, flip, max_drop_points)
    needed = repeats_for_false_fails(n_tasks, flip, max_drop_points)
    line = (
        f"at the flip rate {flip:.4f} {source}, the {max_drop_points}-point rule fails an unchanged model "
        f"{100 * rate:.1f}% of the time per metric ({n_tasks} tasks, repeats {k}); "
    )
    if rate < FALSE_FAIL_TARGET:
        return line + f"under {100 * FALSE_FAIL_TARGET:.0f}% already"
    if needed is None:
        return line + f"no repeats up to 100 bring it under {100 * FALSE_FAIL_TARGET:.0f}%: add tasks"
    return line + f"repeats {needed} bring it under {100 * FALSE_FAIL_TARGET:.0f}%"


def _compare(
    gate: ModelGate,
    metric: str,
    old: float,
    new: float,
    paired: Paired | None,
    max_drop_points: float,
    noise: NoiseMode,
) -> None:
    """Add the comparison of one metric to ``gate``, with its failure or warning."""
    model = gate.model
    interval = beyond = method = None
    if paired is not None and paired.tasks:
        flip_metric = metric.removesuffix("_pct")
        if paired.shared_note is not None:
            old, new = paired.share_pct("baseline", flip_metric), paired.share_pct("now", flip_metric)
        low, high, method = drop_interval(
            paired.baseline["scored"], paired.baseline[flip_metric], paired.now["scored"], paired.now[flip_metric]
        )
        interval, beyond = [low, high], not (low <= 0.0 <= high)
    drop = round(old - new, 2)
    gate.comparisons.append(
        Comparison(
            model=model,
            metric=metric,
            baseline=old,
            now=new,
            drop=drop,
            ci95=interval,
            beyond_noise=beyond,
            ci_method=method,
        )
    )
    if drop <= max_drop_points:
        return
    shown = (
        ""
        if interval is None
        else f", {'beyond' if beyond else 'within'} noise (95% interval of the drop [{interval[0]}, {interval[1]}])"
    )
    if noise == "require" and beyond is False:
        gate.warnings.append(
            f"{metric} dropped {drop} points ({old} → {new}; limit {max_drop_points}){shown}: "
            "passes because gate.noise is require"
        )
        return
    gate.failures.append(
        GateFailure(
            model=model,
            metric=metric,
            baseline=old,
            now=new,
            drop=drop,
            reason=f"{metric} dropped {drop} points ({old} → {new}; limit {max_drop_points}){shown}",
        )
    )


def check_gate(
    release_id: str,
    models: Mapping[str, Any],
    baseline_release_id: str | None = None,
    baseline_models: Mapping[str, Any] | None = None,
    flips: Flips | None = None,
    *,
    max_drop_points: float = MAX_DROP_POINTS,
    max_error_pct: float = MAX_ERROR_PCT,
    paired: Mapping[str, Paired] | None = None,
    noise: NoiseMode = "report",
    advise: bool = True,
    confusion_changes: list[ConfusionChange] | None = None,
    catalog_changes: list[ToolChange] | None = None,
) -> GateResult:
    """Gate a release's per-model scores against the baseline's (both ``scores.json`` ``models`` mappings or
    :class:`~toolchoice_pipeline.scoring.ModelScores`); ``flips`` from :func:`task_flips`; ``paired`` from
    :func:`.pairing.paired_tasks` (None: no intervals, the 2-point rule alone); ``noise`` as in the module
    docstring; ``advise=False`` leaves the advice out (benchmarks); ``confusion_changes``/``catalog_changes``
    (:mod:`.confusion`) are carried into the result to explain it. Pure."""
    flips = flips or {}
    paired = paired or {}
    result_models: dict[str, ModelGate] = {}
    notes: list[str] = []
    if baseline_models is None:
        notes.append("no baseline yet: every model passes as new")
    baseline_models = baseline_models or {}
    for model in sorted(models):
        now = _figures(models[model])
        gate = ModelGate(model=model, status="passed", flips=flips.get(model, {}))
        n_samples, errors = int(now.get("n_samples") or now.get("n_tasks") or 0), int(now.get("errors") or 0)
        if n_samples and errors * 100.0 > max_error_pct * n_samples:
            error_pct = round(100.0 * errors / n_samples, 2)
            what = "tasks" if n_samples == int(now.get("n_tasks") or 0) else "samples"
            gate.status = "not_evaluated"
            gate.failures.append(
                GateFailure(
                    model=model,
                    metric="error_pct",
                    now=error_pct,
                    reason=f"not evaluated: {errors} of {n_samples} {what} ({error_pct}%) had infrastructure errors "
                    f"(limit {max_error_pct}%)",
                )
            )
        elif model not in baseline_models:
            gate.status = "new"
            gate.notes.append("new in this release: no baseline to compare with, passes")
        else:
            before = _figures(baseline_models[model])
            shared = paired.get(model)
            if shared is not None and shared.shared_note:
                gate.notes.append(shared.shared_note)
            for metric in GATED_METRICS:
                old, new = before.get(metric), now.get(metric)
                if old is None or new is None:
                    gate.notes.append(
                        f"{metric} not compared (no scored tasks in "
                        f"{'the baseline' if old is None else 'this release'})"
                    )
                    continue
                _compare(gate, metric, old, new, shared, max_drop_points, noise)
            if noise == "require" and shared is None:
                gate.notes.append("no paired task scores: the 2-point rule decides alone")
            if gate.failures:
                gate.status = "failed"
        if advise and gate.status != "not_evaluated":
            gate.advice = _advice(
                now, _figures(baseline_models[model]) if model in baseline_models else None, max_drop_points
            )
        result_models[model] = gate
    for model in sorted(set(baseline_models) - set(models)):
        result_models[model] = ModelGate(
            model=model, status="missing", notes=[f"in baseline {baseline_release_id} but not in this release"]
        )
    passed = not any(gate.failures for gate in result_models.values())
    return GateResult(
        release_id=release_id,
        baseline_release_id=baseline_release_id,
        passed=passed,
        max_drop_points=max_drop_points,
        max_error_pct=max_error_pct,
        models=result_models,
        notes=notes,
        noise=noise,
        confusion_changes=confusion_changes or [],
        catalog_changes=catalog_changes or [],
    )


def task_flips(now: pa.Table, baseline: pa.Table, threads: int | None = None) -> Flips:
    """Per model and metric, the tasks whose ``right_tool`` / ``right_args`` changed from ``baseline`` to ``now``.

    Both tables need ``model``, ``task_id``, ``right_tool``, ``right_args`` (``task_scores`` rows); tasks
    unscored (null) in either release are left out. The join runs in DuckDB, so it scales to millions of rows.
    """
    con = memory_connection(own=bool(threads))
    try:
        if threads:
            con.execute(f"SET threads = {int(threads)}")
        columns = ["model", "task_id", *FLIP_METRICS]
        con.register("now_scores", now.select(columns))
        con.register("baseline_scores", baseline.select(columns))
        changed = con.sql("""
            SELECT n.model, n.task_id,
                   b.right_tool AS right_tool_was, n.right_tool AS right_tool_now,
                   b.right_args AS right_args_was, n.right_args AS right_args_now
            FROM now_scores n JOIN baseline_scores b ON n.model = b.model AND n.task_id = b.task_id
            WHERE b.right_tool <> n.right_tool OR b.right_args <> n.right_args
            ORDER BY n.model, n.task_id""").fetchall()
    finally:
        con.close()
    flips: Flips = {}
    for model, task_id, tool_was, tool_now, args_was, args_now in changed:
        for metric, was, is_ in (("right_tool", tool_was, tool_now), ("right_args", args_was, args_now)):
            if was is None or is_ is None or was == is_:
                continue
            bucket = flips.setdefault(model, {}).setdefault(metric, TaskFlips())
            (bucket.right_to_wrong if was else bucket.wrong_to_right).append(task_id)
    return flips


# --- reports -------------------------------------------------------------------------------------------------


def _share(figures: Mapping[str, Any] | None, metric: str) -> str:
    value = (figures or {}).get(metric)
    return "–" if value is None else f"{value:.2f}"


def _shown(task_ids: list[str]) -> str:
    head = ", ".join(f"`{t}`" for t in task_ids[:MARKDOWN_FLIPS_SHOWN])
    more = len(task_ids) - MARKDOWN_FLIPS_SHOWN
    return head + (f" and {more} more" if more > 0 else "")


def comparisons_markdown(comparisons: list[Comparison]) -> str:
    """The comparisons (points) as a Markdown table: drop, 95% paired interval, beyond or within noise."""
    lines = [
        "| model | metric | baseline → now | drop | 95% interval of the drop | noise |",
        "|---|---|---|---|---|---|",
    ]
    for c in comparisons:
        interval = "–" if c.ci95 is None else f"[{c.ci95[0]:.2f}, {c.ci95[1]:.2f}]"
        word = "–" if c.beyond_noise is None else ("beyond noise" if c.beyond_noise else "within noise")
        lines.append(
            f"| `{c.model}` | {c.metric} | {c.baseline:.2f} → {c.now:.2f} | {c.drop:.2f} | {interval} | {word} |"
        )
    return "\n".join(lines)


def gate_markdown(
    result: GateResult,
    models: Mapping[str, Any],
    baseline_models: Mapping[str, Any] | None = None,
    suite: str | None = None,
) -> str:
    """A Markdown summary: verdict, a table of shares (baseline → now), the failures and the flipped tasks."""
    baseline_models = baseline_models or {}
    verdict = "PASSED" if result.passed else "FAILED"
    against = f"baseline `{result.baseline_release_id}`" if result.baseline_release_id else "no baseline"
    lines = [
        f"## Gate {verdict}: release `{result.release_id}` against {against}"
        + (f" (suite `{suite}`)" if suite else ""),
        "",
        f"A model fails when its right-tool or right-arguments share drops more than "
        f"{result.max_drop_points} points, or when more than {result.max_error_pct}% of its tasks had "
        f"infrastructure errors (not evaluated).",
        "",
    ]
    repeated = any(int(_figures(m).get("repeats") or 1) > 1 for m in models.values())
    explained = confusion_markdown(
        result.confusion_changes, result.catalog_changes, unit="episodes" if repeated else "tasks"
    )
    if explained:
        lines += [explained, ""]
    for name in result.models:
        any_call = _figures(models[name]).get("any_call") if name in models else None
        if any_call:
            lines += [
                f"`{name}`: {any_call['episodes']} episodes of any-call tasks (any call is right) are counted apart "
                f"from the tool confusion; {any_call['no_call']} of them made no call.",
                "",
            ]
    lines += [
        "| model | status | right tool % (baseline → now) | right args % (baseline → now) | errors |",
        "|---|---|---|---|---|",
    ]
    for name, gate in result.models.items():
        now = _figures(models[name]) if name in models else None
        before = _figures(baseline_models[name]) if name in baseline_models else None
        errors = f"{now.get('errors', 0)}/{now.get('n_samples') or now.get('n_tasks', 0)}" if now else "–"
        lines.append(
            f"| `{name}` | {gate.status.replace('_', ' ')} | "
            f"{_share(before, 'right_tool_pct')} → {_share(now, 'right_tool_pct')} | "
            f"{_share(before, 'right_args_pct')} → {_share(now, 'right_args_pct')} | {errors} |"
        )
    if result.comparisons:
        lines += [
            "",
            f"### Drops against noise (gate.noise: {result.noise})",
            "",
            comparisons_markdown(result.comparisons),
        ]
    if result.failures:
        lines += ["", "### Failures", ""]
        lines += [f"- `{failure.model}`: {failure.reason}" for failure in result.failures]
    if result.warnings:
        lines += ["", "### Warnings", ""] + [f"- {warning}" for warning in result.warnings]
    flaky = [(name, _figures(models[name]).get("flaky_tasks") or []) for name in result.models if name in models]
    if any(tasks for _, tasks in flaky):
        lines += ["", "### Flaky tasks (0 < right-tool rate < 1 over the samples)", ""]
        lines += [f"- `{name}` ({len(tasks)}): {_shown(tasks)}" for name, tasks in flaky if tasks]
    if result.advice:
        lines += ["", "### Advice", ""] + [f"- {line}" for line in result.advice]
    notes = result.notes + [f"`{gate.model}`: {note}" for gate in result.models.values() for note in gate.notes]
    if notes:
        lines += ["", "### Notes", ""] + [f"- {note}" for note in notes]
    flipped = [
        (gate.model, metric, flips)
        for gate in result.models.values()
        for metric, flips in gate.flips.items()
        if flips.right_to_wrong or flips.wrong_to_right
    ]
    if flipped:
        lines += ["", "### Flipped tasks", ""]
        for model, metric, flips in flipped:
            label = metric.replace("_", " ")
            if flips.right_to_wrong:
                lines.append(
                    f"- `{model}` {label}, right → wrong ({len(flips.right_to_wrong)}): {_shown(flips.right_to_wrong)}"
                )
            if flips.wrong_to_right:
                lines.append(
                    f"- `{model}` {label}, wrong → right ({len(flips.wrong_to_right)}): {_shown(flips.wrong_to_right)}"
                )
    return "\n".join(lines) + "\n"


def gate_junit_xml(result: GateResult, suite: str | None = None) -> str:
    """JUnit XML: one test case per model; a drop or "not evaluated" is a ``<failure>``, a model missing
    from this release is ``<skipped>``. CI systems (GitHub, GitLab, Jenkins) render it as a test report."""
    name = f"toolchoice gate {result.release_id}" + (
        f" vs {result.baseline_release_id}" if result.baseline_release_id else ""
    )
    cases = list(result.models.values())
    failed = sum(1 for gate in cases if gate.failures)
    skipped = sum(1 for gate in cases if gate.status == "missing")
    root = ET.Element("testsuites", name="toolchoice gate", tests=str(len(cases)), failures=str(failed))
    suite_element = ET.SubElement(
        root, "testsuite", name=name, tests=str(len(cases)), failures=str(failed), errors="0", skipped=str(skipped)
    )
    classname = f"toolchoice.gate.{suite}" if suite else "toolchoice.gate"
    for gate in cases:
        case = ET.SubElement(suite_element, "testcase", classname=classname, name=gate.model)
        if gate.failures:
            failure = ET.SubElement(
                case,
                "failure",
                type="not_evaluated" if gate.status == "not_evaluated" else "regression",
                message="; ".join(f.reason for f in gate.failures),
            )
            details = [f.reason for f in gate.failures]
            for metric, flips in gate.flips.items():
                if flips.right_to_wrong:
                    details.append(f"{metric} right→wrong: {', '.join(flips.right_to_wrong)}")
            failure.text = "\n".join(details)
        elif gate.status == "missing":
            ET.SubElement(case, "skipped", message="; ".join(gate.notes))
        if (gate.notes or gate.warnings) and gate.status != "missing":
            ET.SubElement(case, "system-out").text = "\n".join(gate.warnings + gate.notes)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
