"""The run's progress bars: moved at most every ``UPDATE_INTERVAL_S`` while episodes stream in, and always to
their full count."""

from __future__ import annotations

from toolchoice_pipeline.cli import run_display
from toolchoice_pipeline.cli.run_display import UPDATE_INTERVAL_S, RunDisplay


def completed(display: RunDisplay, stage: str, model: str) -> float:
    return display.progress.tasks[display.tasks[(stage, model)]].completed


def test_a_bar_moves_at_most_once_an_interval_and_always_to_its_full_count(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(run_display.time, "monotonic", lambda: clock[0])
    display = RunDisplay(models=["m"], n_tasks=10, judge=False)
    display("agents", "m", 1, 10)
    assert completed(display, "agents", "m") == 1
    display("agents", "m", 2, 10)  # within the interval: not drawn
    assert completed(display, "agents", "m") == 1
    clock[0] += 1.5 * UPDATE_INTERVAL_S
    display("agents", "m", 3, 10)
    assert completed(display, "agents", "m") == 3
    display("agents", "m", 10, 10)  # the full count, within the interval
    assert completed(display, "agents", "m") == 10


def test_a_stage_first_seen_gets_its_bar_at_once():
    display = RunDisplay(models=["m"], n_tasks=4, judge=False)
    display("judge", "all models", 1, 12)
    assert completed(display, "judge", "all models") == 1
