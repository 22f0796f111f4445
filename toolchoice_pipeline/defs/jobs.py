"""The release job: every asset of the release graph for one release partition, in one process.

Its partitioning (the ``release`` dynamic partition) is inferred from the selected assets.

The in-process executor runs one step at a time, so at most one step of a run writes the DuckDB file
(DuckDB allows one writer per file); the warehouse's file lock keeps concurrent runs apart too.
"""

import dagster as dg

RELEASE_GROUP = "release"

release_job = dg.define_asset_job(
    name="release_job",
    selection=dg.AssetSelection.groups(RELEASE_GROUP),
    executor_def=dg.in_process_executor,
    description="Evaluate one release: catalog → tasks → agent runs → judge votes → scores → gate → baseline.",
)
