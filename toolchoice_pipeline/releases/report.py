"""The trend of each share per model over releases (a terminal table, a Markdown table for Dagster's UI and a
chart image marking failed gates and the baseline), and the cells of a release's per-model scores table (the
terminal and Dagster's Markdown show the same ones).

Reads only ``releases/<id>/scores.json`` (the DESIGN §3 contract), in the order the releases were
evaluated. Shares are in points (0–100).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from toolchoice_pipeline.releases.document import ReleaseDocument
from toolchoice_pipeline.releases.gate import MAX_DROP_POINTS
from toolchoice_pipeline.releases.gate_scope import failed_models
from toolchoice_pipeline.releases.object_store import is_remote, releases_root
from toolchoice_pipeline.releases.store import DOCUMENT_KIND, SCORES_FILE, document_key
from toolchoice_pipeline.scoring.summary import ModelScores, table_columns
from toolchoice_pipeline.util.extras import require

if TYPE_CHECKING:
    from matplotlib.figure import Figure
from toolchoice_pipeline.suites import read_once
from toolchoice_pipeline.util.errors import display_path

SHARES = ("right_tool_pct", "right_args_pct")
# Releases a trend chart shows by default (the most recent): drawing every stored release would make each run's
# chart slower, and less readable, every release.
TREND_WINDOW = 30
SCORE_COLUMNS = tuple(label for _, label, _ in table_columns())
UNPRICED = "unpriced"


def shown(value: Any, digits: int = 2) -> str:
    """A figure for a table: a float with ``digits`` decimals, anything else as it is, ``–`` for none."""
    if value is None:
        return "–"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def score_cells(
    figures: ModelScores | dict[str, Any], *, agent_priced: bool = True, judge_priced: bool = True
) -> list[str]:
    """One model's figures (:class:`ModelScores` or a ``models`` entry of ``scores.json``) in
    :data:`SCORE_COLUMNS` order, each with its declared decimals (:func:`~toolchoice_pipeline.scoring.summary.metric`);
    a cost is "unpriced" for a model whose price is unknown (its calls were counted at 0): as the figures say
    (``agent_cost_unpriced``, ``judge_cost_unpriced``) or as the caller says (``agent_priced``, ``judge_priced``)."""
    values = figures.model_dump() if isinstance(figures, ModelScores) else figures
    unpriced = {
        "agent_cost_usd": not agent_priced or bool(values.get("agent_cost_unpriced")),
        "judge_cost_usd": not judge_priced or bool(values.get("judge_cost_unpriced")),
    }
    return [
        UNPRICED
        if unpriced.get(name)
        else shown(values.get(name), digits)
        if digits is not None
        else str(values.get(name))
        for name, _, digits in table_columns()
    ]


@dataclass(frozen=True)
class TrendPoint:
    """One model's shares in one release."""

    release_id: str
    kind: str
    suite: str
    model: str
    right_tool_pct: float | None
    right_args_pct: float | None
    tsq_mean: float | None
    gate_passed: bool | None
    #: Whether this model is one whose drops failed the release's gate (``gate.failures``' models).
    model_failed: bool = False
    #: The release's judge calibration: "pass", "FAIL" (failed in ``fail`` mode: exit 4, not promoted), "warn"
    #: (failed in ``warn`` mode), or None (not judged, or no calibration recorded).
    calibration: str | None = None


def _trend_document(path: Any) -> ReleaseDocument:
    """A release's ``scores.json`` (a Path, or a UPath on a store); parsed once while
    :func:`~toolchoice_pipeline.suites.read_once.inputs_read_once` is active and a local file is unchanged."""
    if not isinstance(path, Path) or not read_once.active():
        return ReleaseDocument.model_validate_json(path.read_bytes())
    key = document_key(path)
    found = read_once.held(DOCUMENT_KIND, key)
    if found is not None:
        return found
    files = read_once.signature([path])
    return read_once.hold(DOCUMENT_KIND, key, files, ReleaseDocument.model_validate_json(path.read_bytes()))


