"""Staged stage outputs: lists of pydantic records as Parquet, one file per asset and release partition.

Stage outputs are staged under ``warehouse/_staging/release_id=<id>/<asset>.parquet`` (never visible through
the DuckDB views); the ``release_scores`` asset commits the release's warehouse tables all at once. Each staged
file holds one ``record`` JSON column and names the record class in its schema metadata, so it loads back
into the same pydantic models. This module has no Dagster import: the IO manager and the CLI share it.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from toolchoice_pipeline.util.canonical import short_hash

RECORD_TYPE_KEY = b"toolchoice.record_type"
BATCH_ROWS = 2048
SINGLE_RECORD_KEY = b"toolchoice.single_record"


def staging_dir(data_dir: Path, release_id: str) -> Path:
    return data_dir / "warehouse" / "_staging" / f"release_id={release_id}"


def staged_path(data_dir: Path, release_id: str, name: str) -> Path:
    return staging_dir(data_dir, release_id) / f"{name}.parquet"


def records_version(records: BaseModel | list[BaseModel]) -> str:
    """12-hex hash of the records' JSON: the data version of a stage output (same records, same version)."""
    items = records if isinstance(records, list) else [records]
    return short_hash([record.model_dump(mode="json") for record in items])


def write_records(path: Path, records: BaseModel | Iterable[BaseModel], record_type: type[BaseModel]) -> int:
    """Write ``records`` (an iterable, or one record read back as one) atomically (temp file + rename),
    :data:`BATCH_ROWS` at a time, so only one batch of JSON text is held besides the records; returns the row
    count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    single = isinstance(records, BaseModel)
    records = [records] if single else records
    qualified = f"{record_type.__module__}:{record_type.__qualname__}".encode()
    schema = pa.schema(
        [pa.field("record", pa.string())],
        metadata={RECORD_TYPE_KEY: qualified, **({SINGLE_RECORD_KEY: b"1"} if single else {})},
    )
    tmp = path.with_suffix(".parquet.tmp")
    rows = 0
    with pq.ParquetWriter(tmp, schema) as writer:
        batch: list[str] = []
        for record in records:
            batch.append(record.model_dump_json())
            if len(batch) == BATCH_ROWS:
                writer.write_table(pa.table({"record": batch}, schema=schema))
                rows += len(batch)
                batch = []
        if batch or rows == 0:
            writer.write_table(pa.table({"record": batch}, schema=schema))
            rows += len(batch)
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return rows


def read_records(path: Path) -> Any:
    """Load the records written by :func:`write_records` back into their pydantic class (a list, or the one
    record written alone), one row group of JSON text at a time."""
    parquet = pq.ParquetFile(path)
    metadata = parquet.schema_arrow.metadata or {}
    module_name, _, qualname = metadata[RECORD_TYPE_KEY].decode().partition(":")
    record_type = getattr(importlib.import_module(module_name), qualname)
    records = []
    for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=["record"]):
        records.extend(record_type.model_validate_json(text) for text in batch.column(0).to_pylist())
    return records[0] if metadata.get(SINGLE_RECORD_KEY) == b"1" else records
