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
3. a new ``toolchoice.duckdb`` is built in a temp file, listing exactly the committed files and this attempt's
   (a committed file that is missing or damaged fails the write here, before anything is committed);
4. **commit point**: ``_commits/<id>.json`` is replaced atomically (temp file, fsync, rename), then the new
   DuckDB file is renamed over the old one, so a reader opening it (read-only) sees every table of a release or
   none of them;
5. the files of a replaced attempt (a re-run under ``--force``) are deleted.

The publisher (``releases.store.publish_release``) commits with ``published=False``: the views leave the release
out until its ``scores.json`` is written and :meth:`Warehouse.publish` marks the commit published, so the views
never list a release the CLI calls unfinished.

A writer killed at any point leaves the committed releases and the DuckDB file as they were; files it left
behind belong to no commit record, are never in a view, and are removed by the next writer. Readers should
go through the views or :meth:`Warehouse.read_table`, which list committed files only, rather than globbing
the directories.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
import dataclasses
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from filelock import FileLock

from toolchoice_pipeline.util.errors import InputError, Problem, display_path
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.util.atomic import fsync_dir, write_file_atomically
from toolchoice_pipeline.releases.request import RELEASE_ID
from toolchoice_pipeline.releases.warehouse_tables import SCHEMAS, TABLE_NAMES, conform

DUCKDB_FILE = "toolchoice.duckdb"
COMMITS_DIR = "_commits"
SCHEMA_DIR = "_schema"
TMP_DIR = "_tmp"
LOCK_FILE = ".lock"
PART_PREFIX = "part-"
LOCK_TIMEOUT_S = 600.0


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
    def from_json(cls, text: str) -> "ReleaseCommit":
        return cls(**json.loads(text))