def load_trend(
    data_dir: Path,
    suite: str | None = None,
    last: int | None = None,
    current: ReleaseDocument | None = None,
    skipped: list[str] | None = None,
) -> list[TrendPoint]:
    """Every model's shares in the stored releases (optionally of one suite), oldest release first; with ``last``,
    only the ``last`` most recently written ones. ``current``: a release's document just written, taken as it is
    instead of reading its ``scores.json`` back.

    With ``last``, files are read newest first (by modification time, from a directory listing) until ``last``
    releases of the suite are found, so the cost stays bounded however many releases are stored.
    A damaged ``scores.json`` (empty, cut short, not JSON, not a release document) is left out; with ``skipped``,
    one line per file left out is appended to it: ``<file>: <why>`` (``toolchoice gate <release>`` names every
    problem of one)."""
    root = releases_root(data_dir)
    listed: list[tuple[float, Any]] = []
    if is_remote(root):
        listed = _listed_objects(root)
    elif root.is_dir():
        with os.scandir(root) as entries:
            for entry in entries:
                path = Path(entry.path) / SCORES_FILE
                try:
                    listed.append((path.stat().st_mtime, path))
                except OSError:  # a directory without scores.json (an unfinished release), or not a directory
                    continue
    listed.sort(key=lambda item: item[0], reverse=True)
    scored: list[tuple[str, float, ReleaseDocument]] = []
    for mtime, path in listed:
        if last is not None and len(scored) >= last:
            break
        if current is not None and path.parent.name == current.release_id:
            scores = current
        else:
            try:
                scores = _trend_document(path)
            except OSError as exc:
                _note(skipped, path, f"unreadable ({exc.strerror or exc})")
                continue
            except ValidationError as exc:
                _note(skipped, path, _why_damaged(_content(path), exc))
                continue
        if suite is not None and scores.suite != suite:
            continue
        scored.append((scores.evaluated_at or "", mtime, scores))
    scored.sort(key=lambda item: (item[0], item[1]))
    points = []
    for _, _, scores in scored:
        gate_passed = scores.gate.passed if scores.gate is not None else None
        failing = set(failed_models(scores.gate)) if scores.gate is not None else set()
        calibration = calibration_status(scores)
        for model, figures in scores.models.items():
            points.append(
                TrendPoint(
                    release_id=scores.release_id,
                    kind=scores.kind,
                    suite=scores.suite,
                    model=model,
                    right_tool_pct=figures.right_tool_pct,
                    right_args_pct=figures.right_args_pct,
                    tsq_mean=figures.tsq_mean,
                    gate_passed=gate_passed,
                    model_failed=model in failing,
                    calibration=calibration,
                )
            )
    return points


def _content(path: Any) -> bytes:
    """The bytes of a damaged file, to say what is wrong with it (empty when it cannot be read again)."""
    try:
        return bytes(path.read_bytes())
    except OSError:
        return b""


def _note(skipped: list[str] | None, path: Any, why: str) -> None:
    if skipped is not None:
        skipped.append(f"{display_path(str(path))}: {why}")


def _why_damaged(content: bytes, exc: ValidationError) -> str:
    """One clause saying why a ``scores.json`` is not a release document: empty, not JSON, or its first bad field."""
    if not content.strip():
        return f"empty file ({len(content)} bytes): left out of the trend"
    first = exc.errors(include_url=False)[0]
    if first["type"] == "json_invalid":
        detail = str(first["msg"]).removeprefix("Invalid JSON: ")
        cut = ", cut short" if "EOF" in detail else ""
        return f"bad JSON ({detail}; {len(content)} bytes{cut}): left out of the trend"
    field = ".".join(str(part) for part in first["loc"]) or "document"
    return f"{field}: {first['msg']} (not a release document, DESIGN §3): left out of the trend"


def calibration_status(scores: ReleaseDocument) -> str | None:
    """The release's judge calibration as :attr:`TrendPoint.calibration` says."""
    calibration = scores.judge.calibration if scores.judge is not None else None
    if calibration is None:
        return None
    if calibration.passed:
        return "pass"
    return "FAIL" if calibration.blocks_promotion else "warn"


