"""The trend of each share per model over releases (a terminal table and a chart image), and the cells of a
release's per-model scores table (the terminal and Dagster's Markdown show the same ones).

Reads only ``releases/<id>/scores.json`` (the DESIGN §3 contract), in the order the releases were
evaluated. Shares are in points (0–100).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from toolchoice_pipeline.releases.document import ReleaseDocument
from toolchoice_pipeline.releases.store import SCORES_FILE
from toolchoice_pipeline.scoring.summary import ModelScores, table_columns

SHARES = ("right_tool_pct", "right_args_pct")
# Releases a trend chart shows by default (the most recent): drawing every stored release would make each run's
# chart slower, and less readable, every release.
TREND_WINDOW = 30
SCORE_COLUMNS = tuple(label for _, label, _ in table_columns())


def shown(value: Any, digits: int = 2) -> str:
    """A figure for a table: a float with ``digits`` decimals, anything else as it is, ``–`` for none."""
    if value is None:
        return "–"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def score_cells(figures: ModelScores | dict[str, Any]) -> list[str]:
    """One model's figures (:class:`ModelScores` or a ``models`` entry of ``scores.json``) in
    :data:`SCORE_COLUMNS` order, each with its declared decimals (:func:`~toolchoice_pipeline.scoring.summary.metric`)."""
    values = figures.model_dump() if isinstance(figures, ModelScores) else figures
    return [shown(values.get(name), digits) if digits is not None else str(values.get(name))
            for name, _, digits in table_columns()]


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


def load_trend(data_dir: Path, suite: str | None = None, last: int | None = None) -> list[TrendPoint]:
    """Every model's shares in the stored releases (optionally of one suite), oldest release first; with ``last``,
    only the ``last`` most recently written ones.

    With ``last``, files are read newest first (by modification time, from a directory listing) until ``last``
    releases of the suite are found, so the cost stays bounded however many releases are stored.
    A damaged ``scores.json`` is left out (``toolchoice gate <release>`` names what is wrong with it)."""
    root = data_dir / "releases"
    listed = []
    if root.is_dir():
        with os.scandir(root) as entries:
            for entry in entries:
                path = Path(entry.path) / SCORES_FILE
                try:
                    listed.append((path.stat().st_mtime, path))
                except OSError:  # a directory without scores.json (an unfinished release), or not a directory
                    continue
    listed.sort(key=lambda item: item[0], reverse=True)
    scored = []
    for mtime, path in listed:
        if last is not None and len(scored) >= last:
            break
        try:
            scores = ReleaseDocument.model_validate_json(path.read_bytes())
        except (OSError, ValidationError):
            continue
        if suite is not None and scores.suite != suite:
            continue
        scored.append((scores.evaluated_at or "", mtime, scores))
    scored.sort(key=lambda item: (item[0], item[1]))
    points = []
    for _, _, scores in scored:
        gate_passed = scores.gate.passed if scores.gate is not None else None
        for model, figures in scores.models.items():
            points.append(TrendPoint(
                release_id=scores.release_id, kind=scores.kind, suite=scores.suite, model=model,
                right_tool_pct=figures.right_tool_pct, right_args_pct=figures.right_args_pct,
                tsq_mean=figures.tsq_mean, gate_passed=gate_passed,
            ))
    return points


def render_chart(points: list[TrendPoint], path: Path, title: str = "Tool choice over releases") -> Path | None:
    """Write a PNG line chart (one line per model and share) to ``path``; None when there is nothing to plot."""
    if not points:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    releases = list(dict.fromkeys(p.release_id for p in points))
    models = list(dict.fromkeys(p.model for p in points))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for axis, share, label in zip(axes, SHARES, ("right tool (points)", "right arguments (points)")):
        for model in models:
            by_release = {p.release_id: getattr(p, share) for p in points if p.model == model}
            xs = [i for i, r in enumerate(releases) if by_release.get(r) is not None]
            axis.plot(xs, [by_release[releases[i]] for i in xs], marker="o", label=model)
        axis.set_title(label)
        axis.set_xticks(range(len(releases)), releases, rotation=30, ha="right", fontsize=8)
        axis.set_ylim(0, 100)
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("share (points, 0–100)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(models), 4), fontsize=8, frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
