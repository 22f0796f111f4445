"""The release document ``releases/<id>/scores.json`` (DESIGN §3 plus its extensions), typed.

Written last and atomically by :func:`toolchoice_pipeline.releases.publish.publish_release`; read by the store,
the gate, the report, the Dagster checks and the CLI. Outside tools read the JSON: fields are only ever added.
Unknown fields are kept (``extra="allow"``), so a document written by a newer version reads and re-writes
without loss. Per-model figures are :class:`~toolchoice_pipeline.scoring.summary.ModelScores`, whose fields
declare each metric once (label and decimals for tables, type for the warehouse).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toolchoice_pipeline.releases.confusion import ConfusionChange, ToolChange
from toolchoice_pipeline.releases.gate import Comparison, GateFailure, TaskFlips
from toolchoice_pipeline.scoring.summary import ModelScores


class ModelCalibration(BaseModel):
    """One judged model's entry of ``judge.calibration.per_model`` (issue 30): the judge's agreement with right
    tool on the model's labelled episodes (``kappa``/``accuracy`` fractions, None when not computable) and
    whether it clears the bar (kappa above 0.2 from 20 labelled episodes on)."""

    model_config = ConfigDict(extra="allow")

    kappa: float | None = None
    accuracy: float | None = None
    n_labelled: int = 0
    passed: bool = True


class CalibrationInfo(BaseModel):
    """``judge.calibration``: the judge calibration of the release (DESIGN §5). ``mode`` is ``fail`` or ``warn``;
    ``blocks_promotion`` when it failed in ``fail`` mode; ``canary_tsq``/``accuracy``/``kappa`` are fractions
    (None when not computable); the canary's own judge calls in USD and tokens; ``per_model`` the agreement per
    judged model (documents written before issue 30 have none)."""

    model_config = ConfigDict(extra="allow")

    passed: bool
    mode: str = "fail"
    blocks_promotion: bool = False
    message: str = ""
    reasons: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    canary_tsq: float | None = None
    accuracy: float | None = None
    kappa: float | None = None
    n_labelled: int = 0
    canary_judge_cost_usd: float = 0.0
    canary_judge_tokens: int = 0
    per_model: dict[str, ModelCalibration] = Field(default_factory=dict)


class JudgeInfo(BaseModel):
    """The ``judge`` object: the judge model string, polls per choice, the rubric's 12-hex version, the judge's
    budget in USD (None: no cap), the release's calibration, and the judge preflight call's cost (USD) and
    tokens (added with issue 12: that call is under the budget and in the judge's cost)."""

    model_config = ConfigDict(extra="allow")

    model: str
    polls: int
    rubric_version: str
    budget_usd: float | None = None
    calibration: CalibrationInfo | None = None
    preflight_judge_cost_usd: float = 0.0
    preflight_judge_tokens: int = 0


class GateDocument(BaseModel):
    """The ``gate`` object: the verdict, its limits (points, percent), the failures (DESIGN §3) and the
    extensions: models not evaluated, new and missing, not gated (``gate: false``), notes, per model and metric the flipped tasks, the
    noise mode, the ``comparisons`` (DESIGN §3 "Repeats and the noise-aware gate"), the warnings of drops
    passed as within noise, the false-fail advice per model, and the tool-confusion changes with the catalog
    edits beside them (DESIGN §3 "Tool confusion")."""

    model_config = ConfigDict(extra="allow")

    passed: bool
    max_drop_points: float
    max_error_pct: float | None = None
    baseline_release_id: str | None = None
    failures: list[GateFailure] = Field(default_factory=list)
    not_evaluated: list[str] = Field(default_factory=list)
    new_models: list[str] = Field(default_factory=list)
    missing_models: list[str] = Field(default_factory=list)
    not_gated: list[str] = Field(default_factory=list)  # issue 30: reported, never failing the release
    notes: list[str] = Field(default_factory=list)
    flips: dict[str, dict[str, TaskFlips]] = Field(default_factory=dict)
    noise: str = "report"
    comparisons: list[Comparison] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    advice: list[str] = Field(default_factory=list)
    confusion_changes: list[ConfusionChange] = Field(default_factory=list)
    catalog_changes: list[ToolChange] = Field(default_factory=list)


class ReleaseDocument(BaseModel):
    """``scores.json``. ``kind`` is ``release``, ``nightly``, ``catalog-change`` or ``adhoc``; ``judge`` is None
    when the judge did not run; ``evaluated_at`` is ISO 8601 UTC; ``models`` is keyed by LiteLLM model string."""

    model_config = ConfigDict(extra="allow")

    release_id: str
    kind: str
    suite: str
    catalog_version: str | None = None
    fixture_version: str | None = None
    judge: JudgeInfo | None = None
    baseline_release_id: str | None = None
    run_id: str | None = None
    evaluated_at: str | None = None
    match_profile: str | None = None
    models: dict[str, ModelScores]
    gate: GateDocument | None = None

    @property
    def gate_passed(self) -> bool:
        """Whether the release's gate passed (False when it has no gate)."""
        return self.gate is not None and self.gate.passed

    def figures(self) -> dict[str, dict[str, Any]]:
        """Per-model figures as plain JSON objects (what ``scores.json`` holds under ``models``)."""
        return {model: scores.model_dump(mode="json") for model, scores in self.models.items()}

    def to_json_text(self) -> str:
        """The file's text: JSON, 2-space indent, UTF-8 characters as they are, a final newline."""
        return json.dumps(self.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
