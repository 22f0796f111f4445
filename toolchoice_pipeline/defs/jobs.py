"""The release job: every asset of the release graph for one release partition.

Its partitioning (the ``release`` dynamic partition) is inferred from the selected assets. Its executor is
Dagster's multi-or-in-process executor with in-process as the default: a run from the UI, a sensor or a
schedule runs its steps in one process (one LiteLLM import, one DuckDB writer at a time), and a run configured
with ``execution: {config: {multiprocess: {max_concurrent: N}}}`` (``toolchoice run --workers N``) runs the
shards of ``agent_runs`` and ``judge_votes`` in up to N worker processes. Only ``release_scores`` writes the
DuckDB file, once per run, under the warehouse's lock.
"""

import dagster as dg

RELEASE_GROUP = "release"

release_executor = dg.ExecutorDefinition(
    name="release_executor",
    config_schema=dg.Field(
        dg.multi_or_in_process_executor.config_field.config_type,
        default_value={"in_process": {}},
        description="in_process (default) or multiprocess: {max_concurrent: N, start_method: ...}",
    ),
    requirements=dg.multi_or_in_process_executor.get_requirements,
    executor_creation_fn=dg.multi_or_in_process_executor.executor_creation_fn,
    description="Dagster's multi_or_in_process_executor, in-process unless configured otherwise.",
)

release_job = dg.define_asset_job(
    name="release_job",
    selection=dg.AssetSelection.groups(RELEASE_GROUP),
    executor_def=release_executor,
    description="Evaluate one release: catalog → tasks → agent runs → judge votes → scores → gate → baseline.",
)
