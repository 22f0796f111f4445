"""The judge (DESIGN §5): judge input and rubric, answer parsing, ChainPoll polling, the offline judge, calibration.

Public entry points: :func:`judge_episodes` (async) / :func:`judge_episodes_sync`, :func:`tsq_by_episode`,
:func:`judge_flags_by_episode`, :func:`build_judge_messages`, :func:`parse_verdict`, :func:`calibrate`.
"""

from typing import TYPE_CHECKING

from toolchoice_pipeline.util.lazy import lazy_exports

if TYPE_CHECKING:
    from toolchoice_pipeline.judge.parse import VERDICT_SCHEMA, ParsedVerdict, parse_verdict, response_format_for
    from toolchoice_pipeline.judge.polling import (
        FLAG_BUDGET_EXHAUSTED,
        FLAG_JUDGE_FAILED,
        JudgeBudget,
        JudgeItem,
        episode_items,
        judge_episodes,
        judge_episodes_sync,
        judge_flags_by_episode,
        judge_items,
        majority_verdicts,
        tsq_by_episode,
    )
    from toolchoice_pipeline.judge.prompt import RUBRIC_VERSION, JudgeInputError, build_judge_messages, read_judge_input

# Re-exported on first use (util/lazy.py): importing one light module of the package imports nothing else.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "VERDICT_SCHEMA": ".parse",
        "ParsedVerdict": ".parse",
        "parse_verdict": ".parse",
        "response_format_for": ".parse",
        "FLAG_BUDGET_EXHAUSTED": ".polling",
        "FLAG_JUDGE_FAILED": ".polling",
        "JudgeBudget": ".polling",
        "JudgeItem": ".polling",
        "episode_items": ".polling",
        "judge_episodes": ".polling",
        "judge_episodes_sync": ".polling",
        "judge_flags_by_episode": ".polling",
        "judge_items": ".polling",
        "majority_verdicts": ".polling",
        "tsq_by_episode": ".polling",
        "RUBRIC_VERSION": ".prompt",
        "JudgeInputError": ".prompt",
        "build_judge_messages": ".prompt",
        "read_judge_input": ".prompt",
    },
)

__all__ = [
    "FLAG_BUDGET_EXHAUSTED",
    "FLAG_JUDGE_FAILED",
    "JudgeBudget",
    "JudgeInputError",
    "JudgeItem",
    "ParsedVerdict",
    "RUBRIC_VERSION",
    "VERDICT_SCHEMA",
    "build_judge_messages",
    "episode_items",
    "judge_episodes",
    "judge_episodes_sync",
    "judge_flags_by_episode",
    "judge_items",
    "majority_verdicts",
    "parse_verdict",
    "read_judge_input",
    "response_format_for",
    "tsq_by_episode",
]
