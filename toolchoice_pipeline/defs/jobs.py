"""The release job: every asset of the release graph for one release partition.

Its partitioning (the ``release`` dynamic partition) is inferred from the selected assets. Its executor is
Dagster's multi-or-in-process executor with in-process as the default: a run from the UI, a sensor or a
schedule runs its steps in one process (one LiteLLM import, one DuckDB writer at a time), and a run configured
with ``execution: {config: {multiprocess: {max_concurrent: N}}}`` (``toolchoice run --workers N``) runs the
shards of ``agent_runs`` and ``judge_votes`` in up to N worker processes, each forked from a server that imported
LiteLLM and the project once. The executor is the Definitions' default, so the UI's asset job (``__ASSET_JOB``,
"Materialize") and a backfill take the same configuration; a deployment swaps it for all jobs at once
(``build_definitions(executor=...)``, docs/scale.md). Only ``release_scores`` writes the
DuckDB file, once per run, under the warehouse's lock.
"""

import dagster as dg

RELEASE_GROUP = "release"

# Imported once by the forkserver of a multiprocess run: each step process forked from it starts with LiteLLM,
# the project and its Definitions (over $TOOLCHOICE_DATA_DIR) imported.
WORKER_PRELOAD = [
    "toolchoice_pipeline.defs.workers",
    "litellm",
    "toolchoice_pipeline.definitions",
    "toolchoice_pipeline.execution.runner",
    "toolchoice_pipeline.judge",
    "toolchoice_pipeline.releases.publish",
    "dagster._core.storage.sqlite_storage",  # the instance's storage each step opens (SQLAlchemy, alembic)
]
PRELOADED_START = {"forkserver": {"preload_modules": WORKER_PRELOAD}}


def with_preload(executor_config: dict) -> dict:
    """``executor_config`` of :data:`release_executor` with the preloading forkserver as the multiprocess start
    method when the configuration names none (an explicit ``start_method`` is kept)."""
    multiprocess = executor_config.get("multiprocess")
    if multiprocess is None or multiprocess.get("start_method"):
        return executor_config
    return {"multiprocess": {**multiprocess, "start_method": PRELOADED_START}}


def _create_release_executor(init_context: dg.InitExecutorContext) -> dg.Executor:
    config = with_preload(dict(init_context.executor_config))
    create = dg.multi_or_in_process_executor.executor_creation_fn
    assert create is not None  # Optional on ExecutorDefinition; Dagster's built-in executor has one
    return create(init_context._replace(executor_config=config))


release_executor = dg.ExecutorDefinition(
    name="release_executor",
    config_schema=dg.Field(
        dg.multi_or_in_process_executor.get_config_field().config_type,
        default_value={"in_process": {}},
        description="in_process (default) or multiprocess: {max_concurrent: N} (steps forked from a server that "
        "preloaded LiteLLM and the project, unless start_method says otherwise)",
    ),
    requirements=dg.multi_or_in_process_executor.get_requirements,
    executor_creation_fn=_create_release_executor,
    description="Dagster's multi_or_in_process_executor, in-process unless configured otherwise; multiprocess "
    "steps fork from a preloaded forkserver. The executor of every job of the Definitions (release_job and the "
    "UI's asset job alike).",
)

release_job = dg.define_asset_job(
    name="release_job",
    selection=dg.AssetSelection.groups(RELEASE_GROUP),  # its executor: the Definitions' (release_executor)
    description="Evaluate one release: catalog → tasks → agent runs → judge votes → scores → gate → baseline.",
)
