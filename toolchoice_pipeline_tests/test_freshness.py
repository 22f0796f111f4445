"""Freshness of the nightly's output (issue 26): ``release_scores`` carries Dagster's cron freshness policy (due by
06:00 UTC, materialised since 02:00 UTC), evaluated here by the evaluator Dagster's Freshness daemon runs, on a
real instance (its storage in memory: a SQLite-backed one costs ~0.4 s CPU to create, and the evaluator reads the
same event log either way): scored in the window it passes; a night with no run (a stopped schedule, a dead
daemon) fails."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import dagster as dg
import pytest
from dagster._core.definitions.freshness import CronFreshnessPolicy, FreshnessState
from dagster._core.definitions.freshness_evaluator import CronFreshnessPolicyEvaluator
from dagster._core.loader import LoadingContextForTest
from dagster._core.test_utils import freeze_time

from toolchoice_pipeline.definitions import defs
from toolchoice_pipeline.defs.partitions import RELEASE_PARTITIONS_NAME


def freshness(instance, at: datetime) -> FreshnessState:
    node = defs.resolve_asset_graph().get(dg.AssetKey("release_scores"))
    with freeze_time(at):
        return asyncio.run(CronFreshnessPolicyEvaluator().evaluate_freshness(LoadingContextForTest(instance), node))


def scored(instance, release_id: str, at: datetime) -> None:
    """A materialisation of ``release_scores`` for ``release_id`` recorded at ``at``."""
    instance.add_dynamic_partitions(RELEASE_PARTITIONS_NAME, [release_id])
    with freeze_time(at):
        instance.report_runless_asset_event(dg.AssetMaterialization("release_scores", partition=release_id))


def test_release_scores_is_due_every_night_by_six_after_the_schedule_fires():
    [spec] = [spec for spec in defs.resolve_all_asset_specs() if spec.freshness_policy is not None]
    assert spec.key == dg.AssetKey("release_scores")
    policy = spec.freshness_policy
    assert isinstance(policy, CronFreshnessPolicy)
    assert (policy.deadline_cron, policy.lower_bound_delta.total_seconds(), policy.timezone) == (
        "0 6 * * *",
        4 * 3600,
        "UTC",
    )
    assert defs.resolve_schedule_def("nightly_eval").cron_schedule == "0 2 * * *"  # the window opens as it fires


@pytest.mark.parametrize(
    ("scored_at", "evaluated_at", "state"),
    [
        (datetime(2026, 12, 1, 2, 40, tzinfo=UTC), datetime(2026, 12, 1, 7, 0, tzinfo=UTC), FreshnessState.PASS),
        # the next night nothing ran (schedule stopped, daemon dead): overdue from 06:00
        (datetime(2026, 12, 1, 2, 40, tzinfo=UTC), datetime(2026, 12, 2, 6, 30, tzinfo=UTC), FreshnessState.FAIL),
        # scored the evening before: not the nightly's window
        (datetime(2026, 11, 30, 20, 0, tzinfo=UTC), datetime(2026, 12, 1, 6, 30, tzinfo=UTC), FreshnessState.FAIL),
    ],
)
def test_a_night_without_a_scored_release_shows_overdue(scored_at, evaluated_at, state):
    with dg.DagsterInstance.ephemeral() as instance:
        assert freshness(instance, evaluated_at) == FreshnessState.UNKNOWN  # never materialised
        scored(instance, "nightly-2026-12-01", scored_at)
        assert freshness(instance, evaluated_at) == state


@pytest.mark.parametrize(
    ("release_id", "scored_at", "state"),
    [
        # Dagster's freshness is per asset: any release scored in the window counts, not only the nightly's
        ("r-cli", datetime(2026, 12, 1, 3, 0, tzinfo=UTC), FreshnessState.PASS),
        ("catalog-0123456789ab", datetime(2026, 12, 1, 5, 59, tzinfo=UTC), FreshnessState.PASS),
        # scored before the schedule fires: too early for that night, whatever the release
        ("r-cli", datetime(2026, 12, 1, 1, 59, tzinfo=UTC), FreshnessState.FAIL),
    ],
)
def test_any_release_scored_in_the_window_counts_as_the_nights_output(release_id, scored_at, state):
    """What the README states as the limit: the policy cannot tell the nightly's partition from another release's."""
    with dg.DagsterInstance.ephemeral() as instance:
        scored(instance, release_id, scored_at)
        assert freshness(instance, datetime(2026, 12, 1, 6, 30, tzinfo=UTC)) == state
