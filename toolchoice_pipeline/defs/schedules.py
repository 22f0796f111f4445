"""``nightly_eval``: every night at 02:00 UTC, evaluate the default suite as a ``nightly`` release.

Nightly runs ask every provider afresh (agent cache policy ``write_only``) to catch provider drift; they are
compared with the baseline but never become it.

Evaluating the schedule has no side effect (the UI's "Test schedule" previews it freely): it returns a run
request for partition ``nightly-YYYY-MM-DD`` whose run config says what the release evaluates
(``ops.release_snapshot.config``), with the partition tag already resolved. The run's first step,
``release_snapshot``, adds the partition and writes ``releases/<id>/request.json`` (:mod:`~.launchpad`), so
only a run that is launched creates them. Dagster schedules cannot add dynamic partitions themselves (sensors
can, through ``SensorResult``), hence the step.
"""

import dagster as dg

from toolchoice_pipeline.defs.dead_runs import fail_dead_runs
from toolchoice_pipeline.defs.jobs import release_job
from toolchoice_pipeline.defs.run_tags import release_tags
from toolchoice_pipeline.releases.request import DEFAULT_SUITE

REQUESTED_BY = "schedule:nightly_eval"


@dg.schedule(
    name="nightly_eval",
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    job=release_job,
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Runs partition nightly-YYYY-MM-DD (kind nightly, agent cache write_only; the run adds the "
    "partition and its request).",
)
def nightly_eval(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    fail_dead_runs(context.instance, context.log)
    release_id = f"nightly-{context.scheduled_execution_time:%Y-%m-%d}"
    request = {
        "suite": DEFAULT_SUITE,
        "kind": "nightly",
        "cache_policy": "write_only",
        "requested_by": REQUESTED_BY,
    }
    return dg.RunRequest(
        run_key=release_id,
        partition_key=release_id,
        run_config={"ops": {"release_snapshot": {"config": request}}},
        # the partition tag given here resolves the request's partition without asking that it exist yet
        tags={
            "dagster/partition": release_id,
            **release_tags(release_id, kind="nightly", suite=DEFAULT_SUITE, requested_by=REQUESTED_BY),
        },
    )
