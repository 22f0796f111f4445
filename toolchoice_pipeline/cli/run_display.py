"""The terminal side of ``toolchoice run``: a progress bar per model and stage, then the scores and the gate."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Column, Table
from rich.text import Text

from toolchoice_pipeline.cli.common import stdout_console
from toolchoice_pipeline.releases.confusion import confusion_lines
from toolchoice_pipeline.releases.document import ReleaseDocument
from toolchoice_pipeline.releases.gate_scope import failed_models
from toolchoice_pipeline.releases.report import SCORE_COLUMNS, score_cells
from toolchoice_pipeline.releases.store import ReleaseStore


def terminal_stderr():
    """A file of its own on the terminal that file descriptor 2 points at now, or ``None`` off a terminal.

    Dagster's in-process executor points descriptor 2 at its compute-log file for the whole run (and mirrors
    the file back with ``tail -F``); Rich then sees no terminal and draws nothing until the run ends. A
    duplicate of the descriptor taken before the run keeps writing to the terminal itself."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a captured or replaced stderr (tests, notebooks)
        return None
    if not os.isatty(fd):
        return None
    return os.fdopen(os.dup(fd), "w", encoding=sys.stderr.encoding or "utf-8", errors="replace", closefd=True)


class CountColumn(MofNCompleteColumn):
    """``done/total``; nothing for the run's own line, which has no count."""

    def render(self, task):
        return Text("") if task.total is None else super().render(task)


class CountedTextColumn(TextColumn):
    """A text column shown on the counted bars only (the ETA label: the run's own line has no ETA)."""

    def render(self, task):
        return Text("") if task.total is None else super().render(task)


#: What the run's own line names while no stage is counting (before the agents; after the last count).
BEFORE_STAGES = "preparing: release snapshot, catalog, tasks"
AFTER_STAGES = "scoring, gate and publishing"


class RunDisplay:
    """Progress bars (tasks done/total per model, elapsed time, ETA) fed by the assets' progress callbacks.

    Every count is shown as it arrives (a bar's clock starts with its stage's first count); on a terminal a
    thread redraws the bars 4 times a second, so the clocks run between counts too."""

    def __init__(self, models: list[str], n_tasks: int, judge: bool, file=None):
        self._own_file = file is None and (file := terminal_stderr()) is not None
        self.console = Console(file=file) if file is not None else Console(stderr=True)
        # Redrawn only on a terminal: piped into a CI log the bars are printed once, at the end, and no thread
        # re-renders them for nobody.
        self.progress = Progress(
            TextColumn("{task.description}", table_column=Column(min_width=40)),
            BarColumn(),
            CountColumn(),
            TimeElapsedColumn(),
            CountedTextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
            auto_refresh=self.console.is_terminal,
            refresh_per_second=4,
        )
        self.tasks: dict[tuple[str, str], Any] = {}
        self.failures: dict[tuple[str, str], str] = {}  # (stage, model) -> why it could not be used
        # The run's own line: its clock runs from launch to the end, through the steps that count nothing.
        self.run_line = self.progress.add_task(f"run: {BEFORE_STAGES}", total=None)
        for model in models:
            self.tasks[("agents", model)] = self.progress.add_task(
                f"agents {escape(model)}", total=n_tasks, start=False
            )
        if judge:
            self.tasks[("judge", "all models")] = self.progress.add_task(
                f"judge ({len(models)} models)", total=n_tasks * len(models), start=False
            )

    def __enter__(self) -> RunDisplay:
        self.progress.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.progress.stop()
        if self._own_file:
            self.console.file.close()

    def failed(self, stage: str, model: str, cause: str) -> None:
        """``model`` could not be used in ``stage``: its bar says FAILED and the cause, its count goes back to 0
        (its episodes "finished" as errors, not as answers) and its clock stops."""
        key = (stage, model)
        if key not in self.tasks:
            self.tasks[key] = self.progress.add_task("", total=None)
        task_id = self.tasks[key]
        self.failures[key] = cause
        self.progress.update(
            task_id,
            completed=0,
            description=f"[red]{escape(stage)} {escape(model)}: FAILED[/red] ({escape(cause[:80])})",
        )
        self.progress.stop_task(task_id)

    def __call__(self, stage: str, model: str, done: int, total: int) -> None:
        """One count of ``stage`` for ``model``: ``done`` of ``total`` episodes (or judge polls) finished."""
        key = (stage, model)
        if key in self.failures:
            return  # a late count of a failed model's errored episodes
        if key not in self.tasks:
            self.tasks[key] = self.progress.add_task(f"{escape(stage)} {escape(model)}", total=total)
        task_id = self.tasks[key]
        self.progress.start_task(task_id)  # no-op once started: the clock runs from the stage's first count
        # Each count, not one every so often: a skipped count would stay on screen for as long as the next
        # one takes (Rich's update is a few microseconds under a lock; the drawing is the refresh thread's).
        self.progress.update(task_id, completed=done, total=total)
        finished = {task.id: task.finished for task in self.progress.tasks}
        over = all(finished[tid] or key in self.failures for key, tid in self.tasks.items())
        phase = AFTER_STAGES if over else stage
        self.progress.update(self.run_line, description=f"run: {phase}")


