"""One release as a single self-contained HTML page (``toolchoice report --html``, ``releases/<id>/report.html``
with ``toolchoice run --chart``): the gate's verdict and comparisons, the confusion changes each beside the
catalog edits of the tools involved, the scores per model with their 95% intervals, the trend, the confusion
heatmaps, the flipped tasks with the calls made in both releases, and the judge's calibration.

It opens from disk with no server and no network: the style is inline, the pictures are PNGs in ``data:`` URIs,
there is no script, and a Content-Security-Policy meta tag forbids loading anything else. Every string from the
data (task ids, tool descriptions, model replies, arguments) is escaped with :func:`html.escape`.

:func:`collect` reads (``scores.json`` of the release and its baseline, ``agent_calls`` and ``task_scores`` of
the flipped tasks from the warehouse, the trend); :func:`render_html` only formats, so it is tested on
documents built in memory. Standard library only (no template engine).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from string import Template
from typing import Any

from toolchoice_pipeline.releases.confusion import ConfusionChange, ToolChange, involved_changes, shortened
from toolchoice_pipeline.releases.document import ReleaseDocument
from toolchoice_pipeline.util.errors import InputError

REPORT_FILE = "report.html"  # releases/<id>/report.html, written by `toolchoice run --chart`
CHANGES_SHOWN = 40  # confusion changes listed (the rest counted; scores.json has them all)
FLIPS_SHOWN = 30  # flipped tasks per model with their calls
TEXT_SHOWN = 400  # characters of a reply, a description or arguments before "…"
CALL_COLUMNS = ["model", "task_id", "sample", "step", "calls_json", "content", "error", "episode_error"]
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

Key = tuple[str, str]  # (model, task_id)


@dataclass
class ReportData:
    """What the page shows: the release's and the baseline's ``scores.json``, PNGs (trend, a heatmap per
    model), and for the flipped tasks (sample 0) their ``agent_calls`` rows per release id and the expected
    first tool (``task_scores.expected_tool``)."""

    document: ReleaseDocument
    baseline: ReleaseDocument | None = None
    trend_png: bytes | None = None
    heatmaps: dict[str, bytes] = field(default_factory=dict)
    calls: dict[str, dict[Key, list[dict[str, Any]]]] = field(default_factory=dict)
    expected: dict[Key, str | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# --- reading ---------------------------------------------------------------------------------------------------


def flipped_tasks(metrics: Mapping[str, Any]) -> list[str]:
    """One model's flipped tasks (``gate.flips[model]``) in the order the page lists them: those that went right →
    wrong on any metric first (the regressions a failed gate is about), then wrong → right; by id within each."""
    worse = {t for flips in metrics.values() for t in flips.right_to_wrong}
    better = {t for flips in metrics.values() for t in flips.wrong_to_right} - worse
    return sorted(worse) + sorted(better)


def flipped_keys(document: ReleaseDocument, limit: int = FLIPS_SHOWN) -> list[Key]:
    """The ``(model, task)`` pairs the page lists: per model :func:`flipped_tasks`, at most ``limit``."""
    keys: list[Key] = []
    for model, metrics in (document.gate.flips if document.gate else {}).items():
        keys += [(model, task) for task in flipped_tasks(metrics)[:limit]]
    return keys


def _rows_of(table: Any, keys: set[Key]) -> dict[Key, list[dict[str, Any]]]:
    import pyarrow.compute as pc

    tasks = sorted({task for _, task in keys})
    table = table.filter(pc.is_in(table.column("task_id"), value_set=_strings(tasks)))
    rows: dict[Key, list[dict[str, Any]]] = {}
    for row in table.to_pylist():
        key = (row["model"], row["task_id"])
        if key in keys and not row.get("sample"):  # flips are between first samples
            rows.setdefault(key, []).append(row)
    for found in rows.values():
        found.sort(key=lambda row: row.get("step") or 0)
    return rows


def _strings(values: list[str]) -> Any:
    import pyarrow as pa

    return pa.array(values, pa.string())


def collect(data_dir: Path, release_id: str, *, pictures: bool = True, calls: bool = True) -> ReportData:
    """Read what the page of ``release_id`` shows (``pictures``: draw the trend and the heatmaps; ``calls``: read
    the flipped tasks' calls). Raises :class:`InputError` for an unknown release; a baseline or warehouse rows
    that cannot be read leave their part out with a note."""
    from toolchoice_pipeline.releases.store import ReleaseStore

    store = ReleaseStore(data_dir)
    document = store.read_scores(release_id)
    data = ReportData(document=document)
    baseline_id = baseline_of(document)
    if baseline_id:
        try:
            data.baseline = store.read_scores(baseline_id)
        except InputError as exc:
            data.notes.append(f"the baseline {baseline_id} cannot be read: {exc}")
    if pictures:
        data.trend_png = trend_png(data_dir, document, store.baseline(document.suite))
        data.heatmaps = release_heatmaps(data)
    if calls:
        _read_calls(data_dir, data)
    return data


def baseline_of(document: ReleaseDocument) -> str | None:
    """The release the document was gated against (None: no baseline)."""
    return (document.gate.baseline_release_id if document.gate else None) or document.baseline_release_id


def release_heatmaps(data: ReportData) -> dict[str, bytes]:
    """PNG bytes per model: the release's confusion beside the change against its baseline."""
    from toolchoice_pipeline.releases.confusion_chart import heatmap_pngs

    document, baseline = data.document, data.baseline
    return heatmap_pngs(
        document.models,
        baseline.models if baseline else None,
        document.release_id,
        baseline.release_id if baseline else "baseline",
    )


def trend_png(data_dir: Path, document: ReleaseDocument, baseline_id: str | None) -> bytes | None:
    """The suite's trend chart up to this release (its last :data:`TREND_WINDOW` releases) as PNG bytes."""
    from toolchoice_pipeline.releases.confusion_chart import png_bytes
    from toolchoice_pipeline.releases.report import TREND_WINDOW, load_trend, trend_figure

    points = load_trend(data_dir, document.suite, last=TREND_WINDOW)
    ids = list(dict.fromkeys(p.release_id for p in points))
    if document.release_id in ids:  # an older release's page shows the trend up to it
        points = [p for p in points if ids.index(p.release_id) <= ids.index(document.release_id)]
    if not points:
        return None
    return png_bytes(trend_figure(points, f"{document.suite}: tool choice over releases", baseline_id))


def _read_calls(data_dir: Path, data: ReportData) -> None:
    from toolchoice_pipeline.releases.warehouse import Warehouse

    keys = set(flipped_keys(data.document))
    if not keys:
        return
    release_id, baseline_id = data.document.release_id, baseline_of(data.document)
    warehouse = Warehouse(data_dir)
    for rid in (release_id, baseline_id):
        if rid is None:
            continue
        if warehouse.commit(rid) is None:
            data.notes.append(f"release {rid} is not in the warehouse: its calls are not shown")
            continue
        try:
            data.calls[rid] = _rows_of(warehouse.read_table("agent_calls", rid, CALL_COLUMNS), keys)
        except (KeyError, ValueError):  # an agent_calls file written before one of CALL_COLUMNS existed
            data.notes.append(f"release {rid}'s agent_calls lack columns the page shows: its calls are not shown")
    if warehouse.commit(release_id) is not None:
        try:
            scores = warehouse.read_table("task_scores", release_id, ["model", "task_id", "sample", "expected_tool"])
        except (KeyError, ValueError):  # written before expected_tool existed
            return
        for key, rows in _rows_of(scores, keys).items():
            data.expected[key] = rows[0]["expected_tool"]


def build_html_report(data_dir: Path, release_id: str, *, pictures: bool = True) -> str:
    """The page of ``release_id`` (:func:`collect` then :func:`render_html`)."""
    return render_html(collect(data_dir, release_id, pictures=pictures))


# --- formatting ------------------------------------------------------------------------------------------------


def _e(value: Any) -> str:
    return escape("–" if value is None else str(value), quote=True)


def _cut(text: str | None, limit: int = TEXT_SHOWN) -> str:
    return shortened(text, limit)


def _tool(name: str | None) -> str:
    return "<em>no call</em>" if name is None else f"<code>{_e(name)}</code>"


def _pct(value: float | None, interval: list[float] | None = None) -> str:
    if value is None:
        return "–"
    shown = f"{value:.2f}"
    if interval:
        shown += f' <span class="ci">[{interval[0]:.2f}, {interval[1]:.2f}]</span>'
    return shown


def _table(header: Iterable[str], rows: Iterable[Iterable[str]], css: str = "", row_css: str = "") -> str:
    """An HTML table; ``header`` cells are escaped here, ``rows`` cells must already be HTML."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    tr = f'<tr class="{row_css}">' if row_css else "<tr>"
    body = "".join(tr + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _image(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{data}">'


def _edit_html(edit: ToolChange) -> str:
    parts = [f'<div class="edit"><b>{_e(edit.tool)}</b> {_e(edit.change)}']
    if edit.change != "changed" or edit.description_changed:
        if edit.description_before is not None:
            parts.append(f'<div class="before">before: {_e(_cut(edit.description_before))}</div>')
        if edit.description_after is not None:
            parts.append(f'<div class="after">after: {_e(_cut(edit.description_after))}</div>')
    for label, names in (
        ("parameters added", edit.parameters_added),
        ("parameters removed", edit.parameters_removed),
        ("parameters changed", edit.parameters_changed),
    ):
        if names:
            parts.append(f"<div>{label}: {', '.join(f'<code>{_e(n)}</code>' for n in names)}</div>")
    return "".join(parts) + "</div>"


def _change_row(change: ConfusionChange, catalog: Mapping[str, ToolChange], described: set[str]) -> list[str]:
    """A row of the changes table; a tool whose edit an earlier row showed is only named (``described``)."""
    edits = involved_changes(change, catalog)
    if edits:
        explained = "".join(
            f'<div class="edit"><b>{_e(edit.tool)}</b> {_e(edit.change)} <span class="muted">(above)</span></div>'
            if edit.tool in described
            else _edit_html(edit)
            for edit in edits
        )
        described.update(edit.tool for edit in edits)
    else:
        tools = " or ".join(_e(t) for t in dict.fromkeys((change.expected, change.chosen)) if t is not None)
        explained = (
            f'<span class="muted">no description or parameter of {tools or "no call"} changed'
            + (" (the model or the tasks moved)" if not catalog else "")
            + "</span>"
        )
    delta = change.now - change.baseline
    return [
        f"<code>{_e(change.model)}</code>",
        f"{_tool(change.expected)} → {_tool(change.chosen)}",
        f'{change.baseline} → <b>{change.now}</b> <span class="{"up" if delta > 0 else "down"}">({delta:+d})</span>',
        explained,
    ]


def _changes_section(document: ReleaseDocument) -> str:
    gate = document.gate
    if gate is None or gate.baseline_release_id is None:
        return ""
    changes, catalog = gate.confusion_changes, gate.catalog_changes
    by_tool = {edit.tool: edit for edit in catalog}
    out = ["<section><h2>What moved: tool confusion against the baseline</h2>"]
    if not changes:
        out.append("<p>No (expected, chosen) pair changed its count on the episodes both releases scored.</p>")
    else:
        out.append(
            "<p>Episodes scored in both releases, by the first tool expected and the first tool chosen; largest "
            "change first, each beside the catalog edits of the two tools.</p>"
        )
        described: set[str] = set()
        rows = [_change_row(change, by_tool, described) for change in changes[:CHANGES_SHOWN]]
        out.append(_table(["model", "expected → chosen", "baseline → now", "catalog edits of these tools"], rows))
        if len(changes) > CHANGES_SHOWN:
            out.append(
                f"<p>and {len(changes) - CHANGES_SHOWN} smaller changes (scores.json gate.confusion_changes)</p>"
            )
    involved = {t for change in changes for t in (change.expected, change.chosen)}
    others = [edit for edit in catalog if edit.tool not in involved]
    if others:
        out.append("<h3>Other catalog edits</h3>" + "".join(_edit_html(edit) for edit in others))
    elif not catalog:
        out.append("<p>The catalog did not change.</p>")
    return "".join(out) + "</section>"


def _verdict(document: ReleaseDocument) -> str:
    gate = document.gate
    if gate is None:
        return '<p class="verdict none">No gate recorded.</p>'
    against = f"baseline {_e(gate.baseline_release_id)}" if gate.baseline_release_id else "no baseline"
    word, css = ("PASSED", "pass") if gate.passed else ("FAILED", "fail")
    out = [f'<p class="verdict {css}">Gate {word} against {against}</p>']
    if gate.failures:
        out.append("<ul>" + "".join(f"<li>{_e(f.model)}: {_e(f.reason)}</li>" for f in gate.failures) + "</ul>")
    return "".join(out)


def _scores_section(document: ReleaseDocument, baseline: ReleaseDocument | None) -> str:
    before = baseline.models if baseline else {}
    rows = []
    for model, m in document.models.items():
        b = before.get(model)
        rows.append(
            [
                f"<code>{_e(model)}</code>",
                _e(m.n_tasks),
                _e(m.errors),
                _pct(m.right_tool_pct, m.right_tool_ci95_pct),
                _pct(b.right_tool_pct) if b else "–",
                _pct(m.right_args_pct, m.right_args_ci95_pct),
                _pct(b.right_args_pct) if b else "–",
                _e(None if m.tsq_mean is None else f"{m.tsq_mean:.2f}"),
                _e(None if m.pass_k_pct is None or m.repeats <= 1 else f"{m.pass_k_pct:.2f}"),
                _e("unpriced" if m.agent_cost_unpriced else f"{m.agent_cost_usd:.4f}"),
            ]
        )
    header = [
        "model",
        "tasks",
        "errors",
        "right tool % [95% interval]",
        "baseline",
        "right args % [95% interval]",
        "baseline",
        "TSQ",
        "pass^k %",
        "agent USD",
    ]
    return "<section><h2>Scores per model</h2>" + _table(header, rows, "num") + "</section>"


def _gate_section(document: ReleaseDocument) -> str:
    gate = document.gate
    if gate is None:
        return ""
    out = [f"<section><h2>The gate's comparisons (noise: {_e(gate.noise)})</h2>"]
    out.append(
        f"<p>A model fails when its right-tool or right-arguments share drops more than "
        f"{_e(gate.max_drop_points)} points, or when more than {_e(gate.max_error_pct)}% of its tasks had "
        f"infrastructure errors.</p>"
    )
    if gate.comparisons:
        rows = [
            [
                f"<code>{_e(c.model)}</code>",
                _e(c.metric),
                f"{c.baseline:.2f} → {c.now:.2f}",
                f"{c.drop:.2f}",
                "–" if c.ci95 is None else f"[{c.ci95[0]:.2f}, {c.ci95[1]:.2f}]",
                "–" if c.beyond_noise is None else ("beyond noise" if c.beyond_noise else "within noise"),
                '<span class="fail">over the limit</span>' if c.drop > gate.max_drop_points else "within the limit",
            ]
            for c in gate.comparisons
        ]
        out.append(
            _table(["model", "metric", "baseline → now", "drop", "95% interval of the drop", "noise", "rule"], rows)
        )
    for title, items in (("Warnings", gate.warnings), ("Advice", gate.advice), ("Notes", gate.notes)):
        if items:
            out.append(f"<h3>{title}</h3><ul>" + "".join(f"<li>{_e(item)}</li>" for item in items) + "</ul>")
    return "".join(out) + "</section>"


def _calls_html(rows: list[dict[str, Any]] | None) -> str:
    if rows is None:
        return '<span class="muted">not recorded</span>'
    steps = []
    for row in rows:
        parts = []
        try:
            calls = json.loads(row.get("calls_json") or "[]")
        except ValueError:
            calls = []
        for call in calls if isinstance(calls, list) else []:
            if not isinstance(call, dict):
                continue
            arguments = call.get("arguments")
            shown = call.get("raw_arguments") if arguments is None else json.dumps(arguments, ensure_ascii=False)
            flags = call.get("flags") or []
            parts.append(
                f'<code>{_e(call.get("name"))}</code>(<span class="args">{_e(_cut(shown, 200))}</span>)'
                + (f' <span class="flag">{_e(", ".join(map(str, flags)))}</span>' if flags else "")
            )
        if row.get("content"):
            parts.append(f'<span class="reply">“{_e(_cut(row["content"], 300))}”</span>')
        for error in dict.fromkeys(e for e in (row.get("error"), row.get("episode_error")) if e):
            parts.append(f'<span class="fail">error: {_e(_cut(error, 200))}</span>')
        steps.append(f"<li>step {_e(row.get('step'))}: {' '.join(parts) or '<em>no reply</em>'}</li>")
    return "<ol>" + "".join(steps) + "</ol>" if steps else '<span class="muted">no calls</span>'


def _flips_section(data: ReportData) -> str:
    document = data.document
    gate = document.gate
    if gate is None or not gate.flips:
        return ""
    baseline_id = gate.baseline_release_id
    out = ["<section><h2>Flipped tasks with the calls made</h2>"]
    out.append(
        f"<p>First sample of each task, in the baseline {_e(baseline_id)} and in {_e(document.release_id)}; "
        f"at most {FLIPS_SHOWN} tasks per model.</p>"
    )
    shown = set(flipped_keys(document))
    for model, metrics in gate.flips.items():
        labels: dict[str, list[str]] = {}
        for metric, flips in metrics.items():
            for task in flips.right_to_wrong:
                labels.setdefault(task, []).append(
                    f'<span class="fail">{_e(metric.replace("_", " "))}: right → wrong</span>'
                )
            for task in flips.wrong_to_right:
                labels.setdefault(task, []).append(
                    f'<span class="pass">{_e(metric.replace("_", " "))}: wrong → right</span>'
                )
        rows = [
            [
                f"<code>{_e(task)}</code>",
                "<br>".join(labels[task]),
                _tool(data.expected[(model, task)]) if (model, task) in data.expected else "–",
                _calls_html(data.calls.get(baseline_id or "", {}).get((model, task))),
                _calls_html(data.calls.get(document.release_id, {}).get((model, task))),
            ]
            for task in flipped_tasks(metrics)
            if (model, task) in shown
        ]
        out.append(f"<h3><code>{_e(model)}</code>: {len(labels)} tasks flipped</h3>")
        out.append(
            _table(
                ["task", "flipped", "expected first", f"calls in {baseline_id}", f"calls in {document.release_id}"],
                rows,
                row_css="flip",
            )
        )
        if len(labels) > len(rows):
            out.append(f"<p>and {len(labels) - len(rows)} more (scores.json gate.flips)</p>")
    return "".join(out) + "</section>"


def _calibration_section(document: ReleaseDocument) -> str:
    judge = document.judge
    out = ["<section><h2>Judge calibration</h2>"]
    if judge is None:
        out.append("<p>The judge did not run (no TSQ in this release).</p>")
    elif judge.calibration is None:
        out.append(f"<p>Judge <code>{_e(judge.model)}</code>; no calibration recorded.</p>")
    else:
        c = judge.calibration
        css = "pass" if c.passed else "fail"
        out.append(
            f'<p class="{css}">{"passed" if c.passed else "FAILED"} (mode {_e(c.mode)}'
            + ("; blocks promotion" if c.blocks_promotion else "")
            + f")</p><p>{_e(c.message)}</p>"
        )
        items = [*c.reasons, *c.warnings]
        if items:
            out.append("<ul>" + "".join(f"<li>{_e(item)}</li>" for item in items) + "</ul>")
    return "".join(out) + "</section>"


def _pictures_section(data: ReportData) -> str:
    out = []
    if data.trend_png:
        out.append("<section><h2>Trend</h2>" + _image(data.trend_png, "right tool and right arguments over releases"))
        out.append("</section>")
    if data.heatmaps:
        out.append(
            "<section><h2>Tool confusion per model</h2><p>Rows: the tool expected first; columns: the tool chosen "
            "first; every scored episode of each release. Right panel: the change against the baseline (red: more "
            "episodes now).</p>"
        )
        for model, png in data.heatmaps.items():
            out.append(f"<h3><code>{_e(model)}</code></h3>" + _image(png, f"tool confusion of {model}"))
        out.append("</section>")
    return "".join(out)


STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1280px;
padding:1rem 2rem;color:#1a1a1a;background:#fff}
h1{font-size:1.5rem;margin:.5rem 0}h2{font-size:1.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;
margin-top:2rem}h3{font-size:1rem}
table{border-collapse:collapse;margin:.5rem 0;width:100%}th,td{border:1px solid #ddd;padding:.3rem .5rem;
text-align:left;vertical-align:top}th{background:#f4f4f4}table.num td{white-space:nowrap}
code{font:12.5px ui-monospace,Menlo,Consolas,monospace;background:#f4f4f4;padding:0 .2rem;border-radius:3px;
overflow-wrap:anywhere}
td:first-child code{white-space:nowrap;overflow-wrap:normal}
.verdict{font-size:1.2rem;font-weight:600;padding:.6rem 1rem;border-radius:4px}
.verdict.pass{background:#e6f4ea;color:#14532d}.verdict.fail{background:#fde8e8;color:#8b1a1a}
.verdict.none{background:#f4f4f4}
.pass{color:#14532d}.fail{color:#b91c1c}.up{color:#b91c1c}.down{color:#1d4ed8}.muted{color:#666}
.ci{color:#555;font-size:.9em}.edit{margin:.2rem 0}.before{color:#8b1a1a}.after{color:#14532d}
.reply{color:#444;font-style:italic}.flag{color:#b45309;font-size:.9em}.args{overflow-wrap:anywhere}
ol{margin:0;padding-left:1.2rem}img{max-width:100%;height:auto;display:block;margin:.5rem 0}
.meta{color:#555}
"""

PAGE = Template("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="$csp">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title</title>
<style>$style</style>
</head>
<body>
<h1>$title</h1>
<p class="meta">$meta</p>
$verdict
$changes
$scores
$gate
$pictures
$flips
$calibration
$notes
<p class="meta">Written by toolchoice from releases/$release/scores.json and the warehouse.</p>
</body>
</html>
""")


def render_html(data: ReportData) -> str:
    """The page: verdict, confusion changes with catalog edits, scores, comparisons, pictures, flipped tasks
    with their calls, calibration. Every string from the data is escaped."""
    d = data.document
    meta = " · ".join(
        _e(part)
        for part in (
            f"kind {d.kind}",
            f"suite {d.suite}",
            f"catalog {d.catalog_version}" if d.catalog_version else None,
            f"evaluated {d.evaluated_at}" if d.evaluated_at else None,
            f"Dagster run {d.run_id}" if d.run_id else None,
        )
        if part
    )
    notes = (
        "<section><h2>Notes</h2><ul>" + "".join(f"<li>{_e(n)}</li>" for n in data.notes) + "</ul></section>"
        if data.notes
        else ""
    )
    return PAGE.substitute(
        csp=CSP,
        title=f"Release {_e(d.release_id)}",
        style=STYLE,
        meta=meta,
        verdict=_verdict(d),
        changes=_changes_section(d),
        scores=_scores_section(d, data.baseline),
        gate=_gate_section(d),
        pictures=_pictures_section(data),
        flips=_flips_section(data),
        calibration=_calibration_section(d),
        notes=notes,
        release=_e(d.release_id),
    )
