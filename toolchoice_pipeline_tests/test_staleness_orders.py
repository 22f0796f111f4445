"""Staleness with no manual step (issue 26): ``release_snapshot`` observes the suite files for its release before
it materialises, so every release records the files' version it evaluated, whichever way it was launched and
whether or not anyone pressed "Observe sources" before. After an edit (and an observation: the UI's "Observe
sources" or the ``observe_suite_files`` job), every release that evaluated another catalog shows
``release_snapshot`` STALE and every one that evaluated the current files FRESH, in any order: release then
edit, edit then release, an observation with no edit, a revert. Real parts: a real Dagster instance, the
release graph's first three assets run in-process, real suite files; staleness as the UI computes it."""

from __future__ import annotations

import dagster as dg
import pytest

from toolchoice_pipeline.definitions import build_definitions
from toolchoice_pipeline.defs.partitions import RELEASE_PARTITIONS_NAME
from toolchoice_pipeline.releases.request import ReleaseRequest, write_request
from toolchoice_pipeline_tests.pipeline_helpers import copy_data, dagster_instance, set_description

pytestmark = pytest.mark.slow

FIRST = [dg.AssetKey(name) for name in ("release_snapshot", "tool_catalog", "eval_tasks")]


def snapshot_status(instance, defs, releases) -> dict[str, str]:
    from dagster._core.definitions.data_version import CachingStaleStatusResolver
    from dagster._core.loader import LoadingContextForTest

    resolver = CachingStaleStatusResolver(instance, defs.resolve_asset_graph(), LoadingContextForTest(instance))
    return {release: resolver.get_status(dg.AssetKey("release_snapshot"), release).value for release in releases}


def test_each_release_is_stale_exactly_when_the_files_moved_off_what_it_evaluated(tmp_path):
    data_dir = copy_data(tmp_path / "data")
    with dagster_instance(tmp_path / "home") as instance:
        defs = build_definitions(str(data_dir))
        job, observe = defs.resolve_job_def("release_job"), defs.resolve_job_def("observe_suite_files")

        def release(release_id: str) -> None:  # as `toolchoice run` does: no observation before it
            write_request(data_dir, ReleaseRequest(release_id=release_id, requested_by="test"))
            instance.add_dynamic_partitions(RELEASE_PARTITIONS_NAME, [release_id])
            assert job.execute_in_process(partition_key=release_id, instance=instance, asset_selection=FIRST).success

        def observed() -> dict[str, str]:
            assert observe.execute_in_process(instance=instance).success
            return snapshot_status(instance, defs, instance.get_dynamic_partitions(RELEASE_PARTITIONS_NAME))

        release("a")  # never observed before: it still records the version it evaluated
        assert snapshot_status(instance, defs, ["a"]) == {"a": "FRESH"}
        assert observed() == {"a": "FRESH"}  # an observation with no edit changes nothing
        release("b")  # started after an observation
        assert observed() == {"a": "FRESH", "b": "FRESH"}

        original = set_description(data_dir, "Read", "Deletes the repository. Never call this.")
        assert observed() == {"a": "STALE", "b": "STALE"}  # release, then edit
        release("c")  # edit, then release: evaluates the current files
        assert snapshot_status(instance, defs, ["c"]) == {"c": "FRESH"}
        assert observed() == {"a": "STALE", "b": "STALE", "c": "FRESH"}

        set_description(data_dir, "Read", original)  # revert
        assert observed() == {"a": "FRESH", "b": "FRESH", "c": "STALE"}
