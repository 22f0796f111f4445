"""Preflight of the judge model: the execution preflight's checks and messages, applied to the judge (DESIGN §5).

:func:`toolchoice_pipeline.execution.preflight.preflight` turns "model not found", "no API key" and "unknown
provider" into one clear message each, naming the model; here such a message becomes
:class:`JudgePreflightError` ("judge model ..."), raised before any episode is judged.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from toolchoice_pipeline.suites.config import JudgeConfig, RetryConfig


class JudgePreflightError(RuntimeError):
    """The judge model cannot be used; the message says why, naming the model (never a key)."""


async def preflight_judge(judge: JudgeConfig, *, data_dir: Path, retries: RetryConfig) -> None:
    """Check the judge model: static checks, then one tiny call for a remote model.

    Raises :class:`JudgePreflightError` with the preflight's message; ``InputError`` for a replay file that
    does not load.
    """
    from toolchoice_pipeline.execution.preflight import preflight

    problems = await preflight([judge.model], data_dir=data_dir, retries=retries)
    problem = problems.get(judge.model.model)
    if problem:
        raise JudgePreflightError(f"judge model {problem}")


def preflight_judge_sync(judge: JudgeConfig, *, data_dir: Path, retries: RetryConfig) -> None:
    """:func:`preflight_judge` for callers without an event loop."""
    asyncio.run(preflight_judge(judge, data_dir=data_dir, retries=retries))
