"""``toolchoice run``: materialise one release through Dagster, show progress, print the scores and the gate.

The run goes through the local Dagster instance in ``<data-dir>/dagster_home``, so it shows up in
``dagster dev`` (started with ``DAGSTER_HOME=<data-dir>/dagster_home``) like a scheduled run.
Exit codes: 0 gate passed, 1 gate failed, 2 bad input or usage, 3 the run failed for another reason
(a provider or a bug: the failing step's error is printed), 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import click

from toolchoice_pipeline.suites.config import load_run_config
from toolchoice_pipeline.util.errors import InputError, Problem
from toolchoice_pipeline.execution.offline import ensure_offline_default
from toolchoice_pipeline.releases.request import RELEASE_KINDS, ReleaseRequest, check_release_id, write_request
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline.util.atomic import write_file_atomically
from toolchoice_pipeline.cli.common import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_OK, data_dir_option

EXIT_RUN_FAILED = 3
EXIT_INTERRUPTED = 130  # as a shell reports a command stopped by Ctrl-C
INTERRUPTED = "DagsterExecutionInterruptedError"


def split_models(values: tuple[str, ...]) -> list[str]:
    """``--models a,b --models c`` → ``[a, b, c]`` (order kept, duplicates dropped)."""
    names = [name.strip() for value in values for name in value.split(",") if name.strip()]
    return list(dict.fromkeys(names))


@click.command("run")
@click.option("--suite", "suite_name", default="coding_agent", show_default=True, help="Suite to evaluate.")
@click.option("--release", "release_id", default=None, help="Release id (default: <kind>-<UTC timestamp>).")
@click.option("--kind", type=click.Choice(RELEASE_KINDS), default="adhoc", show_default=True,
              help="release = may become the baseline; nightly, catalog-change and adhoc never do.")
@click.option("--models", "models", multiple=True, metavar="MODEL[,MODEL...]",
              help="LiteLLM model strings to evaluate (repeat or comma-separate); default: suite's, else config's.")
@click.option("--no-judge", is_flag=True, help="Skip the judge (no TSQ, no judge cost).")
@click.option("--force", is_flag=True, help="Re-run a release id that already finished (even a baseline).")
@data_dir_option
def run_command(suite_name: str, release_id: str | None, kind: str, models: tuple[str, ...], no_judge: bool,
                force: bool, data_dir: Path) -> int:
    """Evaluate a release: run every model on every task, judge, score, store, and gate against the baseline."""
    from toolchoice_pipeline.releases.store import ReleaseStore
    from toolchoice_pipeline.cli.run_display import RunDisplay, print_outcome

    data_dir = data_dir.resolve()
    config = load_run_config(data_dir)
    suite = load_suite(data_dir, suite_name)
    # An explicit but empty --release "$TAG" (an unset variable in CI) is refused, not replaced by a timestamp.
    release_id = check_release_id(release_id if release_id is not None
                                  else f"{kind}-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}")
    if models and not split_models(models):
        raise InputError(Problem(file="<command line>", field="--models",
                                 message="names no model: give LiteLLM model strings, e.g. --models local/bm25-router"))
    run_config = config.for_suite(split_models(models), suite.spec.models)
    chosen = run_config.model_names()
    ensure_offline_default([*chosen, run_config.judge.model.model] if not no_judge else chosen)
    store = ReleaseStore(data_dir)
    store.check_release_id_free(release_id, force)
    _check_stored(store, data_dir, suite.name)
    if force and kind != "release" and store.has_scores(release_id) and store.was_promoted(suite.name, release_id):
        click.echo(f"warning: {release_id} is a baseline of suite {suite.name}; re-run as kind {kind} it stops being "
                   "one (the previous baseline comes back). Use --kind release to keep it eligible.", err=True)
    _preflight(run_config, data_dir, judge=not no_judge)

    request = ReleaseRequest(release_id=release_id, kind=kind, suite=suite.name, models=chosen, judge=not no_judge,
                             force=force, requested_by="cli")
    click.echo(f"release {release_id} ({kind}) · suite {suite.name} · {len(suite.tasks)} tasks · "
               f"catalog {suite.catalog_version} · models {', '.join(chosen)}"
               + ("" if no_judge else f" · judge {run_config.judge.model.model} ×{run_config.judge.polls}"))
    display = RunDisplay(models=chosen, n_tasks=len(suite.tasks), judge=not no_judge)
    with display:
        result = materialise_release(data_dir, request, display)
    interrupted = [message.split(":")[0] for message in result.failures if INTERRUPTED in message]
    failures = [f"interrupted (Ctrl-C) during {', '.join(interrupted)}"] if interrupted else result.failures
    if not store.has_scores(release_id) or store.read_scores(release_id).run_id != result.run_id:
        click.echo(f"error: the run {'was interrupted' if interrupted else 'failed'} before the release was scored "
                   f"(Dagster run {result.run_id}):", err=True)
        for message in failures:
            click.echo(f"  {message}", err=True)
        if interrupted:
            click.echo("  nothing was published: run the same command again to resume", err=True)
            return EXIT_INTERRUPTED
        return EXIT_BAD_INPUT if result.bad_input else EXIT_RUN_FAILED
    passed = print_outcome(store.read_scores(release_id), data_dir, result)
    if passed and not result.success:
        # Scored, but a later step (the promotion to baseline) did not finish: not a finished run.
        click.echo(f"error: the run {'was interrupted' if interrupted else 'failed'} after the release was scored "
                   f"(Dagster run {result.run_id}), so a passing `release` was not promoted to baseline: "
                   "re-run it with --force", err=True)
        for message in failures:
            click.echo(f"  {message}", err=True)
        return EXIT_INTERRUPTED if interrupted else EXIT_RUN_FAILED
    return EXIT_OK if passed else EXIT_GATE_FAILED


def _check_stored(store, data_dir: Path, suite: str) -> None:
    """Refuse to start (exit 2) when what the run will read or extend is damaged: ``baseline.json``, the
    baseline's ``scores.json``, a warehouse commit record or a committed Parquet file. Found after the agents and
    the judge ran, it would fail the run after its spend."""
    from toolchoice_pipeline.releases.warehouse import Warehouse

    baseline = store.baseline(suite)
    if baseline is not None:
        store.read_scores(baseline)
    Warehouse(data_dir).check()


def _preflight(run_config, data_dir: Path, *, judge: bool) -> None:
    """Refuse to start (exit 2) when a model cannot work: unknown provider, no API key in the environment,
    unknown local model, a replay file that does not load. One clear message per model.

    No provider is called here: the engine makes each remote model's preflight call just before its first
    uncached call (so a fully cached re-run calls nobody) and keeps a model that fails it apart from the others.
    """
    from toolchoice_pipeline.execution.preflight import static_problem
    from toolchoice_pipeline.providers import register_providers

    register_providers()
    specs = list(run_config.models) + ([run_config.judge.model] if judge else [])
    found = []
    for spec in specs:
        problem = static_problem(spec, data_dir)
        if problem:
            found.append(Problem(file="<models>", message=problem))
    if found:
        raise InputError(found)


class RunResult:
    """What the Dagster run left: its id, whether it succeeded, and the failing steps' messages."""

    def __init__(self, run_id: str, success: bool, failures: list[str], bad_input: bool,
                 check_messages: list[str]):
        self.run_id = run_id
        self.success = success
        self.failures = failures
        self.bad_input = bad_input
        self.check_messages = check_messages


