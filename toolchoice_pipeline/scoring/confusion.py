"""Tool confusion: which tool a model chose first where another was expected (DESIGN §3 "Tool confusion").

Counted over every scored episode (every sample: an episode with no infrastructure error on a labelled task),
by the *first* tool named: the expected one (``expected.tool``, or the first of ``expected.calls``; None = no
call expected) against the chosen one (the episode's ``first_tool``; None = no call made; a tool outside the
catalog keeps its name). Tasks with ``expected.any_call`` (any call is right, BFCL's relevance tasks) have no
expected tool: they are counted apart in :class:`AnyCallCounts`.

- :class:`ConfusionEntry`: one ``(expected, chosen, count)`` pair with ``expected != chosen``.
- :class:`ToolScore`: per tool (None = "no call"), episodes expecting it, choosing it, both, and
  ``precision = right / chosen``, ``recall = right / expected`` as fractions (0–1, None on a zero count), not
  rounded, so the warehouse's ``tool_scores`` view (the same division in DuckDB) agrees exactly.

Pure functions over pair counts ``{(expected, chosen): n}``: the columnar scorer fills them with one SQL
``GROUP BY``, :func:`pair_counts` from task scores.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from pydantic import BaseModel

Pair = tuple[str | None, str | None]


class ConfusionEntry(BaseModel):
    """Episodes that expected ``expected`` first (None: no call) and chose ``chosen`` first (None: no call)."""

    expected: str | None
    chosen: str | None
    count: int


class ToolScore(BaseModel):
    """One tool's row (``tool`` None: "no call"): episodes that expected it, chose it first, and both;
    ``precision``/``recall`` are fractions (0–1, unrounded; None when the denominator is 0)."""

    tool: str | None
    expected: int
    chosen: int
    right: int
    precision: float | None
    recall: float | None


class AnyCallCounts(BaseModel):
    """The scored episodes of ``expected.any_call`` tasks (counted apart from the confusion table): how many, and
    how many made no call (the only wrong answer there)."""

    episodes: int = 0
    no_call: int = 0


def _order(value: str | None) -> tuple[bool, str]:
    return (value is None, value or "")


def confusion_entries(pairs: Mapping[Pair, int]) -> list[ConfusionEntry]:
    """The confusion table: one entry per pair with ``expected != chosen`` and a positive count, largest count
    first (ties by expected, then chosen, names before "no call")."""
    entries = [(pair, n) for pair, n in pairs.items() if pair[0] != pair[1] and n > 0]
    entries.sort(key=lambda item: (-item[1], _order(item[0][0]), _order(item[0][1])))
    return [ConfusionEntry(expected=e, chosen=c, count=n) for (e, c), n in entries]


def _fraction(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def tool_scores(pairs: Mapping[Pair, int]) -> list[ToolScore]:
    """Per tool named as expected or chosen (and "no call" when it occurs), in name order, "no call" last."""
    expected: Counter[str | None] = Counter()
    chosen: Counter[str | None] = Counter()
    right: Counter[str | None] = Counter()
    for (e, c), n in pairs.items():
        expected[e] += n
        chosen[c] += n
        if e == c:
            right[e] += n
    tools = sorted(set(expected) | set(chosen), key=_order)
    return [
        ToolScore(
            tool=tool,
            expected=expected[tool],
            chosen=chosen[tool],
            right=right[tool],
            precision=_fraction(right[tool], chosen[tool]),
            recall=_fraction(right[tool], expected[tool]),
        )
        for tool in tools
    ]


def pair_counts(rows: Iterable[tuple[str | None, str | None]]) -> dict[Pair, int]:
    """``{(expected, chosen): n}`` from ``(expected_tool, first_tool)`` pairs of scored episodes."""
    return dict(Counter(rows))


def confusion_changes(
    now: Mapping[Pair, int], baseline: Mapping[Pair, int]
) -> list[tuple[str | None, str | None, int, int]]:
    """``(expected, chosen, baseline, now)`` for each off-diagonal pair whose count differs between the two
    tallies (taken on the tasks both releases share), largest ``|now - baseline|`` first, then largest ``now``."""
    pairs = {p for p in (*now, *baseline) if p[0] != p[1]}
    changes = [(e, c, baseline.get((e, c), 0), now.get((e, c), 0)) for e, c in pairs]
    changes = [change for change in changes if change[2] != change[3]]
    changes.sort(key=lambda ch: (-abs(ch[3] - ch[2]), -ch[3], _order(ch[0]), _order(ch[1])))
    return changes
