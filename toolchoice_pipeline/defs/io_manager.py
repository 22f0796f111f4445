"""An IO manager that stages each stage's records as Parquet per release partition (see ``staging.py``)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from pydantic import BaseModel

from toolchoice_pipeline.defs.staging import read_records, staged_path, write_records


class StagedRecordsIOManager(dg.ConfigurableIOManager):
    """Stores a pydantic record or a list of them per asset and release as ``warehouse/_staging/release_id=<id>/<asset>.parquet``."""

    data_dir: str

    def _path(self, context: dg.OutputContext | dg.InputContext) -> Path:
        key = context.asset_key.to_user_string().replace("/", "__")
        return staged_path(Path(self.data_dir), context.asset_partition_key, key)

    def handle_output(self, context: dg.OutputContext, obj: BaseModel | list[BaseModel]) -> None:
        if isinstance(obj, BaseModel):
            record_type: type[BaseModel] = type(obj)
        else:
            record_type = type(obj[0]) if obj else _annotated_record_type(context)
        path = self._path(context)
        rows = write_records(path, obj, record_type)
        context.add_output_metadata({"staged_rows": rows, "staged_path": dg.MetadataValue.path(str(path))})

    def load_input(self, context: dg.InputContext) -> BaseModel | list[BaseModel]:
        return read_records(self._path(context))


def _annotated_record_type(context: dg.OutputContext) -> type[BaseModel]:
    """The record class of an empty output, from the asset's ``list[Record]`` return annotation."""
    typing_type = context.dagster_type.typing_type
    args = getattr(typing_type, "__args__", ())
    if args and isinstance(args[0], type) and issubclass(args[0], BaseModel):
        return args[0]
    return BaseModel
