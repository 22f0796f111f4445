"""The ``toolchoice/*`` run tags: the same on every launch path.

``toolchoice run``, the ``catalog_change`` sensor and the ``nightly_eval`` schedule tag their runs when they
request them; a run launched from the UI (the launchpad, "Materialize", a backfill, ``__ASSET_JOB``) carries
none. So every asset that reads the pinned snapshot adds the missing ones to its run (:func:`tag_run`) from the
release's request: whichever way a run was launched, it ends with ``toolchoice/release``, ``toolchoice/kind``,
``toolchoice/suite`` and ``toolchoice/requested_by`` (filter runs by them in the UI's Runs page).
``toolchoice run`` also adds ``toolchoice/host`` and ``toolchoice/pid`` (:mod:`~.dead_runs`).
"""

from __future__ import annotations

import dagster as dg

from toolchoice_pipeline.releases.snapshot import ReleaseSnapshot

RELEASE_TAG_KEYS = ("toolchoice/release", "toolchoice/kind", "toolchoice/suite", "toolchoice/requested_by")


def release_tags(release_id: str, *, kind: str, suite: str, requested_by: str) -> dict[str, str]:
    """The release's identity as run tags (:data:`RELEASE_TAG_KEYS`)."""
    return dict(zip(RELEASE_TAG_KEYS, (release_id, kind, suite, requested_by), strict=True))


def tag_run(context: dg.AssetExecutionContext | dg.OpExecutionContext, snapshot: ReleaseSnapshot) -> None:
    """Add to the step's run the release tags it lacks (those a launch path set are kept as they are)."""
    request = snapshot.request
    wanted = release_tags(
        snapshot.release_id, kind=request.kind, suite=snapshot.suite_name, requested_by=request.requested_by
    )
    try:
        run = context.run
    except dg.DagsterError:  # an asset called directly (unit tests): no run to tag
        return
    missing = {key: value for key, value in wanted.items() if key not in run.tags}
    if missing:
        context.instance.add_run_tags(run.run_id, missing)
