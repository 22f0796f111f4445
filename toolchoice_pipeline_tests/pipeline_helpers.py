"""Shared helpers of the Dagster pipeline tests: a private copy of ``data/``, one release materialised through
``release_job`` in a given Dagster instance, the ``toolchoice`` console script as a subprocess, catalog edits,
and reading the results back (scores, warehouse, Dagster events).

Real parts only: every helper works on real files, a real Dagster instance and the installed console script.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import yaml

REPO = Path(__file__).resolve().parents[1]
REPO_DATA = REPO / "data"
TEST_DATA = Path(__file__).resolve().parent / "data"
BIN = Path(sys.executable).parent
TOOLCHOICE = BIN / "toolchoice"
DEMO_SUITE = "coding_agent"
DEMO_MODELS = ("local/bm25-router", "local/name-match")
#: The release graph in dependency order (DESIGN §6; issue 6).
ASSET_CHAIN = (
    "release_snapshot",
    "tool_catalog",
    "eval_tasks",
    "agent_runs",
    "judge_votes",
    "task_scores",
    "release_scores",
    "baseline",
)
WAREHOUSE_TABLES = ("task_scores", "release_scores", "agent_calls", "judge_votes", "tool_catalog")
LINEAGE_COLUMNS = ("release_id", "suite", "catalog_version", "run_id")
#: What ``copy_data`` leaves out: run outputs of whoever used the repo's data directory.
RUN_OUTPUTS = ("releases", "warehouse", "cache", "reports")


def copy_data(target: Path, source: Path = REPO_DATA) -> Path:
    """Copy the project's ``data/`` to ``target`` without run outputs; of ``dagster_home/`` only the committed
    ``dagster.yaml`` is kept. Returns ``target``."""

    def ignore(directory: str, names: list[str]) -> list[str]:
        if Path(directory) == source:
            return [name for name in names if name in RUN_OUTPUTS]
        if Path(directory) == source / "dagster_home":
            return [name for name in names if name != "dagster.yaml"]
        return []

    shutil.copytree(source, target, ignore=ignore)
    return target


def trim_tasks(data_dir: Path, count: int, suite: str = DEMO_SUITE) -> list[str]:
    """Keep ``count`` of the suite's tasks, spread evenly over ``tasks.jsonl`` (every tool kind of the demo stays
    in: 16 keep 10 of its 11 expected tools, 12 keep 8), for tests that need a whole run but not every task.
    Returns the kept task ids in file order."""
    path = data_dir / "suites" / suite / "tasks.jsonl"
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    kept = [lines[int(index * len(lines) / count)] for index in range(min(count, len(lines)))]
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return [json.loads(line)["id"] for line in kept]


def set_description(data_dir: Path, tool: str, description: str, suite: str = DEMO_SUITE) -> str:
    """Replace ``tool``'s description in the suite's ``catalog.yaml``; returns the description it had."""
    path = data_dir / "suites" / suite / "catalog.yaml"
    catalog = yaml.safe_load(path.read_text(encoding="utf-8"))
    [entry] = [tool_def for tool_def in catalog if tool_def["name"] == tool]
    before, entry["description"] = entry["description"], description
    path.write_text(yaml.safe_dump(catalog, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return before


#: A home whose storages a new instance created, per ``dagster_instance`` arguments: made once per process.
_EMPTY_HOMES: dict[str, Path] = {}


def dagster_instance(home: Path, **kwargs: Any):
    """``dagster.instance_for_test`` persisted in ``home`` (created): a context manager giving the instance.

    A new (or empty) ``home`` first gets a copy of the SQLite storages an instance of the same arguments created
    once in this process: the same files a new instance writes (schemas, migration stamps; no path, no run), for a
    tenth of the cost of creating them (about 0.4 CPU-s an instance). Each test still has its own empty instance.
    """
    import atexit
    import tempfile

    import dagster as dg

    if not home.is_dir() or not any(home.iterdir()):
        key = json.dumps(kwargs, sort_keys=True, default=str)
        if key not in _EMPTY_HOMES:
            empty = Path(tempfile.mkdtemp(prefix="toolchoice-empty-dagster-home-"))
            atexit.register(shutil.rmtree, empty, ignore_errors=True)
            with dg.instance_for_test(temp_dir=str(empty), **kwargs):
                pass
            _EMPTY_HOMES[key] = empty
        shutil.copytree(_EMPTY_HOMES[key], home, dirs_exist_ok=True, ignore=shutil.ignore_patterns("dagster.yaml"))
    home.mkdir(parents=True, exist_ok=True)
    return dg.instance_for_test(temp_dir=str(home), **kwargs)


def materialise(data_dir: Path, instance, release_id: str, **request_fields: Any):
    """Write the release request, add the partition and run ``release_job`` for it in-process in ``instance``.

    ``request_fields`` are :class:`~toolchoice_pipeline.releases.request.ReleaseRequest` fields (kind, suite,
    models, judge, ...). Returns Dagster's ``ExecuteInProcessResult`` (``raise_on_error=False``: a failing
    blocking check shows as ``success == False``).
    """
    from toolchoice_pipeline.definitions import build_definitions
    from toolchoice_pipeline.defs.partitions import RELEASE_PARTITIONS_NAME
    from toolchoice_pipeline.releases.request import ReleaseRequest, write_request

    write_request(data_dir, ReleaseRequest(release_id=release_id, requested_by="test", **request_fields))
    instance.add_dynamic_partitions(RELEASE_PARTITIONS_NAME, [release_id])
    defs = build_definitions(str(data_dir))
    return defs.resolve_job_def("release_job").execute_in_process(
        partition_key=release_id, instance=instance, raise_on_error=False
    )


def check_evaluations(result) -> dict[str, Any]:
    """``{check name: AssetCheckEvaluation}`` of a Dagster run result."""
    return {
        event.asset_check_evaluation_data.check_name: event.asset_check_evaluation_data
        for event in result.all_events
        if event.event_type_value == "ASSET_CHECK_EVALUATION"
    }


def materialised_assets(result) -> dict[str, Any]:
    """``{asset name: AssetMaterialization}`` of a Dagster run result."""
    return {
        event.asset_key.to_user_string(): event.step_materialization_data.materialization
        for event in result.all_events
        if event.event_type_value == "ASSET_MATERIALIZATION"
    }


#: What the tests set for a ``toolchoice`` command (a process or :func:`toolchoice_in_process`), beside dropping the
#: caller's ``TOOLCHOICE_DATA_DIR``: offline LiteLLM, and lines wide enough to be read unwrapped.
COMMAND_ENVIRONMENT = {"LITELLM_OFFLINE_MODE": "true", "COLUMNS": "200"}


def command_env() -> dict[str, str]:
    """The test's environment for a ``toolchoice`` process: :data:`COMMAND_ENVIRONMENT`, no ``TOOLCHOICE_DATA_DIR``."""
    env = {**os.environ, **COMMAND_ENVIRONMENT}
    env.pop("TOOLCHOICE_DATA_DIR", None)
    return env


