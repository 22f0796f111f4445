"""Releases are a dynamic partition: the CLI, the nightly schedule and the catalog sensor add them."""

import dagster as dg

RELEASE_PARTITIONS_NAME = "release"

release_partitions = dg.DynamicPartitionsDefinition(name=RELEASE_PARTITIONS_NAME)
