"""The release store: Parquet per table per release, committed atomically, with DuckDB views over all of it.

Layout under ``<data_dir>/warehouse/`` (DESIGN §3)::

    <table>/release_id=<id>/part-<attempt>.parquet   # data files, one per table and release
    _commits/<id>.json                               # the commit record: which files make up the release
    toolchoice.duckdb                                # views over every committed release
    _schema/<table>.parquet                          # empty files giving each view its columns before any release
    _tmp/<attempt>/                                  # a writer's files before they are committed
    .lock                                            # one writer at a time (filelock)

How a release is written (:meth:`Warehouse.write_release`), all under the lock:

1. every table is written to ``_tmp/<attempt>/`` and fsynced;
2. the files are renamed into their ``release_id=<id>`` directories under a name unique to this attempt;
3. **commit point**: ``_commits/<id>.json`` is replaced atomically (temp file, fsync, rename);
4. a copy of ``toolchoice.duckdb`` is brought up to date with the commit records (only the records that changed
   since it was built are read) and renamed over the old one, so a reader opening it (read-only) sees every
   table of a release or none of them;
5. the files of a replaced attempt (a re-run under ``--force``) are deleted.

The views are defined once, over a glob of each table's data files joined to the committed files listed in the
DuckDB file (``_files``), so committing a release costs the same with 10 or 1,000 releases stored: nothing of an
earlier release is read. They are defined anew only when the declared columns change or the file is unreadable.

A writer killed at any point leaves the committed releases and the DuckDB file as they were; files it left
behind belong to no commit record and are never in a view; the next writer of that release removes them, and a
DuckDB file that lags behind a commit record is brought up to date by the next writer or :meth:`Warehouse.connect`.
At an object-store URL (``TOOLCHOICE_WAREHOUSE_URL``) the layout is the same and the commit differs: see
:class:`Warehouse` and docs/scale.md.
Readers should go through the views or :meth:`Warehouse.read_table`, which read committed files only, rather than
globbing the directories.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
from filelock import FileLock

from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.object_store import (
    WAREHOUSE_URL_VARIABLE,
    cache_name,
    download,
    is_url,
    listing_stamps,
    object_root,
    read_parquet,
    read_parquet_footer,
    upload,
    write_object,
    write_parquet_object,
)
from toolchoice_pipeline.releases.request import RELEASE_ID
from toolchoice_pipeline.releases.warehouse_tables import SCHEMAS, TABLE_NAMES, conform
from toolchoice_pipeline.releases.warehouse_views import DERIVED_VIEWS
from toolchoice_pipeline.util.atomic import fsync_dir, write_file_atomically
from toolchoice_pipeline.util.duckdb_memory import memory_connection
from toolchoice_pipeline.util.errors import InputError, Problem, display_path

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

DUCKDB_FILE = "toolchoice.duckdb"
COMMITS_DIR = "_commits"
SCHEMA_DIR = "_schema"
TMP_DIR = "_tmp"
LOCK_FILE = ".lock"
PART_PREFIX = "part-"
LOCK_TIMEOUT_S = 600.0
# The views are defined for these columns (and this derived view): a DuckDB file built for others is built anew
# (DuckDB refuses a view whose columns changed under it).
VIEWS_VERSION = hashlib.sha256(
    ("|".join(f"{name}:{SCHEMAS[name].empty_table().schema}" for name in TABLE_NAMES) + "".join(DERIVED_VIEWS)).encode()
).hexdigest()[:16]


@dataclass(frozen=True)
class ReleaseCommit:
    """The commit record of one release: its lineage, kind and the files (relative to the warehouse root)."""

    release_id: str
    suite: str
    catalog_version: str
    run_id: str
    kind: str
    attempt: str
    committed_at: str
    files: dict[str, str]
    rows: dict[str, int] = field(default_factory=dict)
    #: False from the warehouse commit until the release's scores.json is written (:meth:`Warehouse.publish`):
    #: the views list published commits only, so they never show a release the CLI calls unfinished.
    published: bool = True

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ReleaseCommit:
        return cls(**json.loads(text))


def _write_parquet(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd")
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _staged_rows(name: str, path: Path) -> int:
    """The rows of a staged table file; ``ValueError`` when its columns are not the declared ones of ``name``."""
    schema = pq.read_schema(path)
    if not schema.equals(SCHEMAS[name], check_metadata=False):
        raise ValueError(f"staged table {name} ({path}) does not have the declared columns of {name}")
    return pq.read_metadata(path).num_rows


def _move(source: Path, target: Path) -> None:
    """Rename ``source`` to ``target``; copied (and fsynced) when they are on different file systems."""
    try:
        os.replace(source, target)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        shutil.copyfile(source, target)
        with open(target, "rb") as handle:
            os.fsync(handle.fileno())
        source.unlink()


def _read_commit(path: Path) -> ReleaseCommit:
    """A commit record; raises :class:`InputError` naming the file when it is damaged."""
    try:
        commit = ReleaseCommit.from_json(path.read_text(encoding="utf-8"))
        if not all(isinstance(name, str) for name in commit.files.values()):
            raise TypeError("files")
        return commit
    except (ValueError, TypeError, AttributeError):  # bad JSON or UTF-8, missing or unknown keys, wrong types
        raise InputError(
            Problem(file=display_path(path), message="damaged commit record of the warehouse: restore it from a backup")
        ) from None


def _meta(con: DuckDBPyConnection, key: str) -> str | None:
    """A value of the DuckDB file's ``_meta`` table (None when missing, or in a file from before ``_meta``)."""
    import duckdb

    try:
        row = con.execute("SELECT value FROM _meta WHERE key = ?", [key]).fetchone()
    except duckdb.CatalogException:
        return None
    return row[0] if row else None


