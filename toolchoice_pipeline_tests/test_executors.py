"""One executor for every job: ``release_job`` and the UI's asset job (``__ASSET_JOB``, "Materialize") share the
Definitions' ``release_executor``, in-process by default and, configured multiprocess, forking each step from a
server that preloaded LiteLLM and the project. The cluster snippets of docs/scale.md, executed as written:
Definitions with ``dagster_k8s.k8s_job_executor`` and ``dagster_celery.celery_executor``, their run config
validated by Dagster (no cluster needed)."""

from __future__ import annotations

import re

import dagster as dg
import pytest
import yaml
from dagster._core.executor.multiprocess import MultiprocessExecutor

from toolchoice_pipeline.definitions import build_definitions, release_job_for_workers
from toolchoice_pipeline.defs.jobs import PRELOADED_START, WORKER_PRELOAD, release_executor
from toolchoice_pipeline_tests.pipeline_helpers import REPO

ASSET_JOB = "__ASSET_JOB"
LAUNCHPAD_MULTIPROCESS = {"execution": {"config": {"multiprocess": {"max_concurrent": 2}}}}


def scale_blocks(language: str) -> list[str]:
    text = (REPO / "docs" / "scale.md").read_text(encoding="utf-8")
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def docs_definitions(module: str) -> dg.Definitions:
    """Execute docs/scale.md's Python block importing ``module`` as written; its ``defs``."""
    [block] = [block for block in scale_blocks("python") if f"from {module} import" in block]
    namespace: dict = {}
    exec(compile(block, f"docs/scale.md ({module})", "exec"), namespace)
    return namespace["defs"]


def executor_config(job: dg.JobDefinition, run_config: dict) -> dict:
    """The executor's configuration Dagster resolves from ``run_config`` (raises on a rejected one)."""
    return dg.validate_run_config(job, run_config)["execution"][job.executor_def.name]


def executor_for(job: dg.JobDefinition, run_config: dict, instance: dg.DagsterInstance):
    """The executor ``job``'s executor definition creates for ``run_config``, as a run does."""
    return job.executor_def.executor_creation_fn(
        dg.InitExecutorContext(
            job=dg.reconstructable(release_job_for_workers),
            executor_def=job.executor_def,
            executor_config=executor_config(job, run_config),
            instance=instance,
        )
    )


@pytest.fixture(scope="module")
def defs(tmp_path_factory):
    return build_definitions(str(tmp_path_factory.mktemp("data")))


def test_the_release_job_and_the_ui_asset_job_have_the_one_executor(defs):
    release_job, asset_job = defs.resolve_job_def("release_job"), defs.resolve_job_def(ASSET_JOB)
    assert release_job.executor_def is release_executor and asset_job.executor_def is release_executor
    assert executor_config(asset_job, {}) == {"in_process": {"retries": {"enabled": {}}}}


@pytest.mark.parametrize("job_name", ["release_job", ASSET_JOB])
def test_a_multiprocess_run_from_the_launchpad_preloads_the_project(defs, job_name):
    with dg.instance_for_test() as instance:
        executor = executor_for(defs.resolve_job_def(job_name), LAUNCHPAD_MULTIPROCESS, instance)
        assert isinstance(executor, MultiprocessExecutor)
        assert executor._start_method == "forkserver"  # noqa: SLF001 (what the step processes start with)
        assert executor._explicit_forkserver_preload == WORKER_PRELOAD  # noqa: SLF001
        assert executor._max_concurrent == 2  # noqa: SLF001
        spawn = {"execution": {"config": {"multiprocess": {"max_concurrent": 2, "start_method": {"spawn": {}}}}}}
        assert executor_for(defs.resolve_job_def(job_name), spawn, instance)._start_method == "spawn"  # noqa: SLF001
        in_process = executor_for(defs.resolve_job_def(job_name), {}, instance)
        assert not isinstance(in_process, MultiprocessExecutor)
    assert PRELOADED_START == {"forkserver": {"preload_modules": WORKER_PRELOAD}}


def test_the_docs_kubernetes_deployment_loads_and_every_job_runs_on_k8s():
    from dagster_k8s import k8s_job_executor

    defs = docs_definitions("dagster_k8s")
    for name in ("release_job", ASSET_JOB, "observe_suite_files"):
        job = defs.resolve_job_def(name)
        assert job.executor_def.name == k8s_job_executor.name
        config = executor_config(job, {})
        assert config["max_concurrent"] == 8
        assert config["env_config_maps"] == ["toolchoice-env"]
        assert config["env_secrets"] == ["toolchoice-provider-keys"]
    dg.Definitions.validate_loadable(defs)


def test_the_docs_celery_deployment_loads_and_accepts_the_docs_run_config():
    from dagster_celery import celery_executor

    defs = docs_definitions("dagster_celery")
    [run_config] = [yaml.safe_load(block) for block in scale_blocks("yaml") if "broker:" in block]
    for name in ("release_job", ASSET_JOB):
        job = defs.resolve_job_def(name)
        assert job.executor_def is celery_executor
        config = executor_config(job, run_config)
        assert config["broker"] == "pyamqp://guest@rabbitmq.internal//"
        assert config["include"] == ["toolchoice_pipeline.definitions"]
        with pytest.raises(dg.DagsterInvalidConfigError, match="multiprocess"):
            dg.validate_run_config(job, LAUNCHPAD_MULTIPROCESS)
