"""Which models gate a release (issue 30): reference baselines run beside a real model without gating it.

A model with ``gate: false`` in ``toolchoice.yaml`` ``models[]`` (or left out of ``--gate-models``) is still
scored, compared with the baseline and shown; :func:`exempt` turns its verdict into status ``not_gated``: its
failures become notes (``would fail: <reason>``), so they never fail the release, and the ``gate`` object lists
it under ``not_gated``. :func:`failed_models` names the models whose failures failed the release, for the
run's summary and exit message.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from toolchoice_pipeline.releases.gate import GateResult

NOT_GATED_NOTE = (
    "not gated (gate: false or left out of --gate-models): its figures are reported, its drops never fail the release"
)


def exempt(result: GateResult, ungated: Collection[str]) -> GateResult:
    """``result`` with every model in ``ungated`` (model strings; absent ones ignored) marked ``not_gated``: its
    failures moved to notes, ``passed`` recomputed from the remaining models' failures. Pure."""
    ungated = set(ungated)
    if not ungated & set(result.models):
        return result
    models = {}
    for name, gate in result.models.items():
        if name not in ungated or gate.status == "missing":
            models[name] = gate
            continue
        notes = [*gate.notes, NOT_GATED_NOTE] + [f"would fail: {failure.reason}" for failure in gate.failures]
        models[name] = gate.model_copy(update={"status": "not_gated", "failures": [], "notes": notes})
    passed = result.passed or not any(gate.failures for gate in models.values())
    return result.model_copy(update={"models": models, "passed": passed})


def failed_models(gate: Mapping[str, Any] | Any) -> list[str]:
    """The models (sorted) whose failures failed the release, from a :class:`GateResult` or a ``gate`` object
    (:class:`~toolchoice_pipeline.releases.document.GateDocument` or its JSON)."""
    failures = gate.get("failures", []) if isinstance(gate, Mapping) else gate.failures
    return sorted({f["model"] if isinstance(f, Mapping) else f.model for f in failures})