# Said when a suite has no baseline: not "first release", since adhoc, nightly and failed runs never become one.
TERMINAL_CONFUSION_SHOWN = 5
NO_BASELINE_YET = "(none yet: only a --kind release run whose gate passes becomes the baseline)"


def scores_table(scores: ReleaseDocument, unpriced: frozenset[str] = frozenset()) -> Table:
    """The per-model scores of a release document (shares in points, costs in USD, latency in ms); a model named
    in ``unpriced`` (the judge's model string for the judge column) shows "unpriced" instead of a cost."""
    table = Table(
        title=f"release {scores.release_id} ({scores.kind}) · suite {scores.suite} · catalog {scores.catalog_version}"
    )
    table.add_column("model", no_wrap=True)
    for column in SCORE_COLUMNS:
        table.add_column(column, justify="right")
    judge_model = scores.judge.model if scores.judge is not None else None
    calibration = scores.judge.calibration if scores.judge is not None else None
    per_model = calibration.per_model if calibration is not None else {}
    if per_model:
        table.add_column("judge κ", justify="right")
    for model, figures in scores.models.items():
        cells = score_cells(figures, agent_priced=model not in unpriced, judge_priced=judge_model not in unpriced)
        if per_model:
            cells.append(judge_kappa_cell(per_model.get(model)))
        failure = model_failure(scores, model)
        table.add_row(f"{escape(model)}\n[red]{failure}[/red]" if failure else escape(model), *cells)
    return table


def model_failure(scores: ReleaseDocument, model: str) -> str | None:
    """Why ``model``'s row is not a result, for its model cell: every episode an infrastructure error (its
    preflight failed, or it never answered), or too many errors for the gate to evaluate it; None otherwise."""
    figures = scores.models[model]
    if figures.n_episodes and figures.errors >= figures.n_episodes:
        return "FAILED: every episode errored"
    if scores.gate is not None and model in scores.gate.not_evaluated:
        return "FAILED: not evaluated (errors)"
    return None


def judge_kappa_cell(agreement) -> str:
    """The judge's kappa on one model's labelled episodes, "(fails)" when at or below the bar (its TSQ is not to
    be trusted); "–" without a computable kappa."""
    if agreement is None or agreement.kappa is None:
        return "–"
    return f"{agreement.kappa:.2f}" + ("" if agreement.passed else " (fails)")


#: Above this share of episodes without a valid judge vote, a model's TSQ is flagged as unreliable.
MAX_UNJUDGED_SHARE = 0.05


def judge_warnings(scores: ReleaseDocument) -> list[str]:
    """Warnings about the judge's coverage: a model with more than 5% of its judged episodes without a valid
    vote (its TSQ comes from the rest), and episodes left unjudged because the judge budget ran out."""
    out = []
    for model, figures in scores.models.items():
        ran = figures.n_episodes - figures.errors  # with repeats: every sample is an episode
        unjudged = figures.n_unjudged
        if ran and unjudged / ran > MAX_UNJUDGED_SHARE:
            out.append(
                f"{model}: {unjudged} of {ran} episodes have no valid judge vote "
                f"({100 * unjudged / ran:.0f}%): its TSQ comes from the other {ran - unjudged} only"
            )
        exhausted = figures.flags.get("judge_budget_exhausted", 0)
        if exhausted:
            budget = scores.judge.budget_usd if scores.judge is not None else None
            out.append(
                f"{model}: judge budget exhausted{f' (budget_usd={budget})' if budget is not None else ''}: "
                f"{exhausted} episodes not fully judged (flag judge_budget_exhausted)"
            )
    return out


def infrastructure_error_causes(
    scores: ReleaseDocument, data_dir: Path, per_model: int = 3
) -> list[tuple[str, int, str]]:
    """``(model, episodes, error)`` for the most frequent infrastructure errors of each model with any (read
    from the release's committed ``task_scores``), so the cause of a failed gate is on screen."""
    if not any(m.errors for m in scores.models.values()):
        return []
    from collections import Counter

    from toolchoice_pipeline.releases.warehouse import Warehouse

    try:
        table = Warehouse(data_dir).read_table("task_scores", scores.release_id, ["model", "error"])
    except Exception:  # noqa: BLE001 - the causes are a courtesy; the scores were printed already
        return []
    counts = Counter((m, e) for m, e in zip(table["model"].to_pylist(), table["error"].to_pylist()) if e)
    out: list[tuple[str, int, str]] = []
    for model in sorted({m for m, _ in counts}):
        top = sorted(((n, e) for (m, e), n in counts.items() if m == model), key=lambda x: (-x[0], x[1]))[:per_model]
        out += [(model, n, " ".join(e.split())[:300]) for n, e in top]
    return out


