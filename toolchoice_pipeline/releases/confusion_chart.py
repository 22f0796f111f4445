"""Confusion heatmaps: per model, which tool it chose first (columns) where another was expected (rows), this
release beside the change against its baseline (DESIGN §3 "Tool confusion").

- :func:`confusion_matrix`: the full matrix, diagonal included, rebuilt from a ``models.<m>`` entry of
  ``scores.json``: ``tools[].right`` is the diagonal, ``confusion`` the off-diagonal pairs ("no call" a row and a
  column like a tool). Pure data, so it is tested apart from the drawing.
- :func:`heatmap_figure`: a matplotlib figure (imported lazily, Agg backend): the release's counts, and, given
  the baseline, a second panel of the change in each cell (now − baseline, a diverging scale centred on 0).
  Both releases' whole tables are drawn (every scored episode of each); the gate's ``confusion_changes`` count
  only the episodes both releases scored, so with different task sets the two can differ.
- :func:`heatmap_pngs`: the PNG bytes per model of a release; :func:`write_heatmaps` writes them as
  ``confusion-<model>.png`` files.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolchoice_pipeline.releases.object_store import is_remote
from toolchoice_pipeline.scoring.summary import ModelScores
from toolchoice_pipeline.util.extras import require

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NO_CALL = "no call"
LABEL_CHARS = 28  # longer tool names are cut (BFCL's dotted function names), the full name stays in the data
DPI = 100
STACK_ABOVE = 15  # labels (tools + "no call") above which the release and the change panels are stacked


@dataclass(frozen=True)
class ConfusionMatrix:
    """``counts[i][j]``: episodes that expected ``labels[i]`` first and chose ``labels[j]`` first (a label None is
    "no call"). Labels are tool names in name order, None last."""

    labels: list[str | None]
    counts: list[list[int]]

    def count(self, expected: str | None, chosen: str | None) -> int:
        """The cell of ``(expected, chosen)``; 0 for a tool the matrix does not name."""
        if expected not in self.labels or chosen not in self.labels:
            return 0
        return self.counts[self.labels.index(expected)][self.labels.index(chosen)]


def _order(value: str | None) -> tuple[bool, str]:
    return (value is None, value or "")


def _entries(figures: ModelScores | Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    values = getattr(figures, key) if isinstance(figures, ModelScores) else figures.get(key) or []
    return [v.model_dump() if hasattr(v, "model_dump") else v for v in values]


def confusion_matrix(
    figures: ModelScores | Mapping[str, Any], labels: Iterable[str | None] | None = None
) -> ConfusionMatrix:
    """The matrix of one model's figures (a :class:`ModelScores` or a ``models`` entry of ``scores.json``):
    ``right`` of each ``tools`` row on the diagonal, each ``confusion`` entry off it. ``labels`` fixes the rows
    and columns (to draw two releases on the same axes); by default every tool the figures name."""
    tools = _entries(figures, "tools")
    confusion = _entries(figures, "confusion")
    if labels is None:
        named = {t["tool"] for t in tools} | {c["expected"] for c in confusion} | {c["chosen"] for c in confusion}
        labels = sorted(named, key=_order)
    labels = list(labels)
    index = {label: i for i, label in enumerate(labels)}
    counts = [[0] * len(labels) for _ in labels]
    for tool in tools:
        if tool["tool"] in index and tool["right"]:
            counts[index[tool["tool"]]][index[tool["tool"]]] = int(tool["right"])
    for entry in confusion:
        if entry["expected"] in index and entry["chosen"] in index:
            counts[index[entry["expected"]]][index[entry["chosen"]]] = int(entry["count"])
    return ConfusionMatrix(labels=labels, counts=counts)


def matrix_pair(
    now: ModelScores | Mapping[str, Any], baseline: ModelScores | Mapping[str, Any] | None
) -> tuple[ConfusionMatrix, ConfusionMatrix | None]:
    """The model's matrices in this release and the baseline (None without one), on the union of their labels."""
    labels = set(confusion_matrix(now).labels)
    if baseline is not None:
        labels |= set(confusion_matrix(baseline).labels)
    ordered = sorted(labels, key=_order)
    return confusion_matrix(now, ordered), (None if baseline is None else confusion_matrix(baseline, ordered))


