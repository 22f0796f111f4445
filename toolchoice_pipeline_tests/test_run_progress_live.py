"""The counts of a real Dagster run reach the CLI's display while each stage runs, not once at its end: the
display receives intermediate counts (0 < done < total) of every model's agents and of the judge. The runs are of
the demo trimmed to 8 tasks (a stage reports each of its episodes as it finishes)."""

from __future__ import annotations

import pytest

from toolchoice_pipeline.cli.run_display import RunDisplay
from toolchoice_pipeline_tests.pipeline_helpers import DEMO_MODELS, DEMO_SUITE, copy_data, trim_tasks

TASKS = 8


class RecordingDisplay(RunDisplay):
    """The run's display, which also keeps every count it was given and what its bar showed right after."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen: list[tuple[str, str, int, int, float]] = []

    def __call__(self, stage: str, model: str, done: int, total: int) -> None:
        super().__call__(stage, model, done, total)
        shown = self.progress.tasks[self.tasks[(stage, model)]].completed
        self.seen.append((stage, model, done, total, shown))


@pytest.mark.slow
def test_a_runs_counts_reach_the_display_while_each_stage_runs(tmp_path, monkeypatch):
    from toolchoice_pipeline.cli.run import materialise_release
    from toolchoice_pipeline.releases.request import ReleaseRequest

    data_dir = copy_data(tmp_path / "data")
    n_tasks = len(trim_tasks(data_dir, TASKS))
    monkeypatch.setenv("DAGSTER_HOME", str(data_dir / "dagster_home"))
    monkeypatch.setenv("TOOLCHOICE_DATA_DIR", str(data_dir))
    request = ReleaseRequest(
        release_id="live-progress", kind="adhoc", suite=DEMO_SUITE, models=list(DEMO_MODELS), requested_by="test"
    )
    display = RecordingDisplay(models=list(DEMO_MODELS), n_tasks=n_tasks, judge=True)
    with display:
        result = materialise_release(data_dir, request, display)
    assert result.failures == []
    for stage, model in [*(("agents", m) for m in DEMO_MODELS), ("judge", "all models")]:
        counts = [(done, total, shown) for s, m, done, total, shown in display.seen if (s, m) == (stage, model)]
        assert counts, f"no count of {stage} {model}"
        total = counts[-1][1]
        assert any(0 < done < total for done, _, _ in counts), f"{stage} {model}: only {counts[:3]}..."
        assert counts[-1][0] == total
        assert all(shown == done for done, _, shown in counts)  # every count is on the bar at once
        dones = [done for done, _, _ in counts]
        assert dones == sorted(dones)


@pytest.mark.slow
def test_a_model_whose_preflight_failed_reads_failed_on_its_bar_after_a_real_run(tmp_path, monkeypatch):
    """A remote model at an address where nothing listens: its episodes all "finish" at once as errors; the
    bar must not then read n/n."""
    import socket

    import yaml

    from toolchoice_pipeline.cli.run import materialise_release
    from toolchoice_pipeline.releases.request import ReleaseRequest

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data_dir = copy_data(tmp_path / "data")
    n_tasks = len(trim_tasks(data_dir, TASKS))
    path = data_dir / "toolchoice.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    remote = "openai/gpt-4o-mini"
    config["models"] = [
        {"model": "local/bm25-router"},
        {"model": remote, "params": {"api_base": f"http://127.0.0.1:{port}/v1"}},
    ]
    config["retries"] = {"max_attempts": 1, "initial_wait_s": 0, "max_wait_s": 0}
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", "test-" + "placeholder")  # a key must be set; nothing can accept it
    monkeypatch.setenv("DAGSTER_HOME", str(data_dir / "dagster_home"))
    monkeypatch.setenv("TOOLCHOICE_DATA_DIR", str(data_dir))
    models = ["local/bm25-router", remote]
    request = ReleaseRequest(release_id="dead-model", kind="adhoc", suite=DEMO_SUITE, models=models, judge=False)
    display = RecordingDisplay(models=models, n_tasks=n_tasks, judge=False)
    with display:
        result = materialise_release(data_dir, request, display)
    assert any("model unavailable" in failure for failure in result.failures)
    assert list(display.failures) == [("agents", remote)]
    assert "could not connect" in display.failures[("agents", remote)]
    bar = display.progress.tasks[display.tasks[("agents", remote)]]
    assert bar.completed == 0 and "FAILED" in bar.description
    assert f"{bar.completed:.0f}/{bar.total:.0f}" != f"{n_tasks}/{n_tasks}"