def print_whole(console: Console, table: Table) -> None:
    """Print ``table``; off a terminal (a CI log, a pipe) as wide as it needs, so no header or model string is
    cut to "calls/t…" at the console's default width."""
    if console.is_terminal:
        console.print(table)
        return
    needed = Measurement.get(console, console.options.update_width(10_000), table).maximum
    width, console.width = console.width, max(console.width, needed)
    try:
        console.print(table)
    finally:
        console.width = width


def print_outcome(scores: ReleaseDocument, data_dir: Path, result, unpriced: frozenset[str] = frozenset()) -> bool:
    """Print the scores (``unpriced``: the model strings whose cost is unknown), judge warnings, the gate and any
    failed check; return whether the gate passed."""
    console = stdout_console()
    print_whole(console, scores_table(scores, unpriced))
    for warning in judge_warnings(scores):
        console.print(f"[yellow]warning[/yellow] {warning}")
    if result.agent_calls is not None:
        calls, cached = result.agent_calls
        journal = (
            f"{'all ' if cached == calls else ''}{cached} from the call journal (their cost and latency "
            "are those recorded when they were made)"
            if cached
            else "none from the call journal"
        )
        console.print(f"agent model calls: {calls}, {journal}", markup=False)
    gate = scores.gate
    baseline = scores.baseline_release_id
    if scores.gate_passed:
        console.print(f"[green]gate passed[/green] against baseline {baseline or NO_BASELINE_YET}")
    else:
        whose = failed_models(gate) if gate is not None else []
        console.print(
            f"[red]gate FAILED[/red] for {escape(', '.join(whose) or 'the release')} against baseline "
            f"{baseline or '(none yet)'}:"
        )
        failures = gate.failures if gate is not None else []
        flips_by_model = gate.flips if gate is not None else {}
        for failure in failures:
            console.print(f"  {failure.model}: {failure.reason}")
        for model in sorted({failure.model for failure in failures}):
            flips = flips_by_model.get(model, {}).get("right_tool")
            flipped = flips.right_to_wrong if flips is not None else []
            if flipped:
                console.print(
                    f"  {model}: right tool flipped right → wrong on {len(flipped)} tasks: "
                    f"{', '.join(flipped[:12])}{' ...' if len(flipped) > 12 else ''}"
                )
        if gate is not None:
            repeated = any(figures.repeats > 1 for figures in scores.models.values())
            for line in confusion_lines(gate, TERMINAL_CONFUSION_SHOWN, "episodes" if repeated else "tasks"):
                console.print(f"  {line}", markup=False, highlight=False)
    for model in gate.not_gated if gate is not None else []:
        console.print(
            f"not gated: {model} (its figures above are reported; its drops do not fail the release)", markup=False
        )
        for note in gate.notes if gate is not None else []:
            if note.startswith(f"{model}: would fail: "):
                console.print(f"  {note}", markup=False)
    for model, count, cause in infrastructure_error_causes(scores, data_dir):
        console.print(
            f"[yellow]infrastructure errors[/yellow] {escape(model)}: {count} × {escape(cause)}", highlight=False
        )
    calibration = scores.judge.calibration if scores.judge is not None else None
    if calibration is not None:
        canary_cost = f"canary judge cost {calibration.canary_judge_cost_usd:.4f} USD"
        if calibration.blocks_promotion:
            console.print(
                f"[red]{escape(calibration.message)}[/red] ({canary_cost}); the release is not promoted "
                "(judge.calibration: fail)"
            )
        elif not calibration.passed:
            console.print(
                f"[yellow]warning[/yellow] {escape(calibration.message)} ({canary_cost}; "
                "judge.calibration: warn, so the run does not fail on it)"
            )
        else:
            console.print(f"{calibration.message} ({canary_cost})", markup=False)
    if gate is not None:
        for warning in gate.warnings:
            console.print(f"[yellow]within noise[/yellow] {warning}")
        for line in gate.advice:
            console.print(f"advice: {line}")
    for model, figures in scores.models.items():
        if figures.flaky_tasks:
            shown = figures.flaky_tasks[:12]
            console.print(
                f"  {model}: {len(figures.flaky_tasks)} flaky tasks (0 < right-tool rate < 1): "
                f"{', '.join(shown)}{' ...' if len(figures.flaky_tasks) > 12 else ''}"
            )
    for message in result.check_messages:
        console.print(message, style="yellow", markup=False)
    release_dir = ReleaseStore(data_dir).scores_path(scores.release_id).parent
    console.print(
        f"scores: {release_dir / 'scores.json'} · gate report: {release_dir / 'gate.md'} · Dagster run {result.run_id}"
    )
    return scores.gate_passed
