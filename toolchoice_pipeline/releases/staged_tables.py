"""The warehouse tables of a release written where their rows are made: ``agent_calls``, ``judge_votes`` and
``task_scores`` are built as Arrow once, shard by shard, where the episodes and votes are scored (the Dagster
``task_scores`` asset), and written to one Parquet file each beside the release's staged records; publishing then
commits those files by rename (:meth:`~.warehouse.Warehouse.write_release`, ``staged``) instead of building the
tables again from the records.

``<directory>/<table>.parquet`` per table, fsynced, and ``<directory>/tables.json`` written last (atomically): the
lineage the rows carry and their counts. Files without it, or with another lineage (the tables were staged by
another run than the one publishing), are not used.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.warehouse_tables import SCHEMAS, conform
from toolchoice_pipeline.util.atomic import fsync_dir, write_file_atomically

#: The tables built where the episodes and votes are scored.
STAGED_TABLES = ("agent_calls", "judge_votes", "task_scores")
MANIFEST = "tables.json"


class TableFiles:
    """Writers of :data:`STAGED_TABLES` under ``directory`` for ``lineage``: :meth:`append` a shard's rows of a
    table (conformed to its declared schema and checked to carry ``lineage``), :meth:`close` to finish them."""

    def __init__(self, directory: Path, lineage: Lineage):
        self.directory = Path(directory)
        self.lineage = lineage
        self.rows = dict.fromkeys(STAGED_TABLES, 0)
        (self.directory / MANIFEST).unlink(missing_ok=True)  # the files below are not whole until it is written
        self.directory.mkdir(parents=True, exist_ok=True)
        self._writers = {
            name: pq.ParquetWriter(self.path(name), SCHEMAS[name], compression="zstd") for name in STAGED_TABLES
        }

    def path(self, name: str) -> Path:
        return self.directory / f"{name}.parquet"

    def append(self, name: str, table: pa.Table) -> None:
        conformed = conform(name, table, self.lineage)
        self._writers[name].write_table(conformed)
        self.rows[name] += conformed.num_rows

    def close(self) -> dict[str, Path]:
        """Close and fsync the files, then write the manifest; returns ``{table: file}``."""
        for writer in self._writers.values():
            writer.close()
        for name in STAGED_TABLES:
            with open(self.path(name), "rb") as handle:
                os.fsync(handle.fileno())
        fsync_dir(self.directory)
        manifest = {"lineage": self.lineage.columns(), "rows": self.rows}
        write_file_atomically(self.directory / MANIFEST, json.dumps(manifest, sort_keys=True) + "\n")
        return {name: self.path(name) for name in STAGED_TABLES}

    def abort(self) -> None:
        for writer in self._writers.values():
            writer.close()
        for name in STAGED_TABLES:
            self.path(name).unlink(missing_ok=True)


def staged_table_files(directory: Path, lineage: Lineage) -> dict[str, Path] | None:
    """``{table: file}`` of the tables staged under ``directory`` for exactly ``lineage``; None when there are
    none, they are not whole, or they carry another lineage (staged by another run)."""
    try:
        manifest = json.loads((Path(directory) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("lineage") != lineage.columns():
        return None
    files = {name: Path(directory) / f"{name}.parquet" for name in STAGED_TABLES}
    return files if all(path.is_file() for path in files.values()) else None
