"""Each call's time is stored in two parts: the provider's own time and the time spent in our client (waiting for
an in-flight slot, the event loop, LiteLLM); the per-model p50/p95 are over the provider's time."""

from toolchoice_pipeline.execution.runner import run_suite_sync
from toolchoice_pipeline.releases.lineage import Lineage
from toolchoice_pipeline.releases.publish import publish_release
from toolchoice_pipeline.releases.warehouse import Warehouse
from toolchoice_pipeline.suites.config import RunConfig
from toolchoice_pipeline_tests.release_helpers import make_suite

SIM_MS = 40.0


def test_provider_time_and_client_queueing_are_stored_apart(tmp_path):
    suite = make_suite(12)
    # 8 workers share 2 in-flight slots: most calls wait for a slot, and that wait is ours, not the provider's.
    config = RunConfig.model_validate(
        {
            "models": [{"model": "sim/slow", "params": {"sim_latency_ms": SIM_MS}}],
            "concurrency": {"max_in_flight": 2, "per_model": 8},
        }
    )
    episodes = run_suite_sync(suite, config, data_dir=tmp_path, cache_policy="off")
    steps = [step for episode in episodes for step in episode.steps]
    assert steps and all(step.provider_ms is not None for step in steps)
    for step in steps:
        assert SIM_MS <= step.provider_ms <= step.latency_ms
        assert step.queued_ms >= step.latency_ms - step.provider_ms - 1e-6
    assert max(step.queued_ms for step in steps) >= SIM_MS  # someone waited a whole call for a slot
    assert max(step.provider_ms for step in steps) < max(step.queued_ms + step.provider_ms for step in steps)

    lineage = Lineage(release_id="r1", suite=suite.name, catalog_version=suite.catalog_version, run_id="run")
    published = publish_release(tmp_path, suite, lineage, "adhoc", episodes)
    rows = Warehouse(tmp_path).read_table("agent_calls", "r1", ["provider_ms", "queued_ms", "latency_ms"]).to_pylist()
    assert sorted(r["provider_ms"] for r in rows) == sorted(step.provider_ms for step in steps)
    assert sorted(r["queued_ms"] for r in rows) == sorted(step.queued_ms for step in steps)
    scores = published.scores.models["sim/slow"]
    assert SIM_MS <= scores.provider_ms_p50 <= scores.provider_ms_p95
    stored = Warehouse(tmp_path).read_table("task_scores", "r1", ["provider_ms"]).column("provider_ms").to_pylist()
    assert sorted(stored) == sorted(episode.provider_ms for episode in episodes)


def test_a_reply_from_the_journal_keeps_the_split_of_the_call_that_produced_it(tmp_path):
    suite = make_suite(2)
    config = RunConfig.model_validate({"models": [{"model": "sim/fast", "params": {"sim_latency_ms": 1}}]})
    first = run_suite_sync(suite, config, data_dir=tmp_path, cache_policy="read_write")
    again = run_suite_sync(suite, config, data_dir=tmp_path, cache_policy="read_write")
    made = {step.request_key: step for episode in first for step in episode.steps}
    steps = [step for episode in again for step in episode.steps]
    assert steps and all(step.cache_hit for step in steps) and not any(s.cache_hit for s in made.values())
    # the re-run's latency columns are the original call's, so p50/p95 do not jump on an unchanged re-run
    for step in steps:
        original = made[step.request_key]
        assert original.provider_ms is not None
        assert (step.latency_ms, step.provider_ms, step.queued_ms) == (
            original.latency_ms,
            original.provider_ms,
            original.queued_ms,
        )