def _views_version(con: DuckDBPyConnection) -> str | None:
    """The :data:`VIEWS_VERSION` a DuckDB file was built for."""
    return _meta(con, "views_version")


def _create_tables(con: DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE _meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO _meta VALUES ('views_version', ?)", [VIEWS_VERSION])
    con.execute(
        "CREATE TABLE _committed (release_id VARCHAR, suite VARCHAR, catalog_version VARCHAR, "
        "run_id VARCHAR, kind VARCHAR, attempt VARCHAR, committed_at VARCHAR, stamp VARCHAR)"
    )
    con.execute("CREATE TABLE _files (release_id VARCHAR, table_name VARCHAR, path VARCHAR)")


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@contextmanager
def _attached(con: DuckDBPyConnection, path: Path, read_only: bool = False) -> Iterator[None]:
    """``path`` attached to ``con`` (a connection to an in-memory database) as its default database: unqualified
    names are the file's, as in a connection of its own; checkpointed (unless ``read_only``) and detached after."""
    alias = f"views_{uuid.uuid4().hex}"  # attached databases are the whole database's: a name of its own
    con.execute(f"ATTACH {_sql_string(str(path))} AS {alias}{' (READ_ONLY)' if read_only else ''}")
    try:
        con.execute(f"USE {alias}")
        yield
        if not read_only:
            con.execute(f"CHECKPOINT {alias}")
    finally:
        con.execute("USE memory")  # the in-memory database's own name
        con.execute(f"DETACH {alias}")


class Warehouse:
    """The Parquet + DuckDB store under ``<data_dir>/warehouse``, or under an object-store URL.

    ``url`` (default: the ``TOOLCHOICE_WAREHOUSE_URL`` environment variable, else ``<data_dir>/warehouse``) is a
    local path or an fsspec URL (``s3://bucket/prefix``, ``gs://``, ``az://``; credentials and endpoint from the
    environment, as the provider's fsspec package reads them). On an object store (see :mod:`.object_store`)
    data files are written straight under their unique names, the commit record of a new release by a
    conditional write (refused if another writer committed that release first) instead of the file lock, and
    the DuckDB file is kept in a local cache (``<data_dir>/.warehouse_cache/``) and uploaded beside the Parquet.
    """

    def __init__(self, data_dir: Path, url: str | None = None):
        self.data_dir = Path(data_dir)
        url = url if url is not None else os.environ.get(WAREHOUSE_URL_VARIABLE) or None
        self.remote = url is not None and is_url(url)
        if url is not None and self.remote:
            self.root = object_root(url)
            self.cache = self.data_dir / ".warehouse_cache" / cache_name(url)
        else:
            self.root = Path(url) if url else self.data_dir / "warehouse"
            self.cache = self.root

    @property
    def duckdb_path(self) -> Path:
        """The DuckDB file a reader opens (on an object store: the local cache's copy)."""
        return self.cache / DUCKDB_FILE

    def _lock(self) -> FileLock:
        """One writer at a time of this data dir's files (on an object store: of the local DuckDB cache only)."""
        self.cache.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.cache / LOCK_FILE), timeout=LOCK_TIMEOUT_S)

    # --- reading ---------------------------------------------------------------------------------------------

    def commits(self) -> list[ReleaseCommit]:
        """Every committed release, oldest commit first."""
        directory = self.root / COMMITS_DIR
        if not directory.is_dir():
            return []
        found = [_read_commit(p) for p in directory.glob("*.json")]
        return sorted(found, key=lambda c: (c.committed_at, c.release_id))

    def commit(self, release_id: str) -> ReleaseCommit | None:
        """The commit record of ``release_id``, or None when the release is not committed."""
        path = self.root / COMMITS_DIR / f"{release_id}.json"
        if self.remote:
            self.root.fs.invalidate_cache(path.path)  # another machine may have committed it since
        return _read_commit(path) if path.is_file() else None

    def read_table(self, table: str, release_id: str, columns: list[str] | None = None) -> pa.Table:
        """One committed release's rows of ``table`` (from its committed file only).

        Raises :class:`InputError` when the release is not in the warehouse.
        """
        return read_parquet(self.root / self._committed(release_id).files[table], columns=columns)

    def table_shape(self, table: str, release_id: str) -> tuple[list[str], int]:
        """One committed release's column names and row count of ``table``, from its file's footer (no row is
        read). Raises :class:`InputError` when the release is not in the warehouse."""
        path = self.root / self._committed(release_id).files[table]
        if isinstance(path, Path):
            metadata = pq.read_metadata(path)
        else:
            with path.open("rb") as handle:
                metadata = pq.read_metadata(handle)
        return metadata.schema.to_arrow_schema().names, metadata.num_rows

    def _committed(self, release_id: str) -> ReleaseCommit:
        commit = self.commit(release_id)
        if commit is None:
            raise InputError(
                Problem(
                    file=display_path(self.root / COMMITS_DIR),
                    message=f"release '{release_id}' is not in the warehouse",
                )
            )
        return commit

    def check(self, release_ids: Iterable[str] | None = None) -> None:
        """Raise :class:`InputError` listing every damaged commit record and every committed Parquet file that is
        missing or unreadable (its footer is read), of ``release_ids`` (default: every release).

        A run checks what it will read (its baseline) before it starts, not after its spend; only those releases,
        so its cost does not grow with the releases stored.
        """
        problems = []
        if release_ids is None:
            commits = self.commits()
        else:
            commits = [c for c in (self.commit(r) for r in release_ids) if c is not None]
        for commit in commits:
            for relative in commit.files.values():
                path = self.root / relative
                try:
                    read_parquet_footer(path)
                except FileNotFoundError:
                    problems.append(
                        Problem(
                            file=display_path(path),
                            message=f"Parquet file of release "
                            f"'{commit.release_id}' is missing: restore it from a backup",
                        )
                    )
                except (pa.ArrowException, OSError) as exc:
                    problems.append(
                        Problem(
                            file=display_path(path),
                            message=f"Parquet file of release "
                            f"'{commit.release_id}' is damaged ({exc}): restore it from a backup",
                        )
                    )
        if problems:
            raise InputError(problems)

    def connect(self) -> DuckDBPyConnection:
        """A read-only DuckDB connection to the views (brought up to date first if a writer died before)."""
        import duckdb

        if self._views_stale():
            with self._lock():
                self._install_views(self._updated_views())
        con = duckdb.connect(str(self.duckdb_path), read_only=True)
        if self.remote:
            con.register_filesystem(self.root.fs)  # the views read s3://... through fsspec
        return con

    def _record_stamps(self) -> dict[str, str]:
        """``{release_id: stamp}`` of every commit record, from a directory listing (no record is read): a
        record that changed has another stamp (size and modification time in nanoseconds)."""
        directory = self.root / COMMITS_DIR
        if self.remote:
            return listing_stamps(directory)
        if not directory.is_dir():
            return {}
        stamps = {}
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.name.endswith(".json") and not entry.name.startswith("."):
                    stat = entry.stat()
                    stamps[entry.name[: -len(".json")]] = f"{stat.st_size}-{stat.st_mtime_ns}"
        return stamps

    def _views_stale(self) -> bool:
        import duckdb

        con = memory_connection()
        try:
            with _attached(con, self.duckdb_path, read_only=True):
                if _views_version(con) != VIEWS_VERSION or _meta(con, "views_root") != self._views_root():
                    return True
                shown = dict(con.execute("SELECT release_id, stamp FROM _committed").fetchall())
        except duckdb.Error:
            return True
        finally:
            con.close()
        return shown != self._record_stamps()

    # --- writing ---------------------------------------------------------------------------------------------

    def write_release(
        self,
        lineage: Lineage,
        tables: dict[str, pa.Table],
        *,
        kind: str,
        replace: bool = False,
        published: bool = True,
        staged: Mapping[str, Path] | None = None,
    ) -> ReleaseCommit:
        """Commit one release's tables atomically (see the module docstring); returns its commit record.

        With ``published=False`` the release stays out of the views until :meth:`publish` (the publisher writes
        ``scores.json`` in between).

        ``tables`` maps every name of :data:`TABLE_NAMES` to an Arrow table carrying ``lineage``, except those in
        ``staged``: Parquet files of the declared schema already written (and fsynced) for ``lineage`` where their
        rows were made (:class:`~.staged_tables.TableFiles`), which are committed by renaming them into place (on
        an object store, uploaded). Raises :class:`InputError` when the release is already committed and
        ``replace`` is False (nothing is committed then), ``ValueError`` for a missing table or rows that do not
        match the declared schema or ``lineage``. Reads nothing of other releases.
        """
        if not RELEASE_ID.match(lineage.release_id):
            raise InputError(
                Problem(
                    file="<release>",
                    field="release_id",
                    message=f"release id {lineage.release_id!r} is not a safe directory name",
                )
            )
        staged = dict(staged or {})
        missing = [name for name in TABLE_NAMES if name not in tables and name not in staged]
        if missing:
            raise ValueError(f"write_release needs every table; missing {missing}")
        conformed = {name: conform(name, tables[name], lineage) for name in TABLE_NAMES if name not in staged}
        rows = {name: table.num_rows for name, table in conformed.items()}
        rows.update({name: _staged_rows(name, path) for name, path in staged.items()})
        attempt = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:10]
        if self.remote:  # no rename between machines: the staged files are uploaded like the others
            conformed.update({name: pq.read_table(path) for name, path in staged.items()})
            return self._write_release_to_object_store(lineage, conformed, kind, replace, attempt, published)
        with self._lock():
            previous = self.commit(lineage.release_id)
            self._remove_leftovers(lineage.release_id, previous)
            if previous is not None and not replace:
                raise self._already_committed(lineage.release_id, "is already in the warehouse")
            staging = self.root / TMP_DIR / attempt
            written = {}
            for name, table in conformed.items():
                written[name] = staging / name / f"{PART_PREFIX}{attempt}.parquet"
                _write_parquet(table, written[name])
            for path in written.values():
                fsync_dir(path.parent)
            files = {}
            for name, path in {**written, **staged}.items():  # the staged ones were fsynced where they were made
                placed = Path(name) / f"release_id={lineage.release_id}" / f"{PART_PREFIX}{attempt}.parquet"
                target = self.root / placed
                target.parent.mkdir(parents=True, exist_ok=True)
                _move(path, target)
                fsync_dir(target.parent)
                files[name] = placed.as_posix()
            commit = ReleaseCommit(
                **lineage.columns(),
                kind=kind,
                attempt=attempt,
                committed_at=datetime.now(UTC).isoformat(timespec="microseconds"),
                files=files,
                rows=rows,
                published=published,
            )
            write_file_atomically(self.root / COMMITS_DIR / f"{lineage.release_id}.json", commit.to_json())
            # The views show published commits only: a commit kept out of them, replacing none that they showed,
            # leaves them as they are (its :meth:`publish` builds them), so they are built once per release.
            if published or (previous is not None and previous.published) or not self.duckdb_path.is_file():
                self._install_views(self._updated_views())
            if previous is not None:
                for relative in previous.files.values():
                    (self.root / relative).unlink(missing_ok=True)
            shutil.rmtree(staging, ignore_errors=True)
            try:
                staging.parent.rmdir()
            except OSError:
                pass
        return commit

    def publish(self, release_id: str) -> None:
        """Show a release committed with ``published=False`` in the views (after its ``scores.json``)."""
        self._show(release_id, True)

    def unpublish(self, release_id: str) -> None:
        """Take a published release out of the views again, its tables kept (a run interrupted after publishing
        and before its promotion: the next run of the release replaces them)."""
        self._show(release_id, False)

    def _show(self, release_id: str, shown: bool) -> None:
        commit = self.commit(release_id)
        if commit is None or commit.published == shown:
            return
        record = self.root / COMMITS_DIR / f"{release_id}.json"
        published = dataclasses.replace(commit, published=shown).to_json()
        if self.remote:
            write_object(record, published, only_if_absent=False)
            with self._lock():
                views = self._updated_views()
                upload(views, self.root / DUCKDB_FILE)
                self._install_views(views)
            return
        with self._lock():
            write_file_atomically(record, published)
            self._install_views(self._updated_views())

    def _already_committed(self, release_id: str, what: str) -> InputError:
        return InputError(
            Problem(
                file=display_path(self.root / COMMITS_DIR / f"{release_id}.json"),
                field="release_id",
                message=f"release '{release_id}' {what} (use --force to replace it)",
            )
        )

    def _write_release_to_object_store(
        self,
        lineage: Lineage,
        conformed: dict[str, pa.Table],
        kind: str,
        replace: bool,
        attempt: str,
        published: bool = True,
    ) -> ReleaseCommit:
        """:meth:`write_release` on an object store: no lock between writers. Data files go straight to their
        unique names; the commit record of a new release is written only if absent (a writer that loses the race
        removes its files and raises :class:`InputError`); a replaced record is overwritten (one writer per
        release id at a time: the partition's run). Then the DuckDB file is updated and uploaded."""
        release_id = lineage.release_id
        previous = self.commit(release_id)
        if previous is not None and not replace:
            raise self._already_committed(release_id, "is already in the warehouse")
        files = {}
        for name, table in conformed.items():
            relative = f"{name}/release_id={release_id}/{PART_PREFIX}{attempt}.parquet"
            write_parquet_object(table, self.root / relative)
            files[name] = relative
        commit = ReleaseCommit(
            **lineage.columns(),
            kind=kind,
            attempt=attempt,
            committed_at=datetime.now(UTC).isoformat(timespec="microseconds"),
            files=files,
            rows={n: t.num_rows for n, t in conformed.items()},
            published=published,
        )
        try:
            write_object(
                self.root / COMMITS_DIR / f"{release_id}.json", commit.to_json(), only_if_absent=previous is None
            )
        except FileExistsError:
            for relative in files.values():
                (self.root / relative).unlink(missing_ok=True)
            raise self._already_committed(release_id, "was committed meanwhile by another writer") from None
        with self._lock():
            views = self._updated_views()
            upload(views, self.root / DUCKDB_FILE)
            self._install_views(views)
        if previous is not None:
            for relative in previous.files.values():
                (self.root / relative).unlink(missing_ok=True)
        return commit

    def _install_views(self, tmp: Path) -> None:
        """Rename a DuckDB file built by :meth:`_updated_views` over ``toolchoice.duckdb``."""
        try:
            os.replace(tmp, self.duckdb_path)
            fsync_dir(self.cache)
        finally:
            tmp.unlink(missing_ok=True)

    def _updated_views(self) -> Path:
        """A new DuckDB file (a temp file next to ``toolchoice.duckdb``) showing every commit record.

        A copy of the current file with the rows of changed commit records replaced (only those are read);
        built anew, with its views, when there is none, it cannot be read or it was built for other columns.
        The file is attached to an in-memory database (:func:`memory_connection`) rather than opened as a database
        of its own, which would cost about 20 ms of CPU more per release.
        """

        tmp = self.cache / f".{DUCKDB_FILE}.{uuid.uuid4().hex[:8]}.tmp"
        self.cache.mkdir(parents=True, exist_ok=True)
        # A file system registered for s3:// is the whole database's: an object store's views get one of their own.
        con = memory_connection(own=self.remote)
        try:
            if self.remote:
                con.register_filesystem(self.root.fs)
            fresh = not self._copy_current(con, tmp)
            with _attached(con, tmp):
                if fresh:
                    _create_tables(con)
                shown = dict(con.execute("SELECT release_id, stamp FROM _committed").fetchall())
                stamps = self._record_stamps()
                changed = [r for r, stamp in stamps.items() if shown.get(r) != stamp]
                gone = [r for r in shown if r not in stamps]
                for release_id in [*changed, *gone]:
                    con.execute("DELETE FROM _committed WHERE release_id = ?", [release_id])
                    con.execute("DELETE FROM _files WHERE release_id = ?", [release_id])
                for release_id in changed:
                    commit = _read_commit(self.root / COMMITS_DIR / f"{release_id}.json")
                    if not commit.published:  # shown once :meth:`publish` marks it (after its scores.json)
                        continue
                    con.execute(
                        "INSERT INTO _committed VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [
                            commit.release_id,
                            commit.suite,
                            commit.catalog_version,
                            commit.run_id,
                            commit.kind,
                            commit.attempt,
                            commit.committed_at,
                            stamps[release_id],
                        ],
                    )
                    con.executemany(
                        "INSERT INTO _files VALUES (?, ?, ?)",
                        [(release_id, name, relative) for name, relative in commit.files.items()],
                    )
                if fresh or _meta(con, "views_over") != "data" or _meta(con, "views_root") != self._views_root():
                    self._create_views(con)
            with open(tmp, "rb") as handle:
                os.fsync(handle.fileno())
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        finally:
            con.close()
            Path(f"{tmp}.wal").unlink(missing_ok=True)
        return tmp

    def _copy_current(self, con: DuckDBPyConnection, tmp: Path) -> bool:
        """Copy ``toolchoice.duckdb`` (on an object store: the cache's, else the uploaded one) to ``tmp``; False
        (and no ``tmp``) when there is none or it does not open with this code's views."""
        import duckdb

        if self.duckdb_path.is_file():
            shutil.copyfile(self.duckdb_path, tmp)
        elif not (self.remote and download(self.root / DUCKDB_FILE, tmp)):  # a new cache: the uploaded copy
            return False
        try:
            with _attached(con, tmp, read_only=True):
                if _views_version(con) == VIEWS_VERSION:
                    return True
        except duckdb.Error:
            pass
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)
        return False

    def _create_views(self, con: DuckDBPyConnection) -> None:
        """One view per table over the glob of its data files (plus the empty schema file, which gives the view
        every declared column), keeping the rows of committed files only; ``releases`` over ``_committed``."""
        root = self._views_root()
        over_data = True
        for name in TABLE_NAMES:
            schema = self._schema_file(name)
            sources = [_sql_string(str(schema) if self.remote else schema.resolve().as_posix())]
            # DuckDB refuses a glob that matches nothing: before the first release a view shows the schema only.
            if any((self.root / name).glob(f"release_id=*/{PART_PREFIX}*.parquet")):
                sources.append(_sql_string(f"{root}/{name}/release_id=*/{PART_PREFIX}*.parquet"))
            else:
                over_data = False
            con.execute(
                f"CREATE OR REPLACE VIEW {name} AS SELECT * EXCLUDE (filename) FROM read_parquet([{', '.join(sources)}], "
                "hive_partitioning = false, union_by_name = true, filename = true) "
                f"WHERE filename IN (SELECT {_sql_string(root + '/')} || path FROM _files "
                f"WHERE table_name = {_sql_string(name)})"
            )
        con.execute("INSERT OR REPLACE INTO _meta VALUES ('views_over', ?)", ["data" if over_data else "schema"])
        con.execute("INSERT OR REPLACE INTO _meta VALUES ('views_root', ?)", [root])
        con.execute(
            "CREATE OR REPLACE VIEW releases AS SELECT release_id, suite, catalog_version, run_id, kind, "
            "committed_at FROM _committed"
        )
        for view in DERIVED_VIEWS:
            con.execute(view)

    def _views_root(self) -> str:
        """The absolute location the views read the data files under. A data directory copied or moved with its
        files' times kept (``cp -a``, ``rsync -a``) holds views over the old one until they are made anew."""
        return str(self.root) if self.remote else self.root.resolve().as_posix()

    def _schema_file(self, name: str) -> Path:
        path = self.root / SCHEMA_DIR / f"{name}.parquet"
        if self.remote:
            if not path.exists():
                write_parquet_object(SCHEMAS[name].empty_table(), path)
            return path
        if not path.exists():
            tmp = path.with_name(f".{name}.{uuid.uuid4().hex[:8]}.tmp")
            _write_parquet(SCHEMAS[name].empty_table(), tmp)
            os.replace(tmp, path)
        return path

    def _remove_leftovers(self, release_id: str, commit: ReleaseCommit | None) -> None:
        """Delete what killed writers left: staging directories, temp files, and ``release_id``'s data files that
        ``commit`` (its commit record) does not list. Other releases' directories are not listed."""
        shutil.rmtree(self.root / TMP_DIR, ignore_errors=True)
        committed = {self.root / relative for relative in (commit.files.values() if commit else ())}
        for name in TABLE_NAMES:
            for path in (self.root / name / f"release_id={release_id}").glob(f"{PART_PREFIX}*.parquet"):
                if path not in committed:
                    path.unlink(missing_ok=True)
        for pattern in (f".{DUCKDB_FILE}.*.tmp*", f"{COMMITS_DIR}/.*.tmp"):
            for path in self.cache.glob(pattern):
                path.unlink(missing_ok=True)
