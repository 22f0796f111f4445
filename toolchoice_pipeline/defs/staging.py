"""Staged stage outputs: lists of pydantic records as Parquet, per asset and release partition.

Stage outputs are staged under ``warehouse/_staging/release_id=<id>/`` (never visible through the DuckDB
views); the ``release_scores`` asset commits the release's warehouse tables all at once. A stage output is
either one file, ``<asset>.parquet``, or, for the sharded stages, one file per shard in ``<asset>/`` listed by
``<asset>.manifest.json`` in shard order. Each staged file holds one ``record`` JSON column and names the
record class in its schema metadata, so it loads back into the same pydantic models. Downstream stages read
them as :class:`StagedRecords`, a sequence that streams the files a row group at a time, so no stage holds a
whole release of records. This module has no Dagster import: the IO manager and the CLI share it.

When the warehouse is on an object store (``TOOLCHOICE_WAREHOUSE_URL=s3://...``) staging is there too, under
``<warehouse url>/_staging/release_id=<id>/`` (same layout), so steps on other machines read what a step
staged: each file is uploaded whole (an object appears when its upload completes: no temp name, no rename)
and read through the store's fsspec filesystem. Locally files are written to a temp name and renamed, as
before. Paths are ``Path`` locally and ``UPath`` on a store (:func:`location` turns either back from a string).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from toolchoice_pipeline.releases.object_store import (
    download,
    is_remote,
    is_url,
    object_root,
    read_whole,
    upload,
    warehouse_url,
    write_whole,
)

RECORD_TYPE_KEY = b"toolchoice.record_type"
BATCH_ROWS = 2048
SINGLE_RECORD_KEY = b"toolchoice.single_record"
APART_KEY = b"toolchoice.staged_apart"


def staging_root(data_dir: Path) -> Any:
    """``<warehouse url>/_staging`` when the warehouse is on an object store, else ``<data_dir>/warehouse/_staging``."""
    url = warehouse_url(data_dir)
    return object_root(url) / "_staging" if url else Path(data_dir) / "warehouse" / "_staging"


def staging_dir(data_dir: Path, release_id: str) -> Any:
    return staging_root(data_dir) / f"release_id={release_id}"


def location(text: str | Path | Any) -> Any:
    """A staged file's path from its string form: a ``UPath`` for an object-store URL, else a ``Path``."""
    if isinstance(text, Path) or not isinstance(text, str):
        return text
    return object_root(text) if is_url(text) else Path(text)


@contextlib.contextmanager
def shard_journal(
    data_dir: Path,
    release_id: str,
    asset: str,
    shard_key: str,
    *,
    journal: Path,
    table: str,
    models: Iterable[str],
    task_ids: Iterable[str],
) -> Iterator[None]:
    """Keep one shard's rows of a host's SQLite journal (``journal``, table ``table``) on the object store while
    the shard runs, when staging is there; locally nothing to do (the host's journal is the journal).

    On a store the shard's rows are an object, ``<staging>/journal/<asset>/<shard>.sqlite``: merged into the
    host's journal before the shard runs (if a try before left one), and written again from the host's journal
    after it, whether it finished or failed (the rows journaled under the release for the shard's models and
    tasks), so a retry of the shard on any machine asks none of the calls journaled. A machine that dies
    mid-shard uploads nothing: its retry asks again what that try asked.
    """
    from toolchoice_pipeline.util.sqlite_rows import extract_rows, merge_rows

    staging = staging_dir(data_dir, release_id)
    if not is_remote(staging):
        yield
        return
    stored = staging / "journal" / asset / f"{shard_key}.sqlite"
    local = Path(data_dir) / "cache" / "shards" / f"release_id={release_id}" / asset / f"{shard_key}.sqlite"
    local.parent.mkdir(parents=True, exist_ok=True)
    local.unlink(missing_ok=True)
    models, task_ids = list(models), list(task_ids)
    try:
        if download(stored, local):
            merge_rows(journal, local, table)
        yield
    finally:
        if extract_rows(journal, local, table, resume_key=release_id, models=models, task_ids=task_ids):
            upload(local, stored)
        local.unlink(missing_ok=True)