def _label(value: str | None) -> str:
    text = NO_CALL if value is None else value
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def heatmap_figure(
    model: str,
    now: ConfusionMatrix,
    baseline: ConfusionMatrix | None = None,
    release_id: str = "this release",
    baseline_id: str = "baseline",
) -> Figure:
    """The figure: the counts of ``now`` (expected rows × chosen columns, counts written in the non-zero cells,
    the diagonal, the right choices, boxed), and with ``baseline`` (same labels) the change now − baseline
    beside it (red: more episodes now, blue: fewer); past :data:`STACK_ABOVE` labels the change panel goes below.
    Readable up to about 30 tools: cells keep 0.4 in and the cell text at least 7 points."""
    require("charts", "the confusion heatmap")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.patches import Rectangle
    from matplotlib.ticker import MaxNLocator

    n = max(len(now.labels), 1)
    side = max(3.2, 0.4 * n)
    panels = 1 if baseline is None else 2
    # Past STACK_ABOVE labels the two panels go one above the other, so a page or a screen shows them at full size.
    rows, columns = (panels, 1) if n > STACK_ABOVE else (1, panels)
    fig, axes = plt.subplots(
        rows,
        columns,
        figsize=(columns * (side + 2.8), rows * (side + 2.2) + 0.4),
        squeeze=False,
        layout="constrained",  # room for long tool names, the colour bars and the title, however many labels
    )
    fontsize = max(7.0, min(9.0, 150 / n))
    names = [_label(label) for label in now.labels]
    counts = np.array(now.counts, dtype=float).reshape(len(now.labels), len(now.labels))
    grids: list[tuple[Any, str, str, Any]] = [(counts, f"{release_id}: episodes", "Blues", None)]
    if baseline is not None:
        change = counts - np.array(baseline.counts, dtype=float).reshape(counts.shape)
        limit = max(1.0, float(np.abs(change).max(initial=0)))
        grids.append(
            (change, f"change against {baseline_id} (now − baseline)", "RdBu_r", TwoSlopeNorm(0, -limit, limit))
        )
    for axis, (grid, title, cmap, norm) in zip(axes.flat, grids, strict=False):
        shown = grid if grid.size else np.zeros((1, 1))
        image = axis.imshow(shown, cmap=cmap, norm=norm, vmin=None if norm else 0, aspect="equal")
        top = float(np.abs(shown).max(initial=0)) or 1.0
        for (i, j), value in np.ndenumerate(grid):
            if value:
                text = f"{value:+.0f}" if norm is not None else f"{value:.0f}"
                dark = abs(value) / top > 0.55
                axis.text(j, i, text, ha="center", va="center", fontsize=fontsize, color="white" if dark else "black")
        for i in range(len(now.labels)):
            axis.add_patch(Rectangle((i - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="#333333", linewidth=0.8))
        axis.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=fontsize)
        axis.set_yticks(range(len(names)), names, fontsize=fontsize)
        axis.set_xlabel("chosen first", fontsize=9)
        axis.set_ylabel("expected first", fontsize=9)
        axis.set_title(title, fontsize=10)
        bar = fig.colorbar(image, ax=axis, shrink=0.8)
        bar.ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts of episodes: whole numbers
        bar.ax.tick_params(labelsize=7)
    fig.suptitle(f"{model}: tool confusion (boxed diagonal: right first tool)", fontsize=11)
    return fig


def png_bytes(fig: Any) -> bytes:
    """The figure as PNG bytes (then closed)."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=DPI, format="png")
    plt.close(fig)
    return buffer.getvalue()


def model_slugs(models: Sequence[str]) -> dict[str, str]:
    """A file-name part per model string (``openai/gpt-4o`` → ``openai-gpt-4o``), distinct for distinct models."""
    slugs: dict[str, str] = {}
    for model in models:
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-.") or "model"
        base, k = slug, 2
        while slug in slugs.values():
            slug, k = f"{base}-{k}", k + 1
        slugs[model] = slug
    return slugs


def heatmap_pngs(
    models: Mapping[str, ModelScores],
    baseline_models: Mapping[str, ModelScores] | None = None,
    release_id: str = "this release",
    baseline_id: str = "baseline",
) -> dict[str, bytes]:
    """PNG bytes per model of ``models`` (a release's ``scores.json`` ``models``), each beside its baseline
    figures when the baseline has the model. Models without a scored, labelled episode are left out."""
    pngs = {}
    for model, figures in models.items():
        before = (baseline_models or {}).get(model)
        now, baseline = matrix_pair(figures, before)
        if not now.labels:
            continue
        pngs[model] = png_bytes(heatmap_figure(model, now, baseline, release_id, baseline_id))
    return pngs


def write_heatmaps(pngs: Mapping[str, bytes], directory: Any, prefix: str = "confusion") -> list[Any]:
    """Write each model's PNG as ``<directory>/<prefix>-<model slug>.png`` (a local path or a UPath)."""
    slugs = model_slugs(list(pngs))
    if not is_remote(directory):
        Path(directory).mkdir(parents=True, exist_ok=True)
    written = []
    for model, data in pngs.items():
        path = directory / f"{prefix}-{slugs[model]}.png"
        path.write_bytes(data)
        written.append(path)
    return written
