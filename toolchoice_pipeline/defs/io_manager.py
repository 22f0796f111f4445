"""An IO manager that stages each stage's records as Parquet per release partition (see ``staging.py``)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from pydantic import BaseModel

from toolchoice_pipeline.defs.staging import (
    StagedRecords,
    is_single_record,
    manifest_path,
    read_records,
    staged_files,
    staged_path,
    write_manifest,
    write_records,
)
from toolchoice_pipeline.releases.snapshot import ReleaseSnapshot


class StagedRecordsIOManager(dg.ConfigurableIOManager):
    """Stores a pydantic record or a list of them per asset and release as ``warehouse/_staging/release_id=<id>/<asset>.parquet``;
    a sharded output (:class:`~.staging.StagedRecords` whose shard files are written already) gets a manifest of
    its files. Every output's metadata gives its rows as ``dagster/row_count`` (and ``staged_rows``, as before).
    Inputs load as :class:`~.staging.StagedRecords` (read when iterated), a single record as itself."""

    data_dir: str

    @staticmethod
    def _name(context: dg.OutputContext | dg.InputContext) -> str:
        return context.asset_key.to_user_string().replace("/", "__")

    def _path(self, context: dg.OutputContext | dg.InputContext) -> Path:
        return staged_path(Path(self.data_dir), context.asset_partition_key, self._name(context))

    def handle_output(self, context: dg.OutputContext, obj: BaseModel | list[BaseModel] | StagedRecords) -> None:
        if isinstance(obj, StagedRecords):
            manifest = write_manifest(Path(self.data_dir), context.asset_partition_key, self._name(context), obj.files)
            context.add_output_metadata(
                {
                    "dagster/row_count": len(obj),
                    "staged_rows": len(obj),
                    "staged_files": len(obj.files),
                    "staged_path": dg.MetadataValue.path(str(manifest)),
                }
            )
            return
        if isinstance(obj, BaseModel):
            record_type: type[BaseModel] = type(obj)
        else:
            record_type = type(obj[0]) if obj else _annotated_record_type(context)
        path = self._path(context)
        # the snapshot's tasks apart, so a step that loads the snapshot reads only the tasks it uses
        apart = "tasks" if isinstance(obj, ReleaseSnapshot) else None
        rows = write_records(path, obj, record_type, apart=apart)
        manifest_path(Path(self.data_dir), context.asset_partition_key, self._name(context)).unlink(missing_ok=True)
        context.add_output_metadata(
            {"dagster/row_count": rows, "staged_rows": rows, "staged_path": dg.MetadataValue.path(str(path))}
        )

    def load_input(self, context: dg.InputContext) -> BaseModel | StagedRecords:
        files = staged_files(Path(self.data_dir), context.asset_partition_key, self._name(context))
        if len(files) == 1 and is_single_record(files[0]):
            return read_records(files[0])
        return StagedRecords(files)


def _annotated_record_type(context: dg.OutputContext) -> type[BaseModel]:
    """The record class of an empty output, from the asset's ``list[Record]`` return annotation."""
    typing_type = context.dagster_type.typing_type
    args = getattr(typing_type, "__args__", ())
    if args and isinstance(args[0], type) and issubclass(args[0], BaseModel):
        return args[0]
    return BaseModel
