"""Scores rounded the same whatever order their sums were added in: the pure path adds a model's TSQs and costs
in task order in Python, the columnar path in DuckDB's order, and at a rounding tie the last bits decided (a
helper session found ``tsq_mean`` 0.5313 published against 0.5312 on the pure path, exact mean 0.53125)."""

from __future__ import annotations

import random
from collections.abc import Callable
from fractions import Fraction

from toolchoice_pipeline.scoring.summary import Tally, build_model_scores


def _two_orders_that_round_apart(draw: Callable[[random.Random], list[float]], digits: int, n: int = 1) -> list[float]:
    """Values drawn with seeded generators until adding them forwards and backwards (then dividing by ``n``) gives
    two figures that plain ``round`` puts on two sides of a tie: the control, without which the test proves
    nothing."""
    for seed in range(100_000):
        values = draw(random.Random(seed))
        if round(sum(values) / n, digits) != round(sum(reversed(values)) / n, digits):
            return values
    raise AssertionError("no tie found")


def test_a_mean_tsq_at_a_rounding_tie_is_the_same_in_either_order():
    # TSQs are shares of valid votes (thirds, quarters, halves); over 32 tasks the mean falls on a tie at 4
    # decimals whenever it is an odd multiple of 1/32 (0.53125, say).
    shares = [0.0, 1 / 3, 2 / 3, 1.0, 0.5, 0.25, 0.75]
    values = _two_orders_that_round_apart(lambda r: [r.choice(shares) for _ in range(32)], 4, n=32)
    forwards = Tally(tsq_sum=sum(values), tsq_n=32).shares()["tsq_mean"]
    backwards = Tally(tsq_sum=sum(reversed(values)), tsq_n=32).shares()["tsq_mean"]
    assert forwards == backwards == round(float(sum(Fraction(v) for v in values) / 32), 4)


def test_a_cost_at_a_rounding_tie_is_the_same_in_either_order():
    def call_costs(r: random.Random) -> list[float]:
        return [r.randint(1, 4000) * 1.5e-7 for _ in range(r.randint(3, 40))]  # tokens × a price per token

    costs = _two_orders_that_round_apart(call_costs, 6)
    scores = [
        build_model_scores(
            Tally(n_tasks=len(costs)),
            n_ran=len(costs),
            calls_sum=len(costs),
            agent_cost_usd=total,
            judge_cost_usd=total,
            latency_ms_p50=None,
            latency_ms_p95=None,
            n_unlabelled=0,
            flags={},
            tags={},
        )
        for total in (sum(costs), sum(reversed(costs)))
    ]
    exact = round(float(sum(Fraction(c) for c in costs)), 6)
    assert scores[0].agent_cost_usd == scores[1].agent_cost_usd == exact
    assert scores[0].judge_cost_usd == scores[1].judge_cost_usd == exact
    assert scores[0].agent_cost_per_sample_usd == scores[1].agent_cost_per_sample_usd
