"""The launchpad's run configuration of ``release_snapshot``: what a partition without a request evaluates.

``toolchoice run``, the schedule and the sensor write ``releases/<id>/request.json`` before they launch; a
partition added in the UI has none, so its first run must say what it evaluates::

    ops:
      release_snapshot:
        config: {suite: coding_agent, kind: adhoc, models: [local/bm25-router], judge: true}

Without ``suite`` and ``kind`` such a run is refused with one message (never silent defaults). For a partition
that has a request, the launchpad may only repeat it: a different suite, kind, models or judge is refused (a new
evaluation is a new partition).
"""

from __future__ import annotations

import typing
from pathlib import Path

import dagster as dg

from toolchoice_pipeline.releases.request import (
    RELEASE_KINDS,
    ReleaseRequest,
    has_request,
    read_request,
    write_request,
)
from toolchoice_pipeline.suites.config import CachePolicy
from toolchoice_pipeline.util.errors import InputError, Problem

CACHE_POLICIES: tuple[str, ...] = typing.get_args(CachePolicy)

FIELDS = ("suite", "kind", "models", "judge", "cache_policy")


class LaunchpadRequest(dg.Config):
    """What a release partition without ``request.json`` evaluates (run config of ``release_snapshot``)."""

    suite: str | None = None
    kind: str | None = None
    models: list[str] | None = None
    judge: bool | None = None
    #: The agent cache policy (the nightly schedule's runs: write_only); None: the run configuration's.
    cache_policy: str | None = None
    #: Who asked (recorded in the request); not compared with an existing request.
    requested_by: str = "dagster-ui"

    def given(self) -> dict:
        return {name: getattr(self, name) for name in FIELDS if getattr(self, name) is not None}

    def write_if_new(self, data_dir: Path, release_id: str) -> None:
        """Write the partition's request from this configuration when it has none; check it otherwise.

        Raises :class:`InputError` (field ``release_snapshot.config``) when a partition without a request gets
        no suite or kind, an unknown kind, or when the configuration contradicts an existing request.
        """
        given = self.given()
        where = f"<launchpad: release {release_id}>"
        if has_request(data_dir, release_id):
            stored = read_request(data_dir, release_id)
            differing = sorted(name for name, value in given.items() if getattr(stored, name) != value)
            if differing:
                raise InputError(
                    Problem(
                        file=where,
                        field="ops.release_snapshot.config",
                        message=(
                            f"release {release_id} already has a request ({', '.join(differing)} differ): a partition "
                            "evaluates what it was started with; add a new partition to evaluate something else"
                        ),
                    )
                )
            return
        if self.suite is None or self.kind is None:
            raise InputError(
                Problem(
                    file=where,
                    field="ops.release_snapshot.config",
                    message=(
                        f"release {release_id} has no request: give ops.release_snapshot.config.suite and .kind (and "
                        "optionally models, judge) in the launchpad, or start it with `toolchoice run`"
                    ),
                )
            )
        if self.kind not in RELEASE_KINDS:
            raise InputError(
                Problem(
                    file=where,
                    field="ops.release_snapshot.config.kind",
                    message=f"kind {self.kind!r} is not one of {', '.join(RELEASE_KINDS)}",
                )
            )
        if self.cache_policy is not None and self.cache_policy not in CACHE_POLICIES:
            raise InputError(
                Problem(
                    file=where,
                    field="ops.release_snapshot.config.cache_policy",
                    message=f"cache policy {self.cache_policy!r} is not one of {', '.join(CACHE_POLICIES)}",
                )
            )
        write_request(data_dir, ReleaseRequest(release_id=release_id, requested_by=self.requested_by, **given))
