"""Releases are a dynamic partition: the CLI and the catalog sensor add them before their runs; a run of the
nightly schedule adds its own (:func:`add_run_partition`)."""

import dagster as dg

RELEASE_PARTITIONS_NAME = "release"

release_partitions = dg.DynamicPartitionsDefinition(name=RELEASE_PARTITIONS_NAME)


def add_run_partition(instance: dg.DagsterInstance, release_id: str) -> bool:
    """Add ``release_id`` to the release partitions of ``instance`` when it is not there yet (a run that carries
    its partition as a tag, as the nightly schedule's does); True when it was added."""
    if instance.has_dynamic_partition(RELEASE_PARTITIONS_NAME, release_id):
        return False
    instance.add_dynamic_partitions(RELEASE_PARTITIONS_NAME, [release_id])
    return True
