"""The Dagster Definitions of toolchoice-pipeline (loaded by ``workspace.yaml``, ``dagster dev`` and ``dg``)."""

import dagster as dg

from toolchoice_pipeline.defs.assets import release_assets
from toolchoice_pipeline.defs.checks import release_checks
from toolchoice_pipeline.defs.io_manager import ReleaseDocumentIOManager, StagedRecordsIOManager
from toolchoice_pipeline.defs.jobs import release_executor, release_job
from toolchoice_pipeline.defs.resources import (
    DEFAULT_DATA_DIR,
    ProgressReporter,
    ToolchoiceResource,
    step_outputs_io_manager,
)
from toolchoice_pipeline.defs.schedules import nightly_eval
from toolchoice_pipeline.defs.sensors import catalog_change
from toolchoice_pipeline.defs.sources import observe_suite_files, suite_files


def build_definitions(
    data_dir: str = DEFAULT_DATA_DIR, executor: dg.ExecutorDefinition = release_executor
) -> dg.Definitions:
    """Definitions over the data directory ``data_dir`` (default ``$TOOLCHOICE_DATA_DIR`` or ``data``).

    ``executor`` runs the steps of every job (``release_job``, the UI's asset job, backfills): by default
    :data:`~.defs.jobs.release_executor` (in-process; multiprocess with preloading when configured); a cluster
    deployment passes ``dagster_k8s.k8s_job_executor`` or ``dagster_celery.celery_executor`` (docs/scale.md)."""
    return dg.Definitions(
        assets=[suite_files, *release_assets],
        asset_checks=release_checks,
        jobs=[release_job, observe_suite_files],
        # Every run, whichever way it is launched (UI, backfill, sensor, schedule, toolchoice run), steps in one
        # process unless its run config says multiprocess: the assets share one LiteLLM import and one DuckDB writer.
        executor=executor,
        schedules=[nightly_eval],
        sensors=[catalog_change],
        resources={
            "toolchoice": ToolchoiceResource(data_dir=data_dir),
            "staged_io": StagedRecordsIOManager(data_dir=data_dir),
            "release_document_io": ReleaseDocumentIOManager(data_dir=data_dir),
            "progress": ProgressReporter(),
            **step_outputs_io_manager(data_dir),
        },
    )


defs = build_definitions()


def release_job_for_workers() -> dg.JobDefinition:
    """``release_job`` of :data:`defs` (over ``$TOOLCHOICE_DATA_DIR``): the reconstructable job of a multiprocess run."""
    return defs.resolve_job_def("release_job")
