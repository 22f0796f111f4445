"""``nightly_eval``: every night at 02:00 UTC, evaluate the default suite as a ``nightly`` release.

Nightly runs ask every provider afresh (agent cache policy ``write_only``) to catch provider drift; they are
compared with the baseline but never become it.

Evaluating the schedule (the daemon's tick, or the UI's "Test schedule" preview) has no side effect: it writes
no file, adds no partition and records no observation. Its run request says everything: the partition
``nightly-YYYY-MM-DD`` as the run's ``dagster/partition`` tag (already resolved, so Dagster does not look the
key up at evaluation) and the request as run config (``ops.release_snapshot.config``). The launched run's first
step, ``release_snapshot``, adds its partition when it is new (:func:`~.partitions.add_run_partition`), writes
``releases/<id>/request.json`` (:mod:`~.launchpad`) and observes the suite files it pins (:mod:`~.sources`).
Runs whose ``toolchoice run`` process died are marked failed by the ``catalog_change`` sensor's ticks and by
the next ``toolchoice run`` (:mod:`~.dead_runs`), not by this evaluation.
"""

from datetime import timedelta

import dagster as dg

from toolchoice_pipeline.defs.jobs import release_job
from toolchoice_pipeline.defs.run_tags import release_tags
from toolchoice_pipeline.releases.request import DEFAULT_SUITE

REQUESTED_BY = "schedule:nightly_eval"
NIGHTLY_CRON = "0 2 * * *"
#: By when the nightly's release_scores is due (UTC): four hours after the schedule fires.
NIGHTLY_DEADLINE_CRON = "0 6 * * *"

#: The nightly's output is overdue when ``release_scores`` has no materialisation since 02:00 UTC by 06:00 UTC:
#: a stopped schedule, a dead daemon or a nightly that failed before scoring shows on the asset's freshness (the
#: Freshness daemon, on by default since Dagster 1.12, evaluates it). Dagster's freshness is per asset, not per
#: partition: any release scored in that window (a ``toolchoice run`` at 03:00, say) counts as well (docs/scale.md).
NIGHTLY_FRESHNESS = dg.FreshnessPolicy.cron(
    deadline_cron=NIGHTLY_DEADLINE_CRON, lower_bound_delta=timedelta(hours=4), timezone="UTC"
)


@dg.schedule(
    name="nightly_eval",
    cron_schedule=NIGHTLY_CRON,
    execution_timezone="UTC",
    job=release_job,
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Runs partition nightly-YYYY-MM-DD (kind nightly, agent cache write_only); the run adds the "
    "partition and writes its request, so evaluating the schedule changes nothing.",
)
def nightly_eval(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
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
        tags={
            "dagster/partition": release_id,
            **release_tags(release_id, kind="nightly", suite=DEFAULT_SUITE, requested_by=REQUESTED_BY),
        },
    )