def trend_rows(points: list[TrendPoint], baseline: str | None = None) -> tuple[list[str], list[list[str]]]:
    """The trend as ``(models, rows)``: one row per release (oldest first) of ``[release, kind, gate,
    calibration, cell per model]``, a cell ``right tool % / right args %``, the gate ``pass``/``FAIL``/``–``
    (``FAIL (calibration)`` when the gate passed but the judge calibration failed the run: exit 4, never
    promoted), the calibration ``pass``/``FAIL``/``warn``/``–``; the release ``baseline`` (the suite's
    current baseline) has `` (baseline)`` after its id."""
    models = list(dict.fromkeys(p.model for p in points))
    rows = []
    for release_id in dict.fromkeys(p.release_id for p in points):
        by_model = {p.model: p for p in points if p.release_id == release_id}
        first = next(iter(by_model.values()))
        gate = "–" if first.gate_passed is None else ("pass" if first.gate_passed else "FAIL")
        if gate == "pass" and first.calibration == "FAIL":
            gate = "FAIL (calibration)"
        cells = [
            f"{_pct(by_model[m].right_tool_pct)} / {_pct(by_model[m].right_args_pct)}" if m in by_model else ""
            for m in models
        ]
        name = f"{release_id} (baseline)" if release_id == baseline else release_id
        rows.append([name, first.kind, gate, first.calibration or "–", *cells])
    return models, rows


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def trend_markdown(points: list[TrendPoint], baseline: str | None = None) -> str:
    """:func:`trend_rows` as a Markdown table (shown in the Dagster UI's metadata)."""
    models, rows = trend_rows(points, baseline)
    header = ["release", "kind", "gate", "calibration", *(f"{m} (right tool % / right args %)" for m in models)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * 4 + "---:|" * len(models)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def render_chart(
    points: list[TrendPoint], path: Path, title: str = "Tool choice over releases", baseline: str | None = None
) -> Path | None:
    """Write :func:`trend_figure` as a PNG to ``path`` (a local path, or a UPath: one upload); None when there
    is nothing to plot."""
    if not points:
        return None
    import matplotlib.pyplot as plt

    fig = trend_figure(points, title, baseline)
    if is_remote(path):
        with path.open("wb") as handle:
            fig.savefig(handle, dpi=110, format="png")
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


#: The smallest span of the chart's share axis (points): four times the gate's largest allowed drop, so a drop
#: that fails the gate is a fifth of the axis or more (with the padding), never flattened by a fixed 0–100 axis.
MIN_AXIS_SPAN_POINTS = 4 * MAX_DROP_POINTS
#: Per model in turn: marker, line style and marker size (shrinking, so a model drawn over an equal one leaves
#: the one below visible around it), and a small sideways offset (fraction of a release step).
LINE_STYLES = (("o", "-", 9), ("s", ":", 7), ("^", "-.", 6), ("D", "-", 5), ("v", ":", 4))
MODEL_OFFSET = 0.08


def share_limits(values: list[float]) -> tuple[float, float]:
    """The share axis's limits (points) for ``values``: the data range padded by a tenth of its span on each
    side, at least :data:`MIN_AXIS_SPAN_POINTS` wide, kept within 0–100."""
    low, high = min(values), max(values)
    span = max(high - low, MIN_AXIS_SPAN_POINTS)
    middle = (low + high) / 2
    low, high = middle - 0.6 * span, middle + 0.6 * span
    if low < 0:
        low, high = 0.0, min(100.0, high - low)
    if high > 100:
        low, high = max(0.0, low - (high - 100)), 100.0
    return low, high


def trend_figure(
    points: list[TrendPoint], title: str = "Tool choice over releases", baseline: str | None = None
) -> Figure:
    """A matplotlib figure of the trend: one line per model, right tool and right arguments side by side (points).

    Every line stays visible: each model has its own marker, line style and marker size, and is shifted a little
    sideways, so a line under an equal one shows. A release whose gate failed gets a red tick label, and a red
    cross on the lines of the models that failed it (``gate.failures``' models) only. The share axis spans
    the data (:func:`share_limits`), so a drop the size of the gate's threshold shows. The ``baseline``
    release (the suite's current baseline) gets a dashed vertical line, and its tick label says so."""
    require("charts", "the trend chart")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    releases = list(dict.fromkeys(p.release_id for p in points))
    models = list(dict.fromkeys(p.model for p in points))
    failed = {p.release_id for p in points if p.gate_passed is False}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    plotted: list[float] = []
    crossed = False
    for axis, share, label in zip(axes, SHARES, ("right tool (points)", "right arguments (points)")):
        for order, model in enumerate(models):
            marker, style, size = LINE_STYLES[order % len(LINE_STYLES)]
            shift = (order - (len(models) - 1) / 2) * MODEL_OFFSET
            of_model = {p.release_id: p for p in points if p.model == model}
            by_release = {r: getattr(p, share) for r, p in of_model.items()}
            xs = [i for i, r in enumerate(releases) if by_release.get(r) is not None]
            ys = [by_release[releases[i]] for i in xs]
            plotted += ys
            axis.plot(
                [x + shift for x in xs], ys, marker=marker, linestyle=style, markersize=size, label=model, zorder=2
            )
            failed_xs = [i for i in xs if of_model[releases[i]].model_failed]
            if failed_xs:
                axis.scatter(
                    [x + shift for x in failed_xs],
                    [by_release[releases[i]] for i in failed_xs],
                    marker="x",
                    s=90,
                    color="red",
                    zorder=3,
                    label=None if crossed else "gate failed",
                )
                crossed = True
        if baseline in releases:
            axis.axvline(
                releases.index(baseline),
                color="grey",
                linestyle="--",
                linewidth=1,
                label="baseline" if axis is axes[0] else None,
            )
        axis.set_title(label)
        names = [f"{r} (baseline)" if r == baseline else r for r in releases]
        axis.set_xticks(range(len(releases)), names, rotation=30, ha="right", fontsize=8)
        for tick, release_id in zip(axis.get_xticklabels(), releases):
            if release_id in failed:
                tick.set_color("red")
        axis.grid(alpha=0.3)
    if plotted:
        axes[0].set_ylim(*share_limits(plotted))
    axes[0].set_ylabel("share (points)")
    handles, labels = axes[0].get_legend_handles_labels()
    if crossed and "gate failed" not in labels:  # the crosses are only on the right-arguments panel
        extra_handles, extra_labels = axes[1].get_legend_handles_labels()
        handles.append(extra_handles[extra_labels.index("gate failed")])
        labels.append("gate failed")
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 4), fontsize=8, frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def _listed_objects(root: Any) -> list[tuple[float, Any]]:
    """``(modification time, scores.json)`` of every release on an object store, from one listing."""
    from datetime import datetime

    root.fs.invalidate_cache()
    found = root.fs.glob(f"{root.path}/*/{SCORES_FILE}", detail=True)
    listed = []
    for name, info in found.items():
        modified = info.get("LastModified") or info.get("mtime") or info.get("last_modified")
        stamp = modified.timestamp() if isinstance(modified, datetime) else float(modified or 0)
        listed.append((stamp, root / name[len(root.path) :].lstrip("/")))
    return listed