def toolchoice(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the installed ``toolchoice`` console script; the environment is the test's (:func:`command_env`)."""
    env = command_env()
    return subprocess.run([str(TOOLCHOICE), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def read_scores(data_dir: Path, release_id: str) -> dict[str, Any]:
    return json.loads((data_dir / "releases" / release_id / "scores.json").read_text(encoding="utf-8"))


def query(data_dir: Path, sql: str, params: list[Any] | None = None) -> list[tuple]:
    """Run ``sql`` on ``warehouse/toolchoice.duckdb`` opened read-only (as outside readers do)."""
    with duckdb.connect(str(data_dir / "warehouse" / "toolchoice.duckdb"), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


#: Variables a run sets in its process (``cli/run.py``) or :func:`toolchoice` sets for the console script.
_RUN_ENVIRONMENT = ("DAGSTER_HOME", "TOOLCHOICE_DATA_DIR", "LITELLM_OFFLINE_MODE", "COLUMNS")


def toolchoice_in_process(*args: str, data_dir: Path | None = None) -> int:
    """Run ``toolchoice ARGS`` through the CLI's guard in this process (``run_guarded``, what the console script's
    ``main`` calls, less the process start and ``main``'s process-wide collector settings), with the environment
    :func:`toolchoice` gives the console script; ``--data-dir data_dir`` is added unless ``args`` name one. The
    variables the command sets are restored after it. Returns its exit code."""
    from toolchoice_pipeline.cli import cli
    from toolchoice_pipeline.cli.common import run_guarded

    argv = [*args] if data_dir is None or "--data-dir" in args else [*args, "--data-dir", str(data_dir)]
    saved = {name: os.environ.get(name) for name in _RUN_ENVIRONMENT}
    os.environ.update(COMMAND_ENVIRONMENT)
    os.environ.pop("TOOLCHOICE_DATA_DIR", None)
    try:
        return run_guarded(cli, argv)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
