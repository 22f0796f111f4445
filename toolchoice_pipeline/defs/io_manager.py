"""The IO managers: each stage's records staged as Parquet per release partition (see ``staging.py``), and the
release document ``release_scores`` hands to the checks, ``baseline`` and the CLI."""

from __future__ import annotations

from collections import OrderedDict
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
from toolchoice_pipeline.releases.document import ReleaseDocument
from toolchoice_pipeline.releases.snapshot import ReleaseSnapshot
from toolchoice_pipeline.releases.store import GATE_MARKDOWN_FILE, ReleaseStore


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


class ReleaseDocumentIOManager(dg.ConfigurableIOManager):
    """``release_scores``' output: the release's typed ``scores.json`` (:class:`ReleaseDocument`).

    Publishing stores the document (``scores.json``, written last and atomically) before the asset returns it, so
    handling the output writes nothing more: the document is handed over in this process (:func:`hand_over`) and
    the run's later steps (the checks, ``baseline``) and ``toolchoice run`` take it as it is, without reading the
    file back. A step in another process (the multiprocess executor, a re-execution) reads ``scores.json``."""

    data_dir: str

    def handle_output(self, context: dg.OutputContext, obj: ReleaseDocument) -> None:
        if not isinstance(obj, ReleaseDocument):
            raise TypeError(f"release_scores returns a ReleaseDocument, not {type(obj).__name__}")
        hand_over(Path(self.data_dir), obj)

    def load_input(self, context: dg.InputContext) -> ReleaseDocument:
        upstream = context.upstream_output
        run_id = upstream.run_id if upstream is not None else None
        release_id = context.asset_partition_key
        document = handed_document(Path(self.data_dir), release_id, run_id)
        if document is None:  # another run's, or not scored: as stored (raises InputError naming the file)
            document = ReleaseStore(Path(self.data_dir)).read_scores(release_id)
        return document


#: The release documents handed over in this process, newest last: ``(data_dir, release_id) → (document, gate
#: report Markdown or None)``. A few only: one process runs one release at a time.
_HANDED: OrderedDict[tuple[str, str], tuple[ReleaseDocument, str | None]] = OrderedDict()
HANDED_KEPT = 8


def hand_over(data_dir: Path, document: ReleaseDocument, gate_report: str | None = None) -> None:
    """Keep ``document`` (just written as the release's ``scores.json``) and, when given, its ``gate.md`` text for
    the later steps of this process; a later document of the release replaces it (a re-gate at promotion)."""
    key = (str(Path(data_dir).resolve()), document.release_id)
    held = _HANDED.pop(key, None)
    if held is not None and held[0] is document and gate_report is None:
        gate_report = held[1]  # the IO manager hands over what the asset handed over with its report
    _HANDED[key] = (document, gate_report)
    while len(_HANDED) > HANDED_KEPT:
        _HANDED.popitem(last=False)


def handed_document(data_dir: Path, release_id: str, run_id: str | None) -> ReleaseDocument | None:
    """The release's document handed over in this process by Dagster run ``run_id``, else None."""
    handed = _HANDED.get((str(Path(data_dir).resolve()), release_id))
    if handed is None or run_id is None or handed[0].run_id != run_id:
        return None
    return handed[0]


def gate_report(data_dir: Path, document: ReleaseDocument) -> str:
    """The ``gate.md`` text written with ``document``: as handed over with it, else read from the file (a
    document that came from another process); a note when it cannot be read."""
    handed = _HANDED.get((str(Path(data_dir).resolve()), document.release_id))
    if handed is not None and handed[0] is document and handed[1] is not None:
        return handed[1]
    path = ReleaseStore(Path(data_dir)).scores_path(document.release_id).with_name(GATE_MARKDOWN_FILE)
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        return f"(the gate report {path} could not be read: {exc.strerror})"