#: Fields that say how a record was obtained, not what it holds, per record class name: left out of its data
#: version (an episode served from the call journal is the episode the provider gave).
UNVERSIONED: dict[str, Any] = {"Episode": {"steps": {"__all__": {"cache_hit"}}}}


class RowsDigest:
    """The data version of a set of records, whatever order they come in: the SHA-256 of their rows' SHA-256s
    sorted (a canonical order), each row hashed as its JSON less the :data:`UNVERSIONED` fields. Holds 32 bytes
    per row. Feed it with :meth:`add`; :meth:`hexdigest` gives 64 hex."""

    def __init__(self) -> None:
        self._rows: list[bytes] = []

    def add(self, record: BaseModel, text: str | None = None) -> None:
        """Count ``record``; ``text`` is its ``model_dump_json()`` when the caller has it already."""
        exclude = UNVERSIONED.get(type(record).__name__)
        if exclude is not None or text is None:
            text = record.model_dump_json(exclude=exclude)
        self._rows.append(hashlib.sha256(text.encode()).digest())

    def hexdigest(self) -> str:
        total = hashlib.sha256()
        for row in sorted(self._rows):
            total.update(row)
        return total.hexdigest()


def rows_version(records: Iterable[BaseModel]) -> str:
    """:class:`RowsDigest` of ``records``, 12 hex (a shard's or a small output's data version)."""
    digest = RowsDigest()
    for record in records:
        digest.add(record)
    return digest.hexdigest()[:12]


def _parquet_file(path: Any) -> pq.ParquetFile:
    if is_remote(path):
        return pq.ParquetFile(path.path, filesystem=path.fs)
    return pq.ParquetFile(path)


def staged_path(data_dir: Path, release_id: str, name: str) -> Path:
    return staging_dir(data_dir, release_id) / f"{name}.parquet"


def manifest_path(data_dir: Path, release_id: str, name: str) -> Path:
    return staging_dir(data_dir, release_id) / f"{name}.manifest.json"


def shard_path(data_dir: Path, release_id: str, name: str, shard_key: str) -> Path:
    return staging_dir(data_dir, release_id) / name / f"{shard_key}.parquet"


def apart_path(path: Path, field: str) -> Path:
    """The file of a single record's list field staged apart (see :func:`write_records`)."""
    return path.with_name(f"{path.name.removesuffix('.parquet')}.{field}.parquet")


def write_records(
    path: Path,
    records: BaseModel | Iterable[BaseModel],
    record_type: type[BaseModel],
    digest: RowsDigest | None = None,
    apart: str | None = None,
) -> int:
    """Write ``records`` (an iterable, or one record read back as one) atomically (temp file + rename),
    :data:`BATCH_ROWS` at a time, so only one batch of JSON text is held besides the records; returns the row
    count. ``digest`` is fed each record, for a data version of a streamed output (independent of row order).
    On an object store the file is uploaded whole under its name (no rename).

    ``apart`` names a list field of a single record staged in its own file (:func:`apart_path`), a row per
    item, and read back as :class:`StagedRecords`: a step that loads the record then reads only the items it
    uses (the release snapshot's tasks: a shard reads its block)."""
    remote = is_remote(path)
    if not remote:
        path.parent.mkdir(parents=True, exist_ok=True)
    single = isinstance(records, BaseModel)
    extra: dict[bytes, bytes] = {SINGLE_RECORD_KEY: b"1"} if single else {}
    if single and apart is not None:
        assert isinstance(records, BaseModel)
        items = getattr(records, apart)
        item_type = type(items[0]) if len(items) else _item_type(record_type, apart)
        write_records(apart_path(path, apart), items, item_type)
        records = records.model_copy(update={apart: []})
        extra[APART_KEY] = apart.encode()
    records = [records] if isinstance(records, BaseModel) else records
    qualified = f"{record_type.__module__}:{record_type.__qualname__}".encode()
    schema = pa.schema([pa.field("record", pa.string())], metadata={RECORD_TYPE_KEY: qualified, **extra})
    if remote:
        # An upload appears whole when its handle closes; one that failed midway is discarded, never closed.
        handle = path.open("wb")
        try:
            with pq.ParquetWriter(handle, schema) as writer:
                rows = _write_batches(writer, records, schema, digest)
        except BaseException:
            if hasattr(handle, "discard"):  # fsspec's buffered files: abort the upload, then nothing left to close
                handle.discard()
                # fsspec's files keep ``closed`` as a plain attribute; io's stubs declare a read-only property.
                handle.closed = True  # type: ignore[misc]
            else:
                handle.close()
            raise
        handle.close()
        return rows
    tmp = path.with_suffix(".parquet.tmp")
    with pq.ParquetWriter(tmp, schema) as writer:
        rows = _write_batches(writer, records, schema, digest)
    with open(tmp, "rb") as written:
        os.fsync(written.fileno())
    os.replace(tmp, path)
    return rows


