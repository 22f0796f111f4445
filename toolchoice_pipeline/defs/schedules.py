"""``nightly_eval``: every night at 02:00 UTC, evaluate the default suite as a ``nightly`` release.

Nightly runs ask every provider afresh (agent cache policy ``write_only``) to catch provider drift; they are
compared with the baseline but never become it.
"""

import dagster as dg

from toolchoice_pipeline.defs.dead_runs import fail_dead_runs
from toolchoice_pipeline.defs.jobs import release_job
from toolchoice_pipeline.defs.partitions import RELEASE_PARTITIONS_NAME
from toolchoice_pipeline.defs.resources import ToolchoiceResource
from toolchoice_pipeline.defs.sources import observe_files
from toolchoice_pipeline.releases.request import ReleaseRequest, write_request


@dg.schedule(
    name="nightly_eval",
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    job=release_job,
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Adds partition nightly-YYYY-MM-DD (kind nightly, agent cache write_only) and runs it.",
)
def nightly_eval(context: dg.ScheduleEvaluationContext, toolchoice: ToolchoiceResource) -> dg.RunRequest:
    fail_dead_runs(context.instance, context.log)
    release_id = f"nightly-{context.scheduled_execution_time:%Y-%m-%d}"
    write_request(
        toolchoice.path,
        ReleaseRequest(
            release_id=release_id, kind="nightly", cache_policy="write_only", requested_by="schedule:nightly_eval"
        ),
    )
    context.instance.add_dynamic_partitions(RELEASE_PARTITIONS_NAME, [release_id])
    observe_files(context.instance, toolchoice.path)  # the UI shows the files the run is about to pin
    return dg.RunRequest(
        run_key=release_id,
        partition_key=release_id,
        tags={"toolchoice/kind": "nightly", "toolchoice/release": release_id},
    )
