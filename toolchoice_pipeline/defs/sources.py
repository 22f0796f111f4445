"""``suite_files``: the suite files as one observable source asset, compared by value.

Its data version is a token of what the files say now, per suite: ``<suite>=<catalog_version>-<fixture_version>``,
sorted and joined by ``;`` (``unreadable`` for a suite that does not load). Dagster compares the input version a
materialisation recorded with the source's current version by value (the source is unpartitioned), so:

- ``release_snapshot`` records as its input the files it *pinned*, not what was last observed
  (:func:`pinned_input_tags`): its own suite's ``<catalog_version>-<fixture_version>`` from the pin, the other
  suites as they are now. A re-materialisation returns the pin and so records the same input.
- every launch path observes the files before the run starts: ``toolchoice run``, the nightly schedule, the
  ``catalog_change`` sensor (through ``SensorResult(asset_events=...)``, also on its 30-second timer, so an edit
  shows without a run) and the run itself (``release_snapshot`` logs the observation it pinned against).

After an edit, every finished release whose pin differs from the current files shows ``release_snapshot`` stale
and every release that pinned the current files shows it fresh, in whatever order the edit, the observation
and the runs happened; reverting the edit makes the old releases fresh again. A data directory with several
suites shares the one version: an edit to one suite marks the releases of the others stale too (Dagster cannot
map a dynamic release partition to its suite).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from toolchoice_pipeline.defs.resources import ToolchoiceResource
from toolchoice_pipeline.releases.snapshot import ReleaseSnapshot
from toolchoice_pipeline.suites.suite import list_suites, load_suite
from toolchoice_pipeline.util.errors import InputError

SUITE_FILES = dg.AssetKey("suite_files")
UNREADABLE = "unreadable"
SOURCES_GROUP = "suites"  # not in release_job, which materialises the group "release"
# Dagster's provenance tags (dagster._core.definitions.data_version): an observation's version, the version of an
# input a materialisation recorded.
DATA_VERSION_TAG = "dagster/data_version"
USER_PROVIDED_TAG = "dagster/data_version_is_user_provided"
PINNED_INPUT_TAG = f"dagster/input_data_version/{SUITE_FILES.to_user_string()}"


@dataclass(frozen=True)
class SuitesNow:
    """Every suite of a data directory as its files say now, each suite loaded once.

    ``catalogs``: ``{suite: catalog_version}`` of the suites that load (what the ``catalog_change`` sensor
    compares); ``files``: ``{suite: "<catalog_version>-<fixture_version>"}``, ``unreadable`` for a suite that does
    not load (what ``suite_files``' data version is made of); ``problems``: ``{suite: first problem}`` of those."""

    catalogs: dict[str, str]
    files: dict[str, str]
    problems: dict[str, str]


def read_suites(data_dir: Path) -> SuitesNow:
    """Load every suite of ``data_dir`` once (unchecked) and return both figures (:class:`SuitesNow`)."""
    catalogs: dict[str, str] = {}
    files: dict[str, str] = {}
    problems: dict[str, str] = {}
    for suite in list_suites(data_dir):
        try:
            loaded = load_suite(data_dir, suite, check=False)
        except InputError as exc:
            files[suite] = UNREADABLE
            problems[suite] = str(exc.problems[0])
            continue
        catalogs[suite] = loaded.catalog_version  # the lineage version: inline (BFCL) catalogs count too
        files[suite] = f"{loaded.catalog_version}-{loaded.fixture_version}"
    return SuitesNow(catalogs=catalogs, files=files, problems=problems)


def suite_versions(data_dir: Path) -> dict[str, str]:
    """``{suite: "<catalog_version>-<fixture_version>"}`` of every suite's files as they are now (``unreadable``
    for a suite that does not load)."""
    return read_suites(data_dir).files


def files_token(versions: Mapping[str, str]) -> str:
    """The data version of ``suite_files`` for ``{suite: version}``: ``a=<v>;b=<v>`` in suite order."""
    return ";".join(f"{suite}={version}" for suite, version in sorted(versions.items()))


def current_files_version(data_dir: Path) -> str:
    """The data version of ``suite_files`` now."""
    return files_token(suite_versions(data_dir))


def pinned_input_tags(
    data_dir: Path, snapshot: ReleaseSnapshot, versions: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Output tags of ``release_snapshot`` recording as its input the files it pinned: the pin's own suite at the
    pin's versions, every other suite as it is now (``versions``: :func:`suite_versions`, when already read)."""
    pinned = dict(suite_versions(data_dir) if versions is None else versions)
    pinned[snapshot.suite_name] = f"{snapshot.catalog_version}-{snapshot.fixture_version}"
    return {PINNED_INPUT_TAG: files_token(pinned)}


def files_observation(data_dir: Path, version: str | None = None) -> dg.AssetObservation:
    """An observation of ``suite_files`` carrying its data version (``version``, else the files' current one)."""
    return dg.AssetObservation(
        asset_key=SUITE_FILES,
        tags={
            DATA_VERSION_TAG: current_files_version(data_dir) if version is None else version,
            USER_PROVIDED_TAG: "true",
        },
    )


def last_observed_version(instance: dg.DagsterInstance) -> str | None:
    """The data version of the latest observation of ``suite_files``; None before the first."""
    record = instance.get_latest_data_version_record(SUITE_FILES, is_source=True)
    if record is None or record.asset_observation is None:
        return None
    return record.asset_observation.tags.get(DATA_VERSION_TAG)


def observation_if_changed(
    instance: dg.DagsterInstance, data_dir: Path, versions: Mapping[str, str] | None = None
) -> dg.AssetObservation | None:
    """An observation of ``suite_files`` when the files differ from the last one recorded (None when they do not:
    the event log does not grow on every sensor tick). ``versions``: :attr:`SuitesNow.files`, when already read."""
    observation = files_observation(data_dir, None if versions is None else files_token(versions))
    return None if last_observed_version(instance) == observation.tags[DATA_VERSION_TAG] else observation


def observe_files(instance: dg.DagsterInstance, data_dir: Path) -> str:
    """Record an observation of ``suite_files`` in ``instance`` when the files changed; the version observed."""
    observation = files_observation(data_dir)  # the suites loaded once: compared, reported and returned
    version = observation.tags[DATA_VERSION_TAG]
    if last_observed_version(instance) != version:
        instance.report_runless_asset_event(observation)
    return version


@dg.observable_source_asset(
    name="suite_files",
    group_name=SOURCES_GROUP,
    tags={"domain": "llm-eval", "pipeline": "toolchoice"},
    description="The suite files releases read (catalog, live dumps, tasks, matching profile), observed: the "
    "data version is <suite>=<catalog_version>-<fixture_version> of every suite, joined by ';'. Observed before "
    "every run and by the catalog_change sensor every 30 s.",
)
def suite_files(toolchoice: ToolchoiceResource) -> dg.DataVersion:
    return dg.DataVersion(current_files_version(toolchoice.path))


observe_suite_files = dg.define_asset_job(
    name="observe_suite_files",
    selection=dg.AssetSelection.assets("suite_files"),
    description="Observe the suite files (a description edit shows as stale at once).",
)


def pinned_input(context: dg.AssetExecutionContext, data_dir: Path, snapshot: ReleaseSnapshot) -> dict[str, str]:
    """For ``release_snapshot``: observe the files (so a run launched from the UI observes too) and return the
    output tags recording the pinned files as its input (:func:`pinned_input_tags`)."""
    versions = suite_versions(data_dir)  # the suites loaded once: observed and recorded beside the pin
    current = files_token(versions)
    if last_observed_version(context.instance) != current:
        context.log_event(files_observation(data_dir, current))
    return pinned_input_tags(data_dir, snapshot, versions)
