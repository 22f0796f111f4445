"""``toolchoice run``: materialise one release through Dagster, show progress, print the scores and the gate.

The run goes through the local Dagster instance in ``<data-dir>/dagster_home``, so it shows up in
``dagster dev`` (started with ``DAGSTER_HOME=<data-dir>/dagster_home``) like a scheduled run.
Exit codes: 0 gate passed, 1 gate failed (and nothing else failed), 2 bad input, usage or a bad environment (an OS
error inside a step: disk full, read-only, no permission), 3 the run failed for another reason (a provider or a
bug: the failing step's error is printed on one line), 4 the gate passed but the judge calibration failed (the
judge has no teeth, or could not be checked: the release is not promoted; ``judge.calibration: warn`` makes it a
warning), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM: handled as Ctrl-C is, then one more line). An
interrupted run publishes and promotes nothing; the same command resumes it.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from toolchoice_pipeline.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_GATE_FAILED,
    EXIT_OK,
    data_dir_option,
    full_disk_named,
    is_environment_failure,
)
from toolchoice_pipeline.releases.request import RELEASE_KINDS, ReleaseRequest, check_release_id, write_request
from toolchoice_pipeline.suites.config import MAX_REPEATS, ModelSpec, load_run_config
from toolchoice_pipeline.suites.read_once import inputs_read_once
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline.util.atomic import write_file_atomically
from toolchoice_pipeline.util.errors import InputError, Problem
from toolchoice_pipeline.util.extras import require
from toolchoice_pipeline.util.identifiers import control_character
from toolchoice_pipeline.util.run_lock import release_lock

if TYPE_CHECKING:
    from dagster import ExecuteInProcessResult, JobExecutionResult

    from toolchoice_pipeline.releases.document import ReleaseDocument

EXIT_RUN_FAILED = 3
EXIT_CALIBRATION_FAILED = 4
EXIT_INTERRUPTED = 130  # as a shell reports a command stopped by Ctrl-C
EXIT_TERMINATED = 143  # as a shell reports a command stopped by SIGTERM (128 + 15): a CI job cancelled
# How an interrupted step's failure reads: Dagster's own error, or DuckDB's when the signal came during a query
# (its extension catches the exception the signal handler raised and reports the query as interrupted).
INTERRUPTED = ("DagsterExecutionInterruptedError", "RuntimeError: Query interrupted")


def split_models(values: tuple[str, ...], option: str = "--models") -> list[str]:
    """``--models a,b --models c`` → ``[a, b, c]`` (order kept, duplicates dropped). Raises :class:`InputError`
    for a name holding a control character or an inner line break (it would inject lines into every output)."""
    names = [name.strip() for value in values for name in value.split(",") if name.strip()]
    for name in names:
        problem = control_character(name)
        if problem is not None:
            raise InputError(
                Problem(file="<command line>", field=option, message=f"model name {name!r} holds {problem}")
            )
    return list(dict.fromkeys(names))


@click.command("run")
@click.option("--suite", "suite_name", default="coding_agent", show_default=True, help="Suite to evaluate.")
@click.option("--release", "release_id", default=None, help="Release id (default: <kind>-<UTC timestamp>).")
@click.option(
    "--kind",
    type=click.Choice(RELEASE_KINDS),
    default="adhoc",
    show_default=True,
    help="release = may become the baseline; nightly, catalog-change and adhoc never do.",
)
@click.option(
    "--models",
    "models",
    multiple=True,
    metavar="MODEL[,MODEL...]",
    help="LiteLLM model strings to evaluate (repeat or comma-separate); default: suite's, else config's.",
)
@click.option(
    "--repeats",
    type=click.IntRange(1, MAX_REPEATS),
    default=None,
    help="Samples per task for every model (default: repeats in toolchoice.yaml, else 1).",
)
@click.option(
    "--gate-models",
    "gate_models",
    multiple=True,
    metavar="MODEL[,MODEL...]",
    help="Only these models gate the release; the others are reported as 'not gated' (default: every model "
    "without gate: false in toolchoice.yaml).",
)
@click.option("--no-judge", is_flag=True, help="Skip the judge (no TSQ, no judge cost).")
@click.option("--force", is_flag=True, help="Re-run a release id that already finished (even a baseline).")
@click.option(
    "--executor",
    type=click.Choice(["in_process", "multiprocess"]),
    default=None,
    help="Where the run's steps run: in this process (default), or in worker processes "
    "(Dagster's multiprocess executor; the default with --workers above 1).",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 256),
    default=None,
    help="Worker processes running shards at once (multiprocess executor; default: the CPU count).",
)
@click.option(
    "--chart",
    is_flag=True,
    help="Also draw the suite's trend over its last releases to releases/<id>/trend.png, the confusion heatmaps "
    "to confusion-<model>.png and the HTML report to report.html there once the run scored (`toolchoice report` "
    "draws them any time).",
)
@data_dir_option
def run_command(**options) -> int:
    """Evaluate a release: run every model on every task, judge, score, store, and gate against the baseline."""
    import signal

    with sigterm_as_interrupt() as signals:
        try:
            code = _run_release(**options)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM before or after the Dagster run (inside it: Dagster's)
            code = EXIT_INTERRUPTED
            click.echo("error: interrupted outside the Dagster run: run the same command again to resume", err=True)
    if signals and code not in (EXIT_INTERRUPTED, EXIT_BAD_INPUT, EXIT_RUN_FAILED):
        # A signal that came at a moment nobody checked for it (inside Dagster, between its checkpoints): the run
        # went on. It is not reported as a finished run, whatever its gate said.
        click.echo(
            "error: interrupted, but the signal came where the run could not stop: check the release's outcome "
            "with `toolchoice gate`, or run the same command again",
            err=True,
        )
        code = EXIT_INTERRUPTED
    if signal.SIGTERM in signals and code == EXIT_INTERRUPTED:
        click.echo(f"terminated (SIGTERM): exit {EXIT_TERMINATED}; run the same command again to resume", err=True)
        return EXIT_TERMINATED
    return code


@contextmanager
def sigterm_as_interrupt():
    """While the block runs, SIGTERM takes the path Ctrl-C takes: inside the Dagster run Dagster's own interrupt
    handling (it maps SIGTERM to its SIGINT handler: the step stops, nothing is published or promoted), outside
    it a ``KeyboardInterrupt``. Yields a list that is non-empty after the block when SIGTERM came, so the command
    can exit 143 instead of 130 (the SIGINT and SIGTERM that came: the signal numbers are read from a wakeup fd (``signal.set_wakeup_fd``), which
    the interpreter writes for every signal whatever Python handler Dagster has installed at that moment)."""
    import signal
    import threading

    terminated: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield terminated
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.set_blocking(write_fd, False)
    previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    # A parent that ignores SIGINT (a shell's background job, nohup under some shells, CI runners) would leave
    # it ignored outside Dagster's steps, and Dagster copies the SIGINT handler to SIGTERM when it restores its
    # handlers: SIGTERM would be ignored too. The run is stopped by either, at any moment.
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _quiet_interrupts(previous_hook)
    try:
        yield terminated
    finally:
        sys.unraisablehook = previous_hook
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        signal.set_wakeup_fd(previous_fd)
        try:
            received = os.read(read_fd, 1 << 16)
        except BlockingIOError:
            received = b""
        terminated.extend(signum for signum in (signal.SIGINT, signal.SIGTERM) if signum in received)
        os.close(read_fd)
        os.close(write_fd)


def _quiet_interrupts(hook: Any) -> Any:
    """``sys.unraisablehook`` that stays silent for an interrupt (``KeyboardInterrupt``, Dagster's
    ``DagsterExecutionInterruptedError``: exceptions that are not ``Exception``) raised where Python can only
    print it (a signal handler run inside a weakref callback or a finaliser): the signal itself is read from the
    wakeup fd and reported in one line; other unraisable exceptions go to ``hook``."""

    def quiet(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, BaseException) and not isinstance(unraisable.exc_value, Exception):
            return
        hook(unraisable)

    return quiet


def _run_release(
    suite_name: str,
    release_id: str | None,
    kind: str,
    models: tuple[str, ...],
    repeats: int | None,
    gate_models: tuple[str, ...],
    no_judge: bool,
    force: bool,
    executor: str | None,
    workers: int | None,
    chart: bool,
    data_dir: Path,
) -> int:
    """``toolchoice run`` itself (see :func:`run_command`)."""
    # Imported here, not at the top: `toolchoice --help` and the other commands do not pay for them.
    from toolchoice_pipeline.cli.run_display import RunDisplay, print_outcome
    from toolchoice_pipeline.execution.offline import ensure_offline_default
    from toolchoice_pipeline.releases.store import ReleaseStore

    data_dir = data_dir.resolve()
    if chart:  # refused before the run, not after its spend
        require("charts", "toolchoice run --chart")
    # The suite and toolchoice.yaml are parsed once for the command, its observation and the release's snapshot.
    click.get_current_context().with_resource(inputs_read_once())
    if executor == "in_process" and workers not in (None, 1):
        raise InputError(
            Problem(
                file="<command line>", field="--workers", message="needs --executor multiprocess (or no --executor)"
            )
        )
    if executor is None:
        executor = "multiprocess" if workers not in (None, 1) else "in_process"
    config = load_run_config(data_dir)
    suite = load_suite(data_dir, suite_name)
    # An explicit but empty --release "$TAG" (an unset variable in CI) is refused, not replaced by a timestamp.
    release_id = check_release_id(release_id if release_id is not None else f"{kind}-{datetime.now(UTC):%Y%m%d-%H%M%S}")
    if models and not split_models(models):
        raise InputError(
            Problem(
                file="<command line>",
                field="--models",
                message="names no model: give LiteLLM model strings, e.g. --models local/bm25-router",
            )
        )
    run_config = config.for_suite(split_models(models), suite.spec.models).with_repeats(repeats)
    gating = split_models(gate_models, "--gate-models") if gate_models else None
    try:
        run_config = run_config.with_gate_models(gating)
    except ValueError as exc:
        raise InputError(Problem(file="<command line>", field="--gate-models", message=str(exc))) from None
    chosen = run_config.model_names()
    ensure_offline_default([*chosen, run_config.judge.model.model] if not no_judge else chosen)
    # One run per release at a time (held until the command ends): a second is refused before any Dagster run.
    click.get_current_context().with_resource(release_lock(data_dir, release_id))
    store = ReleaseStore(data_dir)
    store.check_release_id_free(release_id, force)
    _check_stored(store, data_dir, suite.name)
    if force and kind != "release" and store.has_scores(release_id) and store.was_promoted(suite.name, release_id):
        click.echo(
            f"warning: {release_id} is a baseline of suite {suite.name}; re-run as kind {kind} it stops being "
            "one (the previous baseline comes back). Use --kind release to keep it eligible.",
            err=True,
        )
    _preflight(run_config, data_dir, judge=not no_judge)

    request = ReleaseRequest(
        release_id=release_id,
        kind=kind,
        suite=suite.name,
        models=chosen,
        repeats=repeats,
        gate_models=gating,
        judge=not no_judge,
        force=force,
        requested_by="cli",
    )
    samples = {run_config.repeats_for(spec) for spec in run_config.models}
    click.echo(
        f"release {release_id} ({kind}) · suite {suite.name} · {len(suite.tasks)} tasks · "
        f"catalog {_catalog_shown(data_dir, request, suite.catalog_version)} · models {', '.join(chosen)}"
        + ("" if samples == {1} else f" · repeats {'/'.join(map(str, sorted(samples)))}")
        + (f" · not gated {', '.join(run_config.ungated_models())}" if run_config.ungated_models() else "")
        + ("" if no_judge else f" · judge {run_config.judge.model.model} ×{run_config.judge.polls}")
    )
    n_tasks = len(suite.tasks)
    del suite  # the run pins and reads the tasks itself: this process does not hold a second copy meanwhile
    if executor == "multiprocess":
        click.echo(
            f"executor multiprocess · up to {workers or os.cpu_count()} worker processes · shards of at most "
            f"{run_config.concurrency.shard_episodes} episodes · progress in the Dagster UI, worker output in "
            f"{worker_log(dagster_home(data_dir), release_id)}"
        )
        result = materialise_release(data_dir, request, None, workers=workers or os.cpu_count() or 1)
    else:
        display = RunDisplay(models=chosen, n_tasks=n_tasks * max(samples), judge=not no_judge)
        with display:
            result = materialise_release(data_dir, request, display)
    interrupted = [
        message.split(":")[0] for message in result.failures if any(marker in message for marker in INTERRUPTED)
    ]
    failures = [f"interrupted (Ctrl-C) during {', '.join(interrupted)}"] if interrupted else result.failures
    scores = result.document
    if scores is None:
        click.echo(
            f"error: the run {'was interrupted' if interrupted else 'failed'} before the release was scored "
            f"(Dagster run {result.run_id}):",
            err=True,
        )
        for message in failures:
            click.echo(f"  {message}", err=True)
        if interrupted:
            click.echo("  nothing was published: run the same command again to resume", err=True)
            return EXIT_INTERRUPTED
        return EXIT_BAD_INPUT if result.bad_input else EXIT_RUN_FAILED
    if interrupted and "baseline" not in result.materialised:
        return _withdraw_interrupted(store, release_id, result.run_id, failures)
    if chart:
        _draw_chart(data_dir, store, scores.suite, release_id)
    passed = print_outcome(scores, data_dir, result, unpriced_models(run_config, no_judge))
    if (passed and not result.success) or result.failures:
        # Scored, but a step other than the gate (the promotion to baseline, a write) did not finish: not a
        # finished run, whatever the gate said (exit 1 is only ever a failed gate).
        promoted = (
            ", so a passing `release` was not promoted to baseline: re-run it with --force"
            if passed and "baseline" not in result.materialised
            else " and its promotion step; the release is finished"
            if "baseline" in result.materialised
            else ""
        )
        click.echo(
            f"error: the run {'was interrupted' if interrupted else 'failed'} after the release was scored "
            f"(Dagster run {result.run_id}){promoted}",
            err=True,
        )
        for message in failures:
            click.echo(f"  {message}", err=True)
        if interrupted:
            return EXIT_INTERRUPTED
        return EXIT_BAD_INPUT if result.bad_input else EXIT_RUN_FAILED
    calibration = scores.judge.calibration if scores.judge is not None else None
    if passed and calibration is not None and calibration.blocks_promotion:
        return EXIT_CALIBRATION_FAILED
    if not passed:
        from toolchoice_pipeline.releases.gate_scope import failed_models

        whose = failed_models(scores.gate) if scores.gate is not None else []
        click.echo(f"gate failed for {', '.join(whose) or 'the release'} (exit {EXIT_GATE_FAILED})", err=True)
    return EXIT_OK if passed else EXIT_GATE_FAILED


def _withdraw_interrupted(store, release_id: str, run_id: str, failures: list[str]) -> int:
    """A run interrupted after it wrote the release's ``scores.json`` and before its ``baseline`` step finished:
    the release is taken back (``scores.json`` removed, its tables out of the warehouse views), so nothing is seen
    as finished that its run did not finish, and the same command resumes it. A release that is a baseline (a
    ``--force`` re-run of one) is left as it is: withdrawing it would leave the baseline without scores."""
    scores = store.read_scores(release_id)
    click.echo(
        f"error: the run was interrupted after publishing, before its promotion (Dagster run {run_id}):", err=True
    )
    for message in failures:
        click.echo(f"  {message}", err=True)
    if store.was_promoted(scores.suite, release_id):
        click.echo(
            f"  {release_id} stays as published (it is a baseline of suite {scores.suite}); the baseline is "
            "unchanged: re-run it with --force to finish",
            err=True,
        )
        return EXIT_INTERRUPTED
    store.unpublish(release_id)
    click.echo(
        "  the publication was withdrawn and the baseline is unchanged: run the same command again to resume",
        err=True,
    )
    return EXIT_INTERRUPTED


def _draw_chart(data_dir: Path, store, suite: str, release_id: str) -> None:
    """``releases/<id>/trend.png`` (the suite's trend over its last releases, this one included), the confusion
    heatmaps ``confusion-<model>.png`` and ``report.html`` (the pictures drawn once, reused in the page)."""
    from toolchoice_pipeline.releases.confusion_chart import write_heatmaps
    from toolchoice_pipeline.releases.html_report import REPORT_FILE, collect, release_heatmaps, render_html
    from toolchoice_pipeline.releases.report import TREND_WINDOW, load_trend, render_chart
    from toolchoice_pipeline.util.errors import display_path

    target = store.scores_path(release_id).parent / "trend.png"
    title = f"{suite}: tool choice over the last releases"
    skipped: list[str] = []
    trend = load_trend(data_dir, suite, last=TREND_WINDOW, skipped=skipped)
    for line in skipped:
        click.echo(f"warning: {line}", err=True)
    render_chart(trend, target, title=title, baseline=store.baseline(suite))
    click.echo(f"chart: {display_path(target)}")
    data = collect(data_dir, release_id, pictures=False)
    data.heatmaps = release_heatmaps(data)
    data.trend_png = target.read_bytes()
    for path in write_heatmaps(data.heatmaps, target.parent):
        click.echo(f"confusion heatmap: {display_path(path)}")
    click.echo(f"HTML report: {display_path(store.write_file(release_id, REPORT_FILE, render_html(data)))}")


def unpriced_models(run_config, no_judge: bool) -> frozenset[str]:
    """The model strings (agents, and the judge unless skipped) whose calls have no known price."""
    from toolchoice_pipeline.execution.llm import is_priced

    specs = list(run_config.models) + ([] if no_judge else [run_config.judge.model])
    return frozenset(spec.model for spec in specs if not is_priced(spec))


def _check_stored(store, data_dir: Path, suite: str) -> None:
    """Refuse to start (exit 2) when what the run will read or extend is damaged: ``baseline.json``, the
    baseline's ``scores.json``, the baseline's warehouse commit record or committed Parquet files. Found after the
    agents and the judge ran, it would fail the run after its spend. Only what the run reads is checked, so the
    check costs the same however many releases are stored."""
    from toolchoice_pipeline.releases.warehouse import Warehouse

    baseline = store.baseline(suite)
    if baseline is not None:
        store.read_scores(baseline)
    Warehouse(data_dir).check([baseline] if baseline is not None else [])
    from toolchoice_pipeline.judge.journal import JOURNAL_FILE, PollJournal

    if (data_dir / JOURNAL_FILE).exists():  # a damaged judge-poll journal would fail the run after the agents ran
        PollJournal(data_dir, "").close()


def _preflight(run_config, data_dir: Path, *, judge: bool) -> None:
    """Refuse to start (exit 2) when a model cannot work: unknown provider, no API key in the environment,
    unknown local model, a replay file that does not load, an unpriced model under a budget (``budget_usd`` for
    agents, ``judge.budget_usd`` for the judge). One line per model, naming it as agent, judge or both.

    No provider is called here: the engine makes each remote model's preflight call just before its first
    uncached call (so a fully cached re-run calls nobody) and keeps a model that fails it apart from the others.
    """
    from toolchoice_pipeline.execution.preflight import static_problem
    from toolchoice_pipeline.providers import register_providers_for

    register_providers_for([*(s.model for s in run_config.models), *((run_config.judge.model.model,) if judge else ())])
    roles: dict[str, list[str]] = {}
    specs: dict[str, ModelSpec] = {}
    for role, spec in [
        *(("agent", s) for s in run_config.models),
        *((("judge", run_config.judge.model),) if judge else ()),
    ]:
        roles.setdefault(spec.model, []).append(role)
        specs.setdefault(spec.model, spec)
    found = []
    for model, spec in specs.items():
        problem = static_problem(spec, data_dir)
        if problem:
            # One line per model, naming its role(s): "agent openai/x: no API key: set OPENAI_API_KEY ..."
            found.append(
                Problem(file=f"{' and '.join(roles[model])} {model}", message=problem.removeprefix(f"{model}: "))
            )
    from toolchoice_pipeline.execution.preflight import unpriced_under_budget

    # A budget cannot stop a model whose calls count 0 USD: refused as the judge's is (one line, exit 2).
    for index, spec in enumerate(run_config.models):
        problem = unpriced_under_budget(spec, run_config.budget_usd, price_field=f"models[{index}].price")
        if problem:
            found.append(
                Problem(
                    file="agent " + spec.model,
                    field=f"models[{index}].price",
                    message=problem.removeprefix(f"{spec.model}: "),
                )
            )
    if judge:
        from toolchoice_pipeline.judge.preflight import unpriced_under_budget as judge_unpriced

        problem = judge_unpriced(run_config.judge)
        if problem:
            found.append(
                Problem(
                    file="judge " + run_config.judge.model.model,
                    field="judge.model.price",
                    message=problem.removeprefix(f"{run_config.judge.model.model}: "),
                )
            )
    if found:
        raise InputError(found)


def _catalog_shown(data_dir: Path, request: ReleaseRequest, now: str) -> str:
    """The catalog version the run evaluates: the files' ``now``, or, when the release resumes with a pin that
    evaluates the same request, the pinned one (said so when the files changed since)."""
    from toolchoice_pipeline.releases.snapshot import read_snapshot

    pinned = read_snapshot(data_dir, request.release_id)
    if pinned is None or not pinned.evaluates_as(request) or pinned.catalog_version == now:
        return now
    return f"{pinned.catalog_version} (the release's pinned snapshot of {pinned.resolved_at}; the files now: {now})"


class RunResult:
    """What the Dagster run left: its id, whether it succeeded, the failing steps' messages and the release
    document it published (release_scores' output)."""

    def __init__(
        self,
        run_id: str,
        success: bool,
        failures: list[str],
        bad_input: bool,
        check_messages: list[str],
        agent_calls: tuple[int, int] | None = None,
        document: ReleaseDocument | None = None,
        materialised: frozenset[str] = frozenset(),
    ):
        self.materialised = materialised  # the assets (last key part) the run materialised
        self.agent_calls = agent_calls  # (model calls, of which served from the call journal), when agent_runs ran
        self.document = document  # the release's scores.json as this run published it; None: not scored
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
        write_file_atomically(
            settings,
            "telemetry:\n  enabled: false\nconcurrency:\n  runs:\n"
            "    max_concurrent_runs: 1\nrun_monitoring:\n  enabled: true\n",
        )
    return home


def step_error_line(error) -> tuple[str, bool]:
    """One line for a failed step's error (Dagster's ``SerializableErrorInfo``): the innermost cause's class and
    message, never its stack; and whether it is a bad environment (the file system refused: disk full,
    read-only, no permission, an I/O error) rather than a bug or a damaged data directory (exit 3)."""
    inner = error
    while getattr(inner, "cause", None) is not None:
        inner = inner.cause
    message = " ".join((inner.message or "").split()) or inner.cls_name
    if not message.startswith(f"{inner.cls_name}:"):
        message = f"{inner.cls_name}: {message}"
    environment = is_environment_failure(message)
    return (f"bad environment: {full_disk_named(message[:400])}" if environment else message[:400]), environment


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


def materialise_release(data_dir: Path, request: ReleaseRequest, reporter, *, workers: int | None = None) -> RunResult:
    """Add the release partition and run ``release_job`` for it against ``<data-dir>/dagster_home``: in-process
    (``reporter`` receives the progress), or with ``workers`` on Dagster's multiprocess executor (each step in
    a process forked from a server that imported the project once)."""

    from toolchoice_pipeline.definitions import build_definitions
    from toolchoice_pipeline.defs.checks import GATE_FAILURE_KEY
    from toolchoice_pipeline.defs.dead_runs import fail_dead_runs, process_tags
    from toolchoice_pipeline.defs.partitions import RELEASE_PARTITIONS_NAME
    from toolchoice_pipeline.defs.pools import ensure_pool_limits
    from toolchoice_pipeline.defs.sources import observe_files

    home = dagster_home(data_dir)
    os.environ["DAGSTER_HOME"] = str(home)
    os.environ["TOOLCHOICE_DATA_DIR"] = str(data_dir)  # the worker processes build the same Definitions
    write_request(data_dir, request)
    defs = build_definitions(str(data_dir))
    tags = {
        "toolchoice/kind": request.kind,
        "toolchoice/suite": request.suite,
        "toolchoice/release": request.release_id,
        "toolchoice/requested_by": "cli",
        **process_tags(),
    }
    # Our own output says what failed and why; Dagster's console log would repeat it with stack traces.
    quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    outcome: ExecuteInProcessResult | JobExecutionResult
    with opened_instance(home) as instance:
        fail_dead_runs(instance)
        refuse_running(instance, request.release_id)
        # Its steps share the pools with every other run of the instance: provider calls and the warehouse writer.
        ensure_pool_limits(instance)
        instance.add_dynamic_partitions(RELEASE_PARTITIONS_NAME, [request.release_id])
        observe_files(instance, data_dir)  # the UI shows the files this run pins, and every release against them
        if workers is None:
            outcome = defs.resolve_job_def("release_job").execute_in_process(
                partition_key=request.release_id,
                instance=instance,
                raise_on_error=False,
                resources={"progress": reporter},
                tags=tags,
                run_config=quiet,
            )
        else:
            import dagster as dg

            from toolchoice_pipeline.definitions import release_job_for_workers

            with stderr_to(worker_log(home, request.release_id)):
                outcome = dg.execute_job(
                    dg.reconstructable(release_job_for_workers),
                    instance=instance,
                    raise_on_error=False,
                    tags={**tags, "dagster/partition": request.release_id},
                    run_config={**quiet, "execution": {"config": {"multiprocess": multiprocess_config(workers)}}},
                )
        failures, bad_input = [], False
        for event in outcome.all_events:
            if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
                error = event.step_failure_data.error
                description = (
                    event.step_failure_data.user_failure_data.description
                    if event.step_failure_data.user_failure_data
                    else None
                )
                gate_verdict = event.step_failure_data.user_failure_data and (
                    GATE_FAILURE_KEY in event.step_failure_data.user_failure_data.metadata
                )
                if error.cls_name == "DagsterAssetCheckFailedError" or gate_verdict:
                    continue  # the blocking gate did its job: the gate's verdict is printed in full
                text, environment = description, False
                if not text:
                    text, environment = step_error_line(error)
                bad_input = bad_input or environment or text.startswith("bad input")
                line = f"{(event.step_key or '').split('.')[0]}: {text}"  # a shard's step is named by its asset
                if line not in failures:  # the shards of one model fail alike
                    failures.append(line)
        checks = [
            _check_line(e.asset_check_evaluation_data)
            for e in outcome.all_events
            if e.event_type_value == "ASSET_CHECK_EVALUATION"
            and not e.asset_check_evaluation_data.passed
            # the gate and the calibration are printed in full from scores.json
            and e.asset_check_evaluation_data.check_name not in ("release_gate", "judge_calibration")
        ]
        materialised = frozenset(
            e.asset_key.path[-1]
            for e in outcome.all_events
            if e.event_type_value == "ASSET_MATERIALIZATION" and e.asset_key is not None
        )
        return RunResult(
            outcome.run_id,
            outcome.success,
            failures,
            bad_input,
            checks,
            _agent_calls(outcome),
            release_document(data_dir, request.release_id, outcome.run_id),
            materialised,
        )


def release_document(data_dir: Path, release_id: str, run_id: str) -> ReleaseDocument | None:
    """The document Dagster run ``run_id`` published for the release: ``release_scores``' output as handed over in
    this process (re-gated by ``baseline`` when the baseline in force changed meanwhile), else its
    ``scores.json`` when that run wrote it (the multiprocess executor scored it in a worker process). None when
    the run did not score the release."""
    from toolchoice_pipeline.defs.io_manager import handed_document
    from toolchoice_pipeline.releases.store import ReleaseStore

    document = handed_document(data_dir, release_id, run_id)
    if document is not None:
        return document
    store = ReleaseStore(data_dir)
    if not store.has_scores(release_id):
        return None
    stored = store.read_scores(release_id)
    return stored if stored.run_id == run_id else None


def refuse_running(instance, release_id: str) -> None:
    """Refuse (exit 2) when a Dagster run of the release is in progress in the instance (one launched from the
    UI, a sensor or a schedule, which the CLI's lock file does not see), naming it and, when tagged, its process."""
    import dagster as dg

    from toolchoice_pipeline.defs.dead_runs import HOST_TAG, IN_PROGRESS, PID_TAG

    for run in instance.get_runs(dg.RunsFilter(statuses=IN_PROGRESS, tags={"dagster/partition": release_id}), limit=1):
        process = f"pid {run.tags[PID_TAG]} on host {run.tags.get(HOST_TAG, '?')}, " if PID_TAG in run.tags else ""
        record = instance.get_run_record_by_id(run.run_id)
        since = record.start_time if record is not None else None
        started = datetime.fromtimestamp(since, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if since else "not yet started"
        raise InputError(
            Problem(
                file="<command line>",
                field="--release",
                message=f"release '{release_id}' is already running (Dagster run {run.run_id}, {process}since "
                f"{started}): wait for it to finish, or cancel it and run again to resume",
            )
        )


def worker_log(home: Path, release_id: str) -> Path:
    """Where the worker processes' own console output goes (Dagster logs each step start there)."""
    return home / "logs" / f"{release_id}.workers.log"


@contextmanager
def stderr_to(path: Path):
    """Point file descriptor 2 at ``path`` (appending) while the block runs: the worker processes started in it
    inherit it, so their Dagster console lines land in the log, not between our own lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def multiprocess_config(workers: int) -> dict:
    """Dagster's multiprocess executor with ``workers`` processes at once, each forked from a server that has
    imported the project and LiteLLM once (:data:`~toolchoice_pipeline.defs.jobs.WORKER_PRELOAD`)."""
    from toolchoice_pipeline.defs.jobs import PRELOADED_START

    return {"max_concurrent": workers, "start_method": PRELOADED_START}


def _agent_calls(outcome) -> tuple[int, int] | None:
    """``(model calls, cache hits)`` from agent_runs' materialisation metadata, or None if it did not materialise."""
    for materialization in outcome.asset_materializations_for_node("agent_runs"):
        metadata = materialization.metadata
        if "model_calls" in metadata and "cache_hits" in metadata:
            return int(metadata["model_calls"].value), int(metadata["cache_hits"].value)
    return None


def _check_line(evaluation) -> str:
    """One line for a check that did not pass: ``check warning NAME: ...`` for a WARN-severity result (it passed
    with a warning, e.g. the judge calibration), ``check failed NAME: ...`` otherwise."""
    import dagster as dg

    warning = evaluation.severity == dg.AssetCheckSeverity.WARN
    return f"check {'warning' if warning else 'failed'} {evaluation.check_name}: {evaluation.description}"