def _write_parquet(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd")
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _read_commit(path: Path) -> ReleaseCommit:
    """A commit record; raises :class:`InputError` naming the file when it is damaged."""
    try:
        commit = ReleaseCommit.from_json(path.read_text(encoding="utf-8"))
        if not all(isinstance(name, str) for name in commit.files.values()):
            raise TypeError("files")
        return commit
    except (ValueError, TypeError, AttributeError):  # bad JSON or UTF-8, missing or unknown keys, wrong types
        raise InputError(Problem(file=display_path(path), message="damaged commit record of the warehouse: "
                                                                  "restore it from a backup")) from None


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class Warehouse:
    """The Parquet + DuckDB store under ``<data_dir>/warehouse``."""

    def __init__(self, data_dir: Path):
        self.data_dir = Path(data_dir)
        self.root = self.data_dir / "warehouse"

    @property
    def duckdb_path(self) -> Path:
        return self.root / DUCKDB_FILE

    def _lock(self) -> FileLock:
        self.root.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.root / LOCK_FILE), timeout=LOCK_TIMEOUT_S)

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
        return _read_commit(path) if path.is_file() else None

    def read_table(self, table: str, release_id: str, columns: list[str] | None = None) -> pa.Table:
        """One committed release's rows of ``table`` (from its committed file only).

        Raises :class:`InputError` when the release is not in the warehouse.
        """
        commit = self.commit(release_id)
        if commit is None:
            raise InputError(Problem(file=display_path(self.root / COMMITS_DIR),
                                     message=f"release '{release_id}' is not in the warehouse"))
        return pq.read_table(self.root / commit.files[table], columns=columns)

    def check(self) -> None:
        """Raise :class:`InputError` listing every damaged commit record and every committed Parquet file that is
        missing or unreadable (its footer is read); a run checks this before it starts, not after its spend."""
        problems = []
        for commit in self.commits():
            for relative in commit.files.values():
                path = self.root / relative
                try:
                    pq.read_metadata(path)
                except FileNotFoundError:
                    problems.append(Problem(file=display_path(path), message=f"Parquet file of release "
                                            f"'{commit.release_id}' is missing: restore it from a backup"))
                except (pa.ArrowException, OSError) as exc:
                    problems.append(Problem(file=display_path(path), message=f"Parquet file of release "
                                            f"'{commit.release_id}' is damaged ({exc}): restore it from a backup"))
        if problems:
            raise InputError(problems)

    def connect(self):
        """A read-only DuckDB connection to the views (rebuilt first if a writer died before refreshing them)."""
        import duckdb

        if not self.duckdb_path.exists() or self._views_stale():
            with self._lock():
                self._refresh_views()
        return duckdb.connect(str(self.duckdb_path), read_only=True)

    def _views_stale(self) -> bool:
        import duckdb

        try:
            with duckdb.connect(str(self.duckdb_path), read_only=True) as con:
                shown = {tuple(row) for row in con.execute("SELECT release_id, attempt FROM _committed").fetchall()}
        except duckdb.Error:
            return True
        return shown != {(c.release_id, c.attempt) for c in self.commits() if c.published}

    # --- writing ---------------------------------------------------------------------------------------------

    def write_release(self, lineage: Lineage, tables: dict[str, pa.Table], *, kind: str,
                      replace: bool = False, published: bool = True) -> ReleaseCommit:
        """Commit one release's tables atomically (see the module docstring); returns its commit record.

        With ``published=False`` the release stays out of the views until :meth:`publish` (the publisher writes
        ``scores.json`` in between).

        ``tables`` maps every name of :data:`TABLE_NAMES` to an Arrow table carrying ``lineage``. Raises
        :class:`InputError` when the release is already committed and ``replace`` is False or a committed file
        of another release is missing or damaged (nothing is committed then), ``ValueError`` for a missing table
        or rows that do not match the declared schema or ``lineage``.
        """
        if not RELEASE_ID.match(lineage.release_id):
            raise InputError(Problem(file="<release>", field="release_id",
                                     message=f"release id {lineage.release_id!r} is not a safe directory name"))
        missing = [name for name in TABLE_NAMES if name not in tables]
        if missing:
            raise ValueError(f"write_release needs every table; missing {missing}")
        conformed = {name: conform(name, tables[name], lineage) for name in TABLE_NAMES}
        attempt = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:10]
        with self._lock():
            self._remove_leftovers()
            previous = self.commit(lineage.release_id)
            if previous is not None and not replace:
                raise InputError(Problem(
                    file=display_path(self.root / COMMITS_DIR / f"{lineage.release_id}.json"), field="release_id",
                    message=f"release '{lineage.release_id}' is already in the warehouse (use --force to replace it)"))
            staging = self.root / TMP_DIR / attempt
            staged = {}
            for name, table in conformed.items():
                staged[name] = staging / name / f"{PART_PREFIX}{attempt}.parquet"
                _write_parquet(table, staged[name])
            for path in staged.values():
                fsync_dir(path.parent)
            files = {}
            for name, path in staged.items():
                relative = Path(name) / f"release_id={lineage.release_id}" / path.name
                target = self.root / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)
                fsync_dir(target.parent)
                files[name] = relative.as_posix()
            commit = ReleaseCommit(**lineage.columns(), kind=kind, attempt=attempt,
                                   committed_at=datetime.now(timezone.utc).isoformat(timespec="microseconds"),
                                   files=files, rows={n: t.num_rows for n, t in conformed.items()},
                                   published=published)
            # The views are built before the commit point: a committed file that is missing or damaged fails
            # here, leaving no commit record that the views cannot show.
            others = [c for c in self.commits() if c.release_id != lineage.release_id and c.published]
            views = self._build_views([*others, commit] if published else others)
            write_file_atomically(self.root / COMMITS_DIR / f"{lineage.release_id}.json", commit.to_json())
            self._install_views(views)
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
        with self._lock():
            commit = self.commit(release_id)
            if commit is None or commit.published:
                return
            commit = dataclasses.replace(commit, published=True)
            others = [c for c in self.commits() if c.release_id != release_id and c.published]
            views = self._build_views([*others, commit])
            write_file_atomically(self.root / COMMITS_DIR / f"{release_id}.json", commit.to_json())
            self._install_views(views)

    def _refresh_views(self) -> None:
        self._install_views(self._build_views([c for c in self.commits() if c.published]))

    def _install_views(self, tmp: Path) -> None:
        """Rename a DuckDB file built by :meth:`_build_views` over ``toolchoice.duckdb``."""
        try:
            os.replace(tmp, self.duckdb_path)
            fsync_dir(self.root)
        finally:
            tmp.unlink(missing_ok=True)

    def _build_views(self, commits: list[ReleaseCommit]) -> Path:
        """A new DuckDB file (a temp file next to ``toolchoice.duckdb``) with views over ``commits``' files.

        Raises :class:`InputError` when a committed Parquet file is missing or damaged.
        """
        import duckdb

        tmp = self.root / f".{DUCKDB_FILE}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            with duckdb.connect(str(tmp)) as con:
                for name in TABLE_NAMES:
                    paths = [self.root / c.files[name] for c in commits if name in c.files]
                    if not paths:
                        paths = [self._schema_file(name)]
                    listing = ", ".join(_sql_string(str(p.resolve())) for p in paths)
                    con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet([{listing}], "
                                "hive_partitioning = false, union_by_name = true)")
                con.execute("CREATE TABLE _committed (release_id VARCHAR, suite VARCHAR, catalog_version VARCHAR, "
                            "run_id VARCHAR, kind VARCHAR, attempt VARCHAR, committed_at VARCHAR)")
                if commits:
                    con.executemany("INSERT INTO _committed VALUES (?, ?, ?, ?, ?, ?, ?)",
                                    [(c.release_id, c.suite, c.catalog_version, c.run_id, c.kind, c.attempt,
                                      c.committed_at) for c in commits])
                con.execute("CREATE VIEW releases AS SELECT release_id, suite, catalog_version, run_id, kind, "
                            "committed_at FROM _committed")
                con.execute("CHECKPOINT")
            with open(tmp, "rb") as handle:
                os.fsync(handle.fileno())
        except (duckdb.IOException, duckdb.InvalidInputException) as exc:
            tmp.unlink(missing_ok=True)
            reason = str(exc).splitlines()[0]
            raise InputError(Problem(file=display_path(self.root), message=f"a committed Parquet file is missing "
                                     f"or damaged ({reason}); restore it from a backup")) from None
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        finally:
            Path(f"{tmp}.wal").unlink(missing_ok=True)
        return tmp

    def _schema_file(self, name: str) -> Path:
        path = self.root / SCHEMA_DIR / f"{name}.parquet"
        if not path.exists():
            tmp = path.with_name(f".{name}.{uuid.uuid4().hex[:8]}.tmp")
            _write_parquet(SCHEMAS[name].empty_table(), tmp)
            os.replace(tmp, path)
        return path

    def _remove_leftovers(self) -> None:
        """Delete what killed writers left: staging directories, uncommitted data files, temp files."""
        shutil.rmtree(self.root / TMP_DIR, ignore_errors=True)
        committed = {self.root / relative for c in self.commits() for relative in c.files.values()}
        for path in self._data_files():
            if path not in committed:
                path.unlink(missing_ok=True)
        for pattern in (f".{DUCKDB_FILE}.*.tmp*", f"{COMMITS_DIR}/.*.tmp"):
            for path in self.root.glob(pattern):
                path.unlink(missing_ok=True)

    def _data_files(self) -> Iterator[Path]:
        for name in TABLE_NAMES:
            yield from (self.root / name).glob(f"release_id=*/{PART_PREFIX}*.parquet")