def _write_batches(
    writer: pq.ParquetWriter, records: Iterable[BaseModel], schema: pa.Schema, digest: RowsDigest | None
) -> int:
    rows = 0
    batch: list[str] = []
    for record in records:
        text = record.model_dump_json()
        if digest is not None:
            digest.add(record, text)
        batch.append(text)
        if len(batch) == BATCH_ROWS:
            writer.write_table(pa.table({"record": batch}, schema=schema))
            rows += len(batch)
            batch = []
    if batch or rows == 0:
        writer.write_table(pa.table({"record": batch}, schema=schema))
        rows += len(batch)
    return rows


def read_records(path: Path) -> Any:
    """Load the records written by :func:`write_records` back into their pydantic class (a list, or the one
    record written alone), one row group of JSON text at a time."""
    parquet = _parquet_file(path)  # opened once: its metadata, then its rows
    metadata = parquet.schema_arrow.metadata or {}
    records = list(_records_of(parquet))
    if metadata.get(SINGLE_RECORD_KEY) != b"1":
        return records
    record = records[0]
    if APART_KEY in metadata:
        field = metadata[APART_KEY].decode()
        # set without validation: the field reads its items from their file when used
        record.__dict__[field] = StagedRecords([apart_path(path, field)])
    return record


def _item_type(record_type: type[BaseModel], field: str) -> type[BaseModel]:
    """The item class of ``record_type``'s ``list[Item]`` field ``field``."""
    (item,) = record_type.model_fields[field].annotation.__args__  # type: ignore[union-attr]
    return item


def write_manifest(data_dir: Path, release_id: str, name: str, files: list[Any]) -> Any:
    """List a sharded stage output's files (in shard order); replaces ``<name>.parquet``."""
    root = str(staging_dir(data_dir, release_id)).rstrip("/") + "/"
    relative = [str(f)[len(root) :] if str(f).startswith(root) else Path(f).relative_to(root).as_posix() for f in files]
    path = manifest_path(data_dir, release_id, name)
    write_whole(path, json.dumps({"files": relative}, indent=1))
    staged_path(data_dir, release_id, name).unlink(missing_ok=True)
    return path


def is_single_record(path: Any) -> bool:
    """Whether a staged file holds one record written alone (e.g. the release snapshot), not a list."""
    return (_parquet_file(path).schema_arrow.metadata or {}).get(SINGLE_RECORD_KEY) == b"1"


def staged_files(data_dir: Path, release_id: str, name: str) -> list[Any]:
    """The files of a staged output: those its manifest lists, else its one ``<name>.parquet``."""
    manifest = manifest_path(data_dir, release_id, name)
    text = read_whole(manifest) if is_remote(manifest) else manifest.read_text("utf-8") if manifest.is_file() else None
    if text is not None:
        root = staging_dir(data_dir, release_id)
        return [root / relative for relative in json.loads(text)["files"]]
    return [staged_path(data_dir, release_id, name)]


def iter_records(path: Any) -> Iterator[BaseModel]:
    """The records of one staged file, a row group of JSON text at a time."""
    yield from _records_of(_parquet_file(path))


def _records_of(parquet: pq.ParquetFile) -> Iterator[BaseModel]:
    record_type = _record_type(parquet)
    for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=["record"]):
        yield from (record_type.model_validate_json(text) for text in batch.column(0).to_pylist())


