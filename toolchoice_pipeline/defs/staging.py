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

RECORD_TYPE_KEY = b"toolchoice.record_type"


def staging_dir(data_dir: Path, release_id: str) -> Path:
    return data_dir / "warehouse" / "_staging" / f"release_id={release_id}"


def staged_path(data_dir: Path, release_id: str, name: str) -> Path:
    return staging_dir(data_dir, release_id) / f"{name}.parquet"


def write_records(path: Path, records: list[BaseModel], record_type: type[BaseModel]) -> int:
    """Write ``records`` atomically (temp file + rename); returns the row count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table({"record": pa.array([r.model_dump_json() for r in records], type=pa.string())})
    qualified = f"{record_type.__module__}:{record_type.__qualname__}".encode()
    table = table.replace_schema_metadata({RECORD_TYPE_KEY: qualified})
    tmp = path.with_suffix(".parquet.tmp")
    pq.write_table(table, tmp)
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return table.num_rows


def read_records(path: Path) -> list[Any]:
    """Load the records written by :func:`write_records` back into their pydantic class."""
    table = pq.read_table(path)
    module_name, _, qualname = (table.schema.metadata or {})[RECORD_TYPE_KEY].decode().partition(":")
    record_type = getattr(importlib.import_module(module_name), qualname)
    return [record_type.model_validate_json(text) for text in table.column("record").to_pylist()]
