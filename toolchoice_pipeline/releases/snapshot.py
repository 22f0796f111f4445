"""The pinned release snapshot: everything a release evaluates, resolved once, ``releases/<id>/snapshot.json``.

The first asset of a release partition resolves the request (``request.json``), the suite (merged catalog:
curated + live dumps, tasks, matching profile) and the run configuration (models, params, judge, polls, cache
policy) into one :class:`ReleaseSnapshot` and pins it. Every later asset works from the snapshot it is given,
never from the suite or configuration files, so an edit after the snapshot (mid-run, or before a later
re-materialisation of one asset) never changes a release that exists: a new catalog is a new partition.

The pin is kept while the request's evaluating fields (:data:`EVALUATING_FIELDS`) stay the same; a new
request that evaluates something else for the same id (``toolchoice run --force --models ...``) resolves anew.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolchoice_pipeline.releases.object_store import is_remote, read_whole, write_whole
from toolchoice_pipeline.releases.request import ReleaseRequest, read_request, request_path
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.config import CachePolicy, RunConfig, load_run_config
from toolchoice_pipeline.suites.model import Suite, SuiteSpec
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline.suites.tasks import Task
from toolchoice_pipeline.util.atomic import fsync_dir
from toolchoice_pipeline.util.canonical import short_hash
from toolchoice_pipeline.util.errors import InputError, Problem, display_path, pydantic_problems
from toolchoice_pipeline.util.json_text import load_json
from toolchoice_pipeline.util.yaml_lines import read_utf8

SNAPSHOT_FILE = "snapshot.json"
#: The request fields that change what a release evaluates; the others (kind, force, who, when) only how it
#: is published.
EVALUATING_FIELDS = ("suite", "models", "judge", "cache_policy")


class ReleaseSnapshot(BaseModel):
    """One release's pinned inputs and their versions (12-hex ``catalog_version`` / ``fixture_version``).

    ``config`` is the run configuration already narrowed to this release's models; ``cache_policy`` the one the
    agent calls use (the request's, else the configuration's).
    """

    model_config = ConfigDict(extra="forbid")

    release_id: str
    request: ReleaseRequest
    suite_spec: SuiteSpec
    suite_directory: str
    curated: list[ToolDefinition]
    live: list[ToolDefinition]
    tasks: list[Task]
    task_lines: dict[str, int] = Field(default_factory=dict)
    config: RunConfig
    cache_policy: CachePolicy
    catalog_version: str
    fixture_version: str
    resolved_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @property
    def suite_name(self) -> str:
        return self.suite_spec.name

    def suite(self, tasks: Sequence[Task] | None = None) -> Suite:
        """The suite as pinned, or with ``tasks`` (some of the pinned ones). The tasks are not copied: a
        snapshot loaded from staging reads them from their file when they are used."""
        return Suite(
            spec=self.suite_spec,
            directory=Path(self.suite_directory),
            curated=list(self.curated),
            live=list(self.live),
            tasks=self.tasks if tasks is None else tasks,  # type: ignore[arg-type]
            task_lines=dict(self.task_lines),
        )

    def content_version(self) -> str:
        """12-hex hash of what the release evaluates: the pinned inputs and the request's evaluating fields (not
        when they were resolved, nor the kind)."""
        evaluating = {name: getattr(self.request, name) for name in EVALUATING_FIELDS}
        return short_hash(
            {
                "request": evaluating,
                **self.model_dump(mode="json", exclude={"request", "resolved_at", "suite_directory"}),
            }
        )

    def evaluates_as(self, request: ReleaseRequest) -> bool:
        """Whether ``request`` asks for what this snapshot evaluates (same :data:`EVALUATING_FIELDS`)."""
        return all(getattr(self.request, name) == getattr(request, name) for name in EVALUATING_FIELDS)


def snapshot_path(data_dir: Path, release_id: str) -> Path:
    return request_path(data_dir, release_id).with_name(SNAPSHOT_FILE)


def resolve_snapshot(data_dir: Path, request: ReleaseRequest) -> ReleaseSnapshot:
    """Read the suite and the run configuration as they are now. Raises :class:`InputError` for bad input."""
    suite = load_suite(data_dir, request.suite)
    config = load_run_config(data_dir).for_suite(request.models, suite.spec.models).with_repeats(request.repeats)
    try:
        config = config.with_gate_models(request.gate_models)
    except ValueError as exc:
        raise InputError(
            Problem(
                file=display_path(request_path(data_dir, request.release_id)), field="gate_models", message=str(exc)
            )
        ) from None
    return ReleaseSnapshot(
        release_id=request.release_id,
        request=request,
        suite_spec=suite.spec,
        suite_directory=str(suite.directory),
        curated=suite.curated,
        live=suite.live,
        tasks=suite.tasks,
        task_lines=suite.task_lines,
        config=config,
        cache_policy=request.cache_policy or config.cache.policy,
        catalog_version=suite.catalog_version,
        fixture_version=suite.fixture_version,
    )


def read_snapshot(data_dir: Path, release_id: str) -> ReleaseSnapshot | None:
    """The pinned snapshot of ``release_id``, or None before its first asset ran. Raises :class:`InputError` for
    a damaged file."""
    path = snapshot_path(data_dir, release_id)
    text = read_whole(path) if is_remote(path) else read_utf8(path) if path.is_file() else None
    if text is None:
        return None
    shown = display_path(path)
    try:
        return ReleaseSnapshot.model_validate(load_json(text, shown))
    except ValidationError as exc:
        raise InputError(pydantic_problems(exc, file=shown)) from None


def pin_snapshot(data_dir: Path, release_id: str) -> tuple[ReleaseSnapshot, bool]:
    """The release's snapshot, pinned: ``(snapshot, resolved_now)``.

    An existing pin that evaluates what the current request asks is returned as it is (with the current
    request's kind and force); otherwise the inputs are resolved from the files now and pinned. Two runs
    pinning one id at once agree on the first pin written (exclusive create).
    """
    request = read_request(data_dir, release_id)
    pinned = read_snapshot(data_dir, release_id)
    if pinned is not None and pinned.evaluates_as(request):
        return pinned.model_copy(update={"request": request}), False
    replace, pinned = pinned is not None, None  # the old pin's tasks are not held while the new ones load
    snapshot = resolve_snapshot(data_dir, request)
    if _write_pin(snapshot_path(data_dir, release_id), snapshot.model_dump_json(indent=1), replace=replace):
        return snapshot, True
    return read_snapshot(data_dir, release_id) or snapshot, True


def _write_pin(path: Path, text: str, *, replace: bool) -> bool:
    """Write ``text`` to ``path`` atomically; without ``replace`` only when no pin exists (a concurrent first
    pin wins, and this one is dropped). Returns whether ``text`` is the pin now."""
    if is_remote(path):
        try:
            write_whole(path, text, only_if_absent=not replace)
        except FileExistsError:
            return False
        return True
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    try:
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)
    return True
