"""The run's progress bars: every count shown as it arrives, a bar's clock started by its stage's first count,
and drawn on the terminal while Dagster's in-process executor points file descriptor 2 at its compute log."""

from __future__ import annotations

import os
import select
import sys

from rich.console import Console

from toolchoice_pipeline.cli.run_display import RunDisplay


def completed(display: RunDisplay, stage: str, model: str) -> float:
    return display.progress.tasks[display.tasks[(stage, model)]].completed


def test_every_count_moves_its_bar_at_once():
    display = RunDisplay(models=["m"], n_tasks=10, judge=False)
    for done in range(1, 11):
        display("agents", "m", done, 10)
        assert completed(display, "agents", "m") == done


def test_a_stage_first_seen_gets_its_bar_at_once():
    display = RunDisplay(models=["m"], n_tasks=4, judge=False)
    display("judge", "all models", 1, 12)
    assert completed(display, "judge", "all models") == 1


def test_a_bars_clock_starts_with_its_stages_first_count():
    display = RunDisplay(models=["m"], n_tasks=4, judge=True)
    judge = display.progress.tasks[display.tasks[("judge", "all models")]]
    agents = display.progress.tasks[display.tasks[("agents", "m")]]
    assert not judge.started and not agents.started  # shown as waiting (-:--:--), not as running since launch
    display("agents", "m", 0, 4)
    assert agents.started and not judge.started


def read_available(fd: int) -> bytes:
    out = b""
    while select.select([fd], [], [], 0)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        out += chunk
    return out


def test_the_bars_reach_the_terminal_while_descriptor_2_points_at_a_compute_log(tmp_path):
    """What Dagster's in-process executor does for the whole run (``redirect_stream`` in its compute-log
    capture): before the fix Rich saw a file, not a terminal, and drew nothing until the run ended."""
    master, slave = os.openpty()
    saved_fd, saved_stderr = os.dup(2), sys.stderr
    log = tmp_path / "compute.log"
    try:
        os.dup2(slave, 2)
        sys.stderr = os.fdopen(2, "w", closefd=False)
        display = RunDisplay(models=["m"], n_tasks=10, judge=False)
        assert display.console.is_terminal
        display.__enter__()
        with open(log, "ab") as compute_log:
            os.dup2(compute_log.fileno(), 2)  # the step runs with its output captured
        read_available(master)
        display("agents", "m", 3, 10)
        display.progress.refresh()
        assert display.console.is_terminal
        shown = read_available(master).decode("utf-8", "replace")
        display.__exit__(None, None, None)
    finally:
        sys.stderr = saved_stderr
        os.dup2(saved_fd, 2)
        os.close(saved_fd)
        os.close(slave)
        os.close(master)
    assert "3/10" in shown
    assert "3/10" not in log.read_text(encoding="utf-8", errors="replace")


def test_off_a_terminal_the_bars_write_to_stderr_as_before():
    display = RunDisplay(models=["m"], n_tasks=2, judge=False, file=None)
    assert isinstance(display.console, Console)
    assert not display._own_file


def test_the_runs_own_line_names_the_stage_and_then_the_steps_after_the_last_count():
    display = RunDisplay(models=["a", "b"], n_tasks=2, judge=True)
    run_line = display.progress.tasks[display.run_line]
    assert run_line.started and run_line.total is None  # its clock runs from launch, before any count
    assert "preparing" in run_line.description
    display("agents", "a", 2, 2)
    assert run_line.description == "run: agents"
    display("agents", "b", 2, 2)
    display("judge", "all models", 1, 4)
    assert run_line.description == "run: judge"
    display("judge", "all models", 4, 4)
    assert "scoring" in run_line.description


def test_the_runs_own_line_shows_its_clock_but_no_count_or_eta():
    display = RunDisplay(models=["m"], n_tasks=4, judge=False)
    display("agents", "m", 1, 4)
    table = display.progress.make_tasks_table(display.progress.tasks)
    run_row = [str(getattr(column._cells[0], "plain", column._cells[0])) for column in table.columns]
    agents_row = [str(getattr(column._cells[1], "plain", column._cells[1])) for column in table.columns]
    assert "1/4" in agents_row and "ETA" in agents_row
    assert "ETA" not in run_row and not any("/" in cell for cell in run_row[2:])
