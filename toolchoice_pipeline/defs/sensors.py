"""``catalog_change``: when a suite's tool catalog (curated + live dumps) gets a new version, evaluate it.

The cursor keeps the last seen ``catalog_version`` of every suite. A suite seen for the first time is only
recorded. Every tick observes ``suite_files`` (:mod:`.sources`) when the files changed. A new version adds partition ``catalog-<version>`` (kind ``catalog-change``) and requests a run with
the version as run key, so one catalog version never runs twice: a version whose partition already exists
(it ran before, or another suite reached the same catalog first), or that a finished release of the suite
already evaluated (any kind: a reverted edit goes back to the baseline's catalog), is only recorded, and the
tick says which release evaluated it. ``ToolchoiceResource.rerun_evaluated_catalogs`` (environment
``TOOLCHOICE_RERUN_EVALUATED_CATALOGS=1``) asks for such versions to run anyway.
"""

import json

import dagster as dg

from toolchoice_pipeline.defs.dead_runs import fail_dead_runs
from toolchoice_pipeline.defs.jobs import release_job
from toolchoice_pipeline.defs.partitions import RELEASE_PARTITIONS_NAME
from toolchoice_pipeline.defs.resources import ToolchoiceResource
from toolchoice_pipeline.defs.run_tags import release_tags
from toolchoice_pipeline.defs.sources import SuitesNow, observation_if_changed, read_suites
from toolchoice_pipeline.releases.request import ReleaseRequest, write_request
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.util.errors import InputError

REQUESTED_BY = "sensor:catalog_change"


def current_suites(toolchoice: ToolchoiceResource, log=None) -> SuitesNow:
    """Every suite loaded once (:func:`~.sources.read_suites`): the catalog versions the sensor compares and the
    files version it observes; a broken suite is logged and left out of the catalog versions."""
    suites = read_suites(toolchoice.path)
    if log is not None:
        for name, problem in sorted(suites.problems.items()):
            log.warning(f"suite {name} skipped: {problem}")
    return suites


def evaluated_catalogs(toolchoice: ToolchoiceResource, log=None) -> dict[tuple[str, str], str]:
    """``{(suite, catalog_version): release_id}`` of the finished releases (the latest id per version); a damaged
    ``scores.json`` is logged and left out."""
    store = ReleaseStore(toolchoice.path)
    found: dict[tuple[str, str], str] = {}
    for release_id in store.release_ids():
        try:
            scores = store.read_scores(release_id)
        except InputError as exc:
            if log is not None:
                log.warning(f"release {release_id} skipped: {exc.problems[0]}")
            continue
        if scores.catalog_version:
            found[(scores.suite, scores.catalog_version)] = release_id
    return found


@dg.sensor(
    name="catalog_change",
    job=release_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Runs a catalog-change release when a suite's tool descriptions or parameters change.",
)
def catalog_change(context: dg.SensorEvaluationContext, toolchoice: ToolchoiceResource) -> dg.SensorResult:
    fail_dead_runs(context.instance, context.log)
    seen: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
    suites = current_suites(toolchoice, context.log)  # each suite loaded once per tick
    now = suites.catalogs
    run_requests: list[dg.RunRequest] = []
    new_partitions: list[str] = []
    existing = set(context.instance.get_dynamic_partitions(RELEASE_PARTITIONS_NAME))
    changed = {suite: version for suite, version in now.items() if suite in seen and seen[suite] != version}
    evaluated = evaluated_catalogs(toolchoice, context.log) if changed else {}
    recorded: list[str] = []
    for suite, version in sorted(changed.items()):
        release_id = f"catalog-{version}"
        if release_id in existing or release_id in new_partitions:
            recorded.append(f"suite {suite}: catalog {version} was evaluated before ({release_id}); not run again")
            continue
        earlier = evaluated.get((suite, version))
        if earlier is not None and not toolchoice.rerun_evaluated_catalogs:
            recorded.append(
                f"suite {suite}: catalog {version} was evaluated by finished release {earlier}; not run "
                "again (set TOOLCHOICE_RERUN_EVALUATED_CATALOGS=1 to run it anyway)"
            )
            continue
        write_request(
            toolchoice.path,
            ReleaseRequest(release_id=release_id, kind="catalog-change", suite=suite, requested_by=REQUESTED_BY),
        )
        new_partitions.append(release_id)
        run_requests.append(
            dg.RunRequest(
                run_key=version,
                partition_key=release_id,
                tags=release_tags(release_id, kind="catalog-change", suite=suite, requested_by=REQUESTED_BY),
            )
        )
    for message in recorded:
        context.log.info(message)
    # Every tick observes the suite files, before any run it requests starts: an edit shows stale within 30 s.
    observed = observation_if_changed(context.instance, toolchoice.path, suites.files)
    return dg.SensorResult(
        asset_events=[observed] if observed is not None else [],
        run_requests=run_requests,
        skip_reason="; ".join(recorded) if recorded and not run_requests else None,
        cursor=json.dumps({**seen, **now}, sort_keys=True),
        dynamic_partitions_requests=([release_partitions_request(new_partitions)] if new_partitions else []),
    )


def release_partitions_request(keys: list[str]) -> dg.AddDynamicPartitionsRequest:
    return dg.AddDynamicPartitionsRequest(partitions_def_name=RELEASE_PARTITIONS_NAME, partition_keys=keys)