def dagster_home(data_dir: Path) -> Path:
    """``<data-dir>/dagster_home``, created on first use with telemetry off (the tool runs offline by default;
    edit its ``dagster.yaml`` to opt in)."""
    home = data_dir / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    settings = home / "dagster.yaml"
    if not settings.exists():  # two first runs at once write the same text; a reader sees one whole file
        write_file_atomically(settings, "telemetry:\n  enabled: false\nconcurrency:\n  runs:\n"
                                        "    max_concurrent_runs: 1\nrun_monitoring:\n  enabled: true\n")
    return home


@contextmanager
def opened_instance(home: Path):
    """The Dagster instance of ``home``, opened under ``home/.instance.lock``: the first open creates its SQLite
    storages, and two runs doing that at once on a fresh data dir would both create them (``table
    alembic_version already exists``)."""
    import dagster as dg
    from filelock import FileLock

    with FileLock(str(home / ".instance.lock"), timeout=600):
        instance = dg.DagsterInstance.get()
    with instance:
        yield instance


def materialise_release(data_dir: Path, request: ReleaseRequest, reporter) -> RunResult:
    """Add the release partition and run ``release_job`` for it in-process against ``<data-dir>/dagster_home``."""
    import dagster as dg

    from toolchoice_pipeline.definitions import build_definitions
    from toolchoice_pipeline.defs.dead_runs import fail_dead_runs, process_tags
    from toolchoice_pipeline.defs.partitions import RELEASE_PARTITIONS_NAME

    home = dagster_home(data_dir)
    os.environ["DAGSTER_HOME"] = str(home)
    write_request(data_dir, request)
    defs = build_definitions(str(data_dir))
    with opened_instance(home) as instance:
        fail_dead_runs(instance)
        instance.add_dynamic_partitions(RELEASE_PARTITIONS_NAME, [request.release_id])
        job = defs.resolve_job_def("release_job")
        outcome = job.execute_in_process(
            partition_key=request.release_id,
            instance=instance,
            raise_on_error=False,
            resources={"progress": reporter},
            tags={"toolchoice/kind": request.kind, "toolchoice/suite": request.suite,
                  "toolchoice/release": request.release_id, "toolchoice/requested_by": "cli", **process_tags()},
            # Our own output says what failed and why; Dagster's console log would repeat it with stack traces.
            run_config={"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}},
        )
        failures, bad_input = [], False
        for event in outcome.all_events:
            if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
                error = event.step_failure_data.error
                description = (event.step_failure_data.user_failure_data.description
                               if event.step_failure_data.user_failure_data else None)
                if error.cls_name == "DagsterAssetCheckFailedError":
                    continue  # the blocking gate did its job: the gate's verdict is printed in full
                text = description or error.to_string().strip()
                bad_input = bad_input or text.startswith("bad input")
                failures.append(f"{event.step_key}: {text}")
        checks = [f"{e.asset_check_evaluation_data.check_name}: {e.asset_check_evaluation_data.description}"
                  for e in outcome.all_events
                  if e.event_type_value == "ASSET_CHECK_EVALUATION" and not e.asset_check_evaluation_data.passed
                  and e.asset_check_evaluation_data.check_name != "release_gate"]  # the gate is printed in full
        return RunResult(outcome.run_id, outcome.success, failures, bad_input, checks)
