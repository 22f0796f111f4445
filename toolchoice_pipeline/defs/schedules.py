"""``nightly_eval``: every night at 02:00 UTC, evaluate the default suite as a ``nightly`` release.

Nightly runs ask every provider afresh (agent cache policy ``write_only``) to catch provider drift; they are
compared with the baseline but never become it.

Evaluating the schedule writes no file: its run request carries what the release evaluates as run config
(``ops.release_snapshot.config``), and the run's first step, ``release_snapshot``, writes
``releases/<id>/request.json`` (:mod:`~.launchpad`). It still adds the partition ``nightly-YYYY-MM-DD``: a
Dagster schedule cannot request a dynamic partition (a sensor can, through ``SensorResult``), and the run needs
it before its first step starts (Dagster resolves the step's input versions of ``suite_files``, partitioned by
release, then). So the UI's "Test schedule" adds that partition, with no request; launching it runs the nightly.
"""

from datetime import timedelta

import dagster as dg

from toolchoice_pipeline.defs.dead_runs import fail_dead_runs
from toolchoice_pipeline.defs.jobs import release_job
from toolchoice_pipeline.defs.partitions import RELEASE_PARTITIONS_NAME
from toolchoice_pipeline.defs.resources import ToolchoiceResource
from toolchoice_pipeline.defs.run_tags import release_tags
from toolchoice_pipeline.defs.sources import observe_files
from toolchoice_pipeline.releases.request import DEFAULT_SUITE

REQUESTED_BY = "schedule:nightly_eval"
NIGHTLY_CRON = "0 2 * * *"
#: By when the nightly's release_scores is due (UTC): four hours after the schedule fires.
NIGHTLY_DEADLINE_CRON = "0 6 * * *"

#: The nightly's output is overdue when ``release_scores`` has no materialisation since 02:00 UTC by 06:00 UTC:
#: a stopped schedule, a dead daemon or a nightly that failed before scoring shows on the asset's freshness (the
#: Freshness daemon, on by default since Dagster 1.12, evaluates it). Dagster's freshness is per asset, not per
#: partition: any release scored in that window (a ``toolchoice run`` at 03:00, say) counts as well.
NIGHTLY_FRESHNESS = dg.FreshnessPolicy.cron(
    deadline_cron=NIGHTLY_DEADLINE_CRON, lower_bound_delta=timedelta(hours=4), timezone="UTC"
)


@dg.schedule(
    name="nightly_eval",
    cron_schedule=NIGHTLY_CRON,
    execution_timezone="UTC",
    job=release_job,
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Adds partition nightly-YYYY-MM-DD and runs it (kind nightly, agent cache write_only; the run "
    "writes its request).",
)
def nightly_eval(context: dg.ScheduleEvaluationContext, toolchoice: ToolchoiceResource) -> dg.RunRequest:
    fail_dead_runs(context.instance, context.log)
    release_id = f"nightly-{context.scheduled_execution_time:%Y-%m-%d}"
    context.instance.add_dynamic_partitions(RELEASE_PARTITIONS_NAME, [release_id])
    request = {
        "suite": DEFAULT_SUITE,
        "kind": "nightly",
        "cache_policy": "write_only",
        "requested_by": REQUESTED_BY,
    }
    observe_files(context.instance, toolchoice.path)  # the UI shows the files the run is about to pin
    return dg.RunRequest(
        run_key=release_id,
        partition_key=release_id,
        run_config={"ops": {"release_snapshot": {"config": request}}},
        tags={
            "dagster/partition": release_id,
            **release_tags(release_id, kind="nightly", suite=DEFAULT_SUITE, requested_by=REQUESTED_BY),
        },
    )
