"""The warehouse's operations on an object store, through fsspec and UPath (``s3://``, ``gs://``, ``az://``...).

Objects appear whole when their upload completes, so data files are written straight under their unique names
(no staging and rename); a commit record of a new release is written only if absent (S3 ``If-None-Match``
through the filesystem's ``xb`` mode), which replaces the file lock between machines. Credentials and endpoints
come from the environment as the provider's fsspec package reads them (for S3: ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL``...); nothing secret is stored.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

import pyarrow as pa
import pyarrow.parquet as pq

from toolchoice_pipeline.util.atomic import write_file_atomically

if TYPE_CHECKING:
    from upath import UPath

WAREHOUSE_URL_VARIABLE = "TOOLCHOICE_WAREHOUSE_URL"


def is_url(location: str) -> bool:
    """Whether ``location`` names an object store (``scheme://...``) rather than a local path."""
    return "://" in location and not location.startswith("file://")


def object_root(url: str) -> Any:
    """The warehouse root at ``url`` as a UPath (its ``fs`` is the fsspec filesystem)."""
    from upath import UPath

    return UPath(url.rstrip("/"))


def cache_name(url: str) -> str:
    """A directory name for the local cache of the warehouse at ``url``."""
    return hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:16]


def listing_stamps(directory: Any) -> dict[str, str]:
    """``{name without .json: stamp}`` of the ``*.json`` objects under ``directory``, from one listing (the
    object's size and ETag, or modification time where the store has no ETag)."""
    fs = directory.fs
    path = directory.path
    fs.invalidate_cache(path)
    try:
        entries = fs.ls(path, detail=True)
    except FileNotFoundError:
        return {}
    stamps = {}
    for entry in entries:
        name = entry["name"].rstrip("/").rsplit("/", 1)[-1]
        if entry.get("type") == "file" and name.endswith(".json") and not name.startswith("."):
            tag = entry.get("ETag") or entry.get("etag") or entry.get("mtime") or entry.get("LastModified")
            stamps[name[: -len(".json")]] = f"{entry.get('size')}-{tag}"
    return stamps


def read_parquet(path: Any, columns: list[str] | None = None) -> pa.Table:
    """A Parquet file at a local path or a UPath."""
    if isinstance(path, Path):
        return pq.read_table(path, columns=columns)
    with path.open("rb") as handle:
        return pq.read_table(handle, columns=columns)


def read_parquet_footer(path: Any) -> None:
    """Read the footer of a Parquet file (raises ``FileNotFoundError``, ``OSError`` or ``ArrowException``)."""
    if isinstance(path, Path):
        pq.read_metadata(path)
        return
    with path.open("rb") as handle:
        pq.read_metadata(handle)


def write_parquet_object(table: pa.Table, path: Any) -> None:
    """Upload ``table`` as one Parquet object (visible whole or not at all)."""
    with path.open("wb") as handle:
        pq.write_table(table, handle, compression="zstd")


def write_object(path: Any, text: str, *, only_if_absent: bool) -> None:
    """Upload ``text``; with ``only_if_absent`` raise ``FileExistsError`` when the object exists (a conditional
    write, decided by the store)."""
    with path.open("xb" if only_if_absent else "wb") as handle:
        handle.write(text.encode("utf-8"))


def download(path: Any, local: Path) -> bool:
    """Copy the object at ``path`` to ``local``; False when there is none."""
    try:
        with path.open("rb") as source, open(local, "wb") as target:
            shutil.copyfileobj(source, target)
    except FileNotFoundError:
        return False
    return True


def upload(local: Path, path: Any) -> None:
    """Copy ``local`` to the object at ``path`` (replaced whole)."""
    with open(local, "rb") as source, path.open("wb") as target:
        shutil.copyfileobj(source, target)


RELEASES_URL_VARIABLE = "TOOLCHOICE_RELEASES_URL"


def releases_root(data_dir: Path) -> Any:
    """Where release files live: ``$TOOLCHOICE_RELEASES_URL`` (an object-store URL as a UPath, or a local path),
    else ``<data_dir>/releases``."""
    configured = os.environ.get(RELEASES_URL_VARIABLE, "").strip()
    if not configured:
        return Path(data_dir) / "releases"
    return object_root(configured) if is_url(configured) else Path(configured).expanduser()


def warehouse_url(data_dir: Path) -> str | None:
    """The warehouse's object-store URL (``$TOOLCHOICE_WAREHOUSE_URL`` when it is one), else None."""
    configured = os.environ.get(WAREHOUSE_URL_VARIABLE, "").strip()
    return configured if configured and is_url(configured) else None


def is_remote(path: Any) -> TypeGuard[UPath]:
    """Whether ``path`` is on an object store (a UPath), not a local ``Path``."""
    return not isinstance(path, Path)


def write_whole(path: Any, text: str, *, only_if_absent: bool = False) -> None:
    """Write ``text`` so a reader sees the old content or the new, never a part: locally temp file, fsync and
    rename (exclusive create with ``only_if_absent``); on an object store one upload (conditional with
    ``only_if_absent``). Raises ``FileExistsError`` when ``only_if_absent`` and the file exists."""
    if is_remote(path):
        write_object(path, text, only_if_absent=only_if_absent)
    elif only_if_absent:
        write_exclusively(path, text)
    else:
        write_file_atomically(path, text)


def write_exclusively(path: Path, text: str) -> None:
    """Write a new local file whole (temp file, then a hard link that fails if ``path`` exists)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_whole(path: Any) -> str | None:
    """The text of a file or object (None when there is none); an object store's listing cache is bypassed, since
    another machine may have written it since."""
    if is_remote(path):
        path.fs.invalidate_cache(path.path)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def location_problem(variable: str) -> str | None:
    """Why the store location in the environment variable ``variable`` (``TOOLCHOICE_WAREHOUSE_URL``,
    ``TOOLCHOICE_RELEASES_URL``) cannot be used, or None: a control character; a URL whose scheme fsspec does
    not know, whose package is not installed, or that names no bucket (``s3://``)."""
    from toolchoice_pipeline.util.identifiers import control_character

    configured = os.environ.get(variable, "").strip()
    if not configured:
        return None
    found = control_character(configured)
    if found is not None:
        return f"{configured!r} holds {found}"
    if not is_url(configured):
        return None
    import fsspec

    scheme, _, rest = configured.partition("://")
    try:
        fsspec.get_filesystem_class(scheme)
    except ValueError:
        return f"{configured!r}: unknown storage scheme {scheme!r} (use s3://, gs://, az:// or a local path)"
    except ImportError as exc:
        return f"{configured!r}: the package for {scheme}:// is not installed ({exc})"
    if not rest.strip("/"):
        return f"{configured!r} names no bucket or container (e.g. {scheme}://bucket/prefix)"
    return None
