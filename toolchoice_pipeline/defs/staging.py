"""Staged stage outputs: lists of pydantic records as Parquet, one file per asset and release partition.

Stage outputs are staged under ``warehouse/_staging/release_id=<id>/<asset>.parquet`` (never visible through
the DuckDB views); the ``release_scores`` asset commits the release's warehouse tables all at once. Each staged
file holds one ``record`` JSON column and names the record class in its schema metadata, so it loads back
into the same pydantic models. This module has no Dagster import: the IO manager and the CLI share it.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from toolchoice_pipeline.util.canonical import short_hash

RECORD_TYPE_KEY = b"toolchoice.record_type"
SINGLE_RECORD_KEY = b"toolchoice.single_record"


def staging_dir(data_dir: Path, release_id: str) -> Path:
    return data_dir / "warehouse" / "_staging" / f"release_id={release_id}"


def staged_path(data_dir: Path, release_id: str, name: str) -> Path:
    return staging_dir(data_dir, release_id) / f"{name}.parquet"


def records_version(records: BaseModel | list[BaseModel]) -> str:
    """12-hex hash of the records' JSON: the data version of a stage output (same records, same version)."""
    items = records if isinstance(records, list) else [records]
    return short_hash([record.model_dump(mode="json") for record in items])


def write_records(path: Path, records: BaseModel | list[BaseModel], record_type: type[BaseModel]) -> int:
    """Write ``records`` (a list, or one record read back as one) atomically (temp file + rename); returns the
    row count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    single = isinstance(records, BaseModel)
    items = [records] if single else records
    table = pa.table({"record": pa.array([r.model_dump_json() for r in items], type=pa.string())})
    qualified = f"{record_type.__module__}:{record_type.__qualname__}".encode()
    metadata = {RECORD_TYPE_KEY: qualified, **({SINGLE_RECORD_KEY: b"1"} if single else {})}
    table = table.replace_schema_metadata(metadata)
    tmp = path.with_suffix(".parquet.tmp")
    pq.write_table(table, tmp)
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return table.num_rows


def read_records(path: Path) -> Any:
    """Load the records written by :func:`write_records` back into their pydantic class (a list, or the one
    record written alone)."""
    table = pq.read_table(path)
    metadata = table.schema.metadata or {}
    module_name, _, qualname = metadata[RECORD_TYPE_KEY].decode().partition(":")
    record_type = getattr(importlib.import_module(module_name), qualname)
    records = [record_type.model_validate_json(text) for text in table.column("record").to_pylist()]
    return records[0] if metadata.get(SINGLE_RECORD_KEY) == b"1" else records