def _record_type(parquet: pq.ParquetFile) -> type[BaseModel]:
    """The record class a staged file names in its schema metadata."""
    module_name, _, qualname = (parquet.schema_arrow.metadata or {})[RECORD_TYPE_KEY].decode().partition(":")
    return getattr(importlib.import_module(module_name), qualname)


#: A stage output as a step receives it: :class:`StagedRecords` in a run, a plain list when an asset is called
#: directly. Left untyped for Dagster: it would type-check a ``Sequence[...]`` input as a list.
Records = Any


#: The block of rows read last by a slice: ``(key, rows)``. One block at most (a shard's tasks), so memory stays
#: flat; the rows are shared by the readers, which do not change records.
_last_block: tuple[tuple, list] | None = None


def _block_key(files: list[Any], start: int, stop: int) -> tuple | None:
    """What a block's rows depend on: the range and each file's path, inode, size and modification time (a
    rewritten file is another file); None when a file is remote or missing (not cached)."""
    identity = []
    for path in files:
        if is_remote(path):
            return None
        try:
            status = os.stat(path)
        except OSError:
            return None
        identity.append((str(path), status.st_ino, status.st_size, status.st_mtime_ns))
    return (start, stop, *identity)


class StagedRecords(Sequence):
    """The records of a staged stage output, read from its files when iterated (never all held at once).

    ``len()`` reads the files' footers; an index or a slice reads only the row groups that hold it (any other
    indexing reads every record once and keeps them); ``parts()`` gives one :class:`StagedRecords` per file (per
    shard). Compares equal to a list of the same records.
    """

    def __init__(self, files: list[Any]):
        self.files = [location(f) for f in files]
        self._length: int | None = None
        self._held: list | None = None

    def __iter__(self) -> Iterator[Any]:
        if self._held is not None:
            yield from self._held
            return
        for path in self.files:
            yield from iter_records(path)

    def __len__(self) -> int:
        if self._length is None:
            self._length = sum(_parquet_file(path).metadata.num_rows for path in self.files)
        return self._length

    def __getitem__(self, index):
        if self._held is not None:
            return self._held[index]
        if isinstance(index, slice) and index.step in (None, 1):
            return self._rows(*index.indices(len(self))[:2])
        if isinstance(index, int):
            position = index + len(self) if index < 0 else index
            found = self._read_rows(position, position + 1)
            if not found:
                raise IndexError(index)
            return found[0]
        self._held = list(self)
        return self._held[index]

    def _rows(self, start: int, stop: int) -> list:
        """Rows ``[start, stop)`` across the files, reading only the row groups that hold them; the same block of
        the same unchanged local files asked again (the next model's shard of those tasks, their scoring) is
        served from the block read last."""
        global _last_block
        key = _block_key(self.files, start, stop)
        if key is not None and _last_block is not None and _last_block[0] == key:
            return list(_last_block[1])
        found = self._read_rows(start, stop)
        _last_block = (key, found) if key is not None else None
        return list(found)

    def _read_rows(self, start: int, stop: int) -> list:
        found: list = []
        first = 0  # index of the current row group's first row
        for path in self.files:
            if first >= stop:
                break  # the files after the range are not opened
            parquet = _parquet_file(path)
            record_type = _record_type(parquet)
            for group in range(parquet.num_row_groups):
                rows = parquet.metadata.row_group(group).num_rows
                if first < stop and first + rows > start:
                    texts = parquet.read_row_group(group, columns=["record"]).column(0).to_pylist()
                    lo, hi = max(start - first, 0), min(stop - first, rows)
                    found.extend(record_type.model_validate_json(text) for text in texts[lo:hi])
                first += rows
        return found

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StagedRecords | list):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"StagedRecords({len(self.files)} files)"

    def parts(self) -> list[StagedRecords]:
        return [StagedRecords([path]) for path in self.files]


def read_staged(data_dir: Path, release_id: str, name: str) -> StagedRecords:
    """A release's staged stage output ``name`` (one file or a manifest of shards), read when iterated."""
    return StagedRecords(staged_files(data_dir, release_id, name))
