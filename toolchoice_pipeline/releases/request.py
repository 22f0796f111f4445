"""What a release partition evaluates: ``releases/<id>/request.json``, written when the partition is added.

The CLI, the nightly schedule and the catalog-change sensor each write one before they request a run; a
partition added in the UI gets one from the launchpad's run configuration (``defs/launchpad.py``), or its run
is refused. The first asset pins what the request asks into a snapshot (``snapshot.py``), so a partition
re-materialised later evaluates the same inputs. :func:`read_request` of a partition with no request returns
defaults derived from its key (``nightly-...`` is kind ``nightly``, ``catalog-...`` kind ``catalog-change``,
anything else ``adhoc``, on the default suite) for readers that only report.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolchoice_pipeline.releases.object_store import is_remote, read_whole, releases_root, write_whole
from toolchoice_pipeline.suites.config import MAX_REPEATS, CachePolicy
from toolchoice_pipeline.util.errors import InputError, Problem, display_path, pydantic_problems
from toolchoice_pipeline.util.json_text import load_json
from toolchoice_pipeline.util.text_files import read_utf8

ReleaseKind = Literal["release", "nightly", "catalog-change", "adhoc"]
RELEASE_KINDS: tuple[str, ...] = ("release", "nightly", "catalog-change", "adhoc")
RELEASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")  # a partition key and a directory name
DEFAULT_SUITE = "coding_agent"
REQUEST_FILE = "request.json"


class ReleaseRequest(BaseModel):
    """One release's identity and settings. ``models`` None = the suite's or the run configuration's models;
    ``gate_models`` None = the models the configuration gates (``gate: false`` excluded), else only these."""

    model_config = ConfigDict(extra="forbid")

    release_id: str
    kind: ReleaseKind = "adhoc"
    suite: str = DEFAULT_SUITE
    models: list[str] | None = None
    repeats: int | None = Field(default=None, ge=1, le=MAX_REPEATS)
    gate_models: list[str] | None = None
    judge: bool = True
    cache_policy: CachePolicy | None = None
    force: bool = False
    requested_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    requested_by: str = "cli"


def check_release_id(release_id: str) -> str:
    """Return ``release_id`` if usable as a partition key and a directory name; else raise :class:`InputError`."""
    if not RELEASE_ID.match(release_id or ""):
        raise InputError(
            Problem(
                file="<command line>",
                field="release",
                message=f"release id {release_id!r} must be 1-128 characters of letters, digits, "
                "'.', '_' or '-', starting with a letter or digit",
            )
        )
    return release_id


def kind_from_key(release_id: str) -> ReleaseKind:
    """The kind a partition key implies when it has no request file."""
    if release_id.startswith("nightly-"):
        return "nightly"
    if release_id.startswith("catalog-"):
        return "catalog-change"
    return "adhoc"


def request_path(data_dir: Path, release_id: str) -> Path:
    """``releases/<id>/request.json`` (under ``$TOOLCHOICE_RELEASES_URL`` when set: then a UPath)."""
    return releases_root(data_dir) / release_id / REQUEST_FILE


def has_request(data_dir: Path, release_id: str) -> bool:
    """Whether the release has a ``request.json`` (on an object store: asked of the store now, not of a listing
    cached by this process)."""
    path = request_path(data_dir, release_id)
    if is_remote(path):
        path.fs.invalidate_cache(path.parent.path)
    return path.is_file()


def write_request(data_dir: Path, request: ReleaseRequest) -> Path:
    """Write the request atomically (:func:`~toolchoice_pipeline.util.atomic.write_file_atomically`: temp file, fsync, rename)."""

    check_release_id(request.release_id)
    path = request_path(data_dir, request.release_id)
    write_whole(path, request.model_dump_json(indent=2))
    return path


def read_request(data_dir: Path, release_id: str) -> ReleaseRequest:
    """The stored request, or defaults derived from the key. Raises :class:`InputError` for a broken file (read
    strictly, as every JSON input is: :func:`~.json_text.load_json`)."""
    path = request_path(data_dir, release_id)
    text = read_whole(path) if is_remote(path) else read_utf8(path) if path.exists() else None
    if text is None:
        return ReleaseRequest(release_id=release_id, kind=kind_from_key(release_id), requested_by="dagster-ui")
    shown = display_path(path)
    data = load_json(text, shown)
    try:
        return ReleaseRequest.model_validate(data)
    except ValidationError as exc:
        raise InputError(pydantic_problems(exc, file=shown)) from None
