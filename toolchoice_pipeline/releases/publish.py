"""Publishing a release: score it, commit its warehouse tables, gate it, write ``gate.md`` and ``scores.json``
(last), then promote it (DESIGN §3).

The gate's settings are the caller's (the release's pinned run configuration), never re-read from
``toolchoice.yaml``: a release gates as it was configured when it was pinned.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolchoice_pipeline.records.episodes import Episode, JudgeVote, TaskScore
from toolchoice_pipeline.releases.document import GateDocument, JudgeInfo, ReleaseDocument
from toolchoice_pipeline.releases.gate import GateResult, NoiseMode, gate_markdown
from toolchoice_pipeline.releases.gating import gate_against
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.release_tables import release_tables
from toolchoice_pipeline.releases.store import GATE_MARKDOWN_FILE, ReleaseStore, promotable
from toolchoice_pipeline.releases.warehouse import ReleaseCommit, Warehouse
from toolchoice_pipeline.suites.suite import Suite
from toolchoice_pipeline.util.errors import InputError, Problem, display_path


@dataclass
class PublishedRelease:
    """What publishing a release produced."""

    scores: ReleaseDocument
    gate: GateResult
    promoted: bool
    commit: ReleaseCommit
    scores_path: Any  # a Path, or a UPath on an object store
    gate_markdown: str = ""


def publish_release(
    data_dir: Path,
    suite: Suite,
    lineage: Lineage,
    kind: str,
    episodes: Iterable[Episode],
    votes: Iterable[JudgeVote] = (),
    *,
    judge: dict[str, Any] | None = None,
    force: bool = False,
    scores: list[TaskScore] | None = None,
    promote: bool = True,
    unpriced_agents: Collection[str] = (),
    judge_unpriced: bool = False,
    ungated: Collection[str] = (),
    noise: NoiseMode = "report",
    staged: Mapping[str, Path] | None = None,
) -> PublishedRelease:
    """Score a release, commit its warehouse tables, gate it, write ``scores.json`` (last), then promote it.

    ``kind`` is ``release``, ``nightly``, ``catalog-change`` or ``adhoc``; ``judge`` is the ``judge`` object of
    ``scores.json`` (``model``, ``polls``, ``rubric_version``; None when the judge did not run); ``scores`` are
    the task scores when already computed (the Dagster ``task_scores`` asset), else they are computed here
    (:func:`.release_tables.release_tables`: columnar, for every release size).
    With ``promote=False`` promotion is left to the caller (the Dagster ``baseline`` asset, after the blocking
    gate check); a forced re-run of a promoted release that no longer qualifies is withdrawn either way.
    ``unpriced_agents`` (model strings) and ``judge_unpriced`` mark costs counted at 0 for want of a price
    (:func:`~toolchoice_pipeline.scoring.summary.mark_unpriced`: ``agent_cost_unpriced``, ``judge_cost_unpriced``).
    ``ungated``: the models reported without gating the release (``gate: false``, :mod:`.gate_scope`).
    ``noise``: the gate's noise mode (``gate.noise`` of the release's pinned run configuration). ``staged``: the
    ``agent_calls``, ``judge_votes`` and ``task_scores`` files written for ``lineage`` where they were scored
    (:mod:`.staged_tables`), committed by rename; ``episodes``, ``votes`` and ``scores`` are not read then.
    Also writes ``releases/<id>/gate.md``. Raises :class:`InputError` when the id belongs to a finished
    release and ``force`` is False.
    """
    store, warehouse = ReleaseStore(data_dir), Warehouse(data_dir)
    built = release_tables(
        suite,
        lineage,
        episodes,
        votes,
        scores=scores,
        staged=staged,
        unpriced_agents=unpriced_agents,
        judge_unpriced=judge_unpriced,
    )
    models = built.models
    # Two runs of one release id at once: the second to get here finds the first's scores.json (refused
    # without --force) instead of silently replacing a release that had just finished.
    with store.publishing_lock(lineage.release_id):
        store.check_release_id_free(lineage.release_id, force)
        # A release without scores.json never finished: replacing its tables needs no --force.
        # Out of the views until scores.json is written: the views never list a release the CLI calls unfinished.
        commit = warehouse.write_release(
            lineage, built.tables, kind=kind, replace=True, published=False, staged=built.files
        )
        baseline_id = store.baseline_for(suite.name, lineage.release_id)
        baseline = store.read_scores(baseline_id) if baseline_id is not None else None
        gate = gate_against(
            data_dir,
            lineage.release_id,
            models,
            suite.name,
            baseline,
            noise=noise,
            ungated=ungated,
            baseline_file=display_path(store.scores_path(baseline_id)) if baseline_id is not None else "<baseline>",
        )
        document = ReleaseDocument(
            release_id=lineage.release_id,
            kind=kind,
            suite=suite.name,
            catalog_version=lineage.catalog_version,
            fixture_version=suite.fixture_version,
            judge=JudgeInfo.model_validate(judge) if judge is not None else None,
            baseline_release_id=gate.baseline_release_id,
            run_id=lineage.run_id,
            evaluated_at=datetime.now(UTC).isoformat(timespec="seconds"),
            match_profile=suite.match_profile,
            models=models,
            gate=GateDocument.model_validate(gate.to_json()),
        )
        markdown = gate_markdown(gate, models, baseline.models if baseline is not None else None, suite.name)
        store.write_file(lineage.release_id, GATE_MARKDOWN_FILE, markdown)
        try:
            # On an object store nothing else keeps two writers of a new release apart (no lock between machines).
            path = store.write_scores(document, only_if_absent=store.remote and not force)
        except FileExistsError:
            raise InputError(
                Problem(
                    file=display_path(store.scores_path(lineage.release_id)),
                    field="release_id",
                    message=f"release '{lineage.release_id}' was finished meanwhile by another writer "
                    "(use --force to replace it)",
                )
            ) from None
        warehouse.publish(lineage.release_id)
    qualifies = promotable(document)
    if not qualifies and store.was_promoted(suite.name, lineage.release_id):
        store.withdraw(suite.name, lineage.release_id)
    promoted = False
    if promote:
        promoted, document = store.promote_document(document)
    return PublishedRelease(
        scores=document, gate=gate, promoted=promoted, commit=commit, scores_path=path, gate_markdown=markdown
    )
