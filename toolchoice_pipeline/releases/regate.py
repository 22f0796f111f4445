"""Re-gating a stored release (``toolchoice gate``): its ``scores.json`` against a baseline's, with the settings it
was gated with when it was published (its gate's ``noise`` and models not gated), never the live
``toolchoice.yaml``: a finished release re-gates the same whatever the configuration says today."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from toolchoice_pipeline.releases.document import ReleaseDocument
from toolchoice_pipeline.releases.gate import GateResult
from toolchoice_pipeline.releases.gating import gate_against, stored_noise
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.scoring.summary import ModelScores
from toolchoice_pipeline.util.errors import display_path


def regate(
    data_dir: Path,
    release_id: str,
    baseline_id: str | None = None,
    *,
    ungated: Collection[str] | None = None,
    stored: ReleaseDocument | None = None,
) -> tuple[GateResult, dict[str, ModelScores] | None]:
    """Gate the stored release ``release_id`` against ``baseline_id`` (default: the baseline it was gated against,
    else its suite's baseline other than itself). Returns the result and the baseline's ``models``.

    ``stored``: the release's document when already read (else its ``scores.json`` is read). ``ungated``: the
    models that do not gate it (:func:`.gate_scope.exempt`; None: those its stored gate lists as ``not_gated``).
    The noise mode is the one its gate recorded. Raises :class:`InputError` for an unknown release or baseline,
    or a baseline of another suite.
    """
    store = ReleaseStore(data_dir)
    if stored is None:
        stored = store.read_scores(release_id)
    if ungated is None:
        ungated = stored.gate.not_gated if stored.gate is not None else ()
    if baseline_id is None:
        baseline_id = stored.baseline_release_id or store.baseline_for(stored.suite, release_id)
    baseline = store.read_scores(baseline_id) if baseline_id is not None else None
    result = gate_against(
        data_dir,
        release_id,
        stored.models,
        stored.suite,
        baseline,
        noise=stored_noise(stored),
        ungated=ungated,
        baseline_file=display_path(store.scores_path(baseline_id)) if baseline_id is not None else "<baseline>",
    )
    return result, baseline.models if baseline is not None else None
