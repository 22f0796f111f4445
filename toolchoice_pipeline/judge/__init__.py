"""The judge (DESIGN §5): judge input and rubric, answer parsing, ChainPoll polling, the offline judge, calibration.

Public entry points: :func:`judge_episodes` (async) / :func:`judge_episodes_sync`, :func:`tsq_by_episode`,
:func:`judge_flags_by_episode`, :func:`build_judge_messages`, :func:`parse_verdict`, :func:`calibrate`.
"""

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

__all__ = [
    "FLAG_BUDGET_EXHAUSTED",
    "FLAG_JUDGE_FAILED",
    "RUBRIC_VERSION",
    "VERDICT_SCHEMA",
    "JudgeBudget",
    "JudgeInputError",
    "JudgeItem",
    "ParsedVerdict",
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
