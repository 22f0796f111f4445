"""The Dagster Definitions of toolchoice-pipeline (loaded by ``workspace.yaml``, ``dagster dev`` and ``dg``)."""

import dagster as dg

from toolchoice_pipeline.defs.assets import release_assets
from toolchoice_pipeline.defs.checks import release_checks
from toolchoice_pipeline.defs.io_manager import StagedRecordsIOManager
from toolchoice_pipeline.defs.jobs import release_job
from toolchoice_pipeline.defs.resources import (
    DEFAULT_DATA_DIR,
    ProgressReporter,
    ToolchoiceResource,
    step_outputs_io_manager,
)
from toolchoice_pipeline.defs.schedules import nightly_eval
from toolchoice_pipeline.defs.sensors import catalog_change
from toolchoice_pipeline.defs.sources import observe_suite_files, suite_files


def build_definitions(data_dir: str = DEFAULT_DATA_DIR) -> dg.Definitions:
    """Definitions over the data directory ``data_dir`` (default ``$TOOLCHOICE_DATA_DIR`` or ``data``)."""
    return dg.Definitions(
        assets=[suite_files, *release_assets],
        asset_checks=release_checks,
        jobs=[release_job, observe_suite_files],
        # Every run, whichever way it is launched (UI, backfill, sensor, schedule, toolchoice run), steps in one
        # process: the assets share one LiteLLM import and one DuckDB writer.
        executor=dg.in_process_executor,
        schedules=[nightly_eval],
        sensors=[catalog_change],
        resources={
            "toolchoice": ToolchoiceResource(data_dir=data_dir),
            "staged_io": StagedRecordsIOManager(data_dir=data_dir),
            "progress": ProgressReporter(),
            **step_outputs_io_manager(data_dir),
        },
    )


defs = build_definitions()

# Imported once by the forkserver of a multiprocess run: each step process forked from it starts with LiteLLM,
# the project and its Definitions (over $TOOLCHOICE_DATA_DIR, set by the CLI before the run) imported.
WORKER_PRELOAD = [
    "toolchoice_pipeline.defs.workers",
    "litellm",
    "toolchoice_pipeline.definitions",
    "toolchoice_pipeline.execution.runner",
    "toolchoice_pipeline.judge",
    "toolchoice_pipeline.releases.store",
    "dagster._core.storage.sqlite_storage",  # the instance's storage each step opens (SQLAlchemy, alembic)
]


def release_job_for_workers() -> dg.JobDefinition:
    """``release_job`` of :data:`defs` (over ``$TOOLCHOICE_DATA_DIR``): the reconstructable job of a multiprocess run."""
    return defs.resolve_job_def("release_job")
