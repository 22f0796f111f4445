"""``suite_files``: the suite files as an observable source asset, so an edit shows in the UI before any run.

Partitioned like the release graph: the version observed for release ``r`` is the current
``<catalog_version>-<fixture_version>`` of the files of ``r``'s suite (its pinned snapshot's suite, else its
request's). ``release_snapshot`` depends on it, so after a description edit and an observation ("Observe
sources" in the UI, or the ``observe_suite_files`` job) every release of that suite shows
``release_snapshot`` stale: the files moved on since the release pinned them. Re-materialising it returns the
pin (same data version), which clears the mark without changing anything downstream; evaluating the edited
files is a new partition. ``release_snapshot`` observes its own partition before it materialises
(:func:`observe_release_files`), so a release records the version it evaluated on every launch path, with no
observation needed before it.
"""

from __future__ import annotations

import dagster as dg

from toolchoice_pipeline.defs.partitions import RELEASE_PARTITIONS_NAME, release_partitions
from toolchoice_pipeline.defs.resources import ToolchoiceResource
from toolchoice_pipeline.releases.request import has_request, read_request
from toolchoice_pipeline.releases.snapshot import ReleaseSnapshot, read_snapshot
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline.util.errors import InputError

UNREADABLE = "unreadable"
SUITE_FILES = dg.AssetKey("suite_files")
DATA_VERSION_TAG = "dagster/data_version"  # the tag an observation gives its data version in
SOURCES_GROUP = "suites"  # not in release_job, which materialises the group "release"


def files_version(toolchoice: ToolchoiceResource, suite: str) -> str:
    """``<catalog_version>-<fixture_version>`` of the suite's files as they are now; ``unreadable`` when they do
    not load."""
    try:
        loaded = load_suite(toolchoice.path, suite, check=False)
    except InputError:
        return UNREADABLE
    return f"{loaded.catalog_version}-{loaded.fixture_version}"


def release_suite(toolchoice: ToolchoiceResource, release_id: str) -> str | None:
    """The suite a release evaluates: its pin's, else its request's; None when neither reads."""
    try:
        pinned = read_snapshot(toolchoice.path, release_id)
        if pinned is not None:
            return pinned.suite_name
        return read_request(toolchoice.path, release_id).suite if has_request(toolchoice.path, release_id) else None
    except InputError:
        return None


@dg.observable_source_asset(
    name="suite_files",
    partitions_def=release_partitions,
    group_name=SOURCES_GROUP,
    tags={"domain": "llm-eval", "pipeline": "toolchoice"},
    description="The suite files a release reads (catalog, live dumps, tasks, matching profile), observed: the "
    "data version of a release partition is its suite's current <catalog_version>-<fixture_version>.",
)
def suite_files(context: dg.AssetExecutionContext, toolchoice: ToolchoiceResource) -> dg.DataVersionsByPartition:
    by_suite: dict[str, str] = {}
    versions: dict[str, str] = {}
    for release_id in context.instance.get_dynamic_partitions(RELEASE_PARTITIONS_NAME):
        suite = release_suite(toolchoice, release_id)
        if suite is None:
            versions[release_id] = UNREADABLE
            continue
        if suite not in by_suite:
            by_suite[suite] = files_version(toolchoice, suite)
        versions[release_id] = by_suite[suite]
    return dg.DataVersionsByPartition(versions)


def observe_release_files(
    context: dg.AssetExecutionContext, toolchoice: ToolchoiceResource, snapshot: ReleaseSnapshot, resolved_now: bool
) -> None:
    """Log an observation of ``suite_files`` for the snapshot's release partition, before ``release_snapshot``'s
    materialisation: the materialisation then records the suite files' version it was made from, whichever way
    the run was launched (``toolchoice run``, the sensor, the schedule, the launchpad, a backfill), so no
    "Observe sources" is needed first. A snapshot pinned now observes the versions it pinned (the files as
    read); a re-materialised pin observes the files as they are now."""
    if resolved_now:
        version = f"{snapshot.catalog_version}-{snapshot.fixture_version}"
    else:
        version = files_version(toolchoice, snapshot.suite_name)
    # Stored at once (a runless event), then the step's cached input versions of suite_files are dropped: Dagster
    # reads an asset step's input versions when the step starts, and records them when its output is handled.
    context.instance.report_runless_asset_event(
        dg.AssetObservation(asset_key=SUITE_FILES, partition=snapshot.release_id, tags={DATA_VERSION_TAG: version})
    )
    step = getattr(context.op_execution_context, "_step_execution_context", None)  # None: an asset called directly
    if step is not None:
        step.wipe_input_asset_version_info(SUITE_FILES)


observe_suite_files = dg.define_asset_job(
    name="observe_suite_files",
    selection=dg.AssetSelection.assets("suite_files"),
    description="Observe the suite files of every release partition (a description edit shows as stale).",
)
