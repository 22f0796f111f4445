"""Matching a model's first-step reply against a task's expectation, in two profiles (DESIGN §4).

- ``key_args`` (:mod:`.key_args`): the first call decides; only the key arguments count.
- ``bfcl`` (:mod:`.bfcl`): reproduces the BFCL AST checker (every call of the first step, strict types),
  with its known faults fixed; the differences are listed in ``docs/bfcl.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolchoice_pipeline.records.calls import Reply
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.tasks import Expected


@dataclass(frozen=True)
class MatchResult:
    """``right_tool`` / ``right_args`` for one reply, and a one-line ``reason`` for reports."""

    right_tool: bool
    right_args: bool
    reason: str = ""


def match_reply(expected: Expected, reply: Reply, catalog: list[ToolDefinition], profile: str) -> MatchResult:
    """Grade the first step's ``reply`` against ``expected`` with the catalog the task ran with.

    ``profile`` is ``key_args`` or ``bfcl``; raises ``ValueError`` for another.
    """
    if profile == "key_args":
        from toolchoice_pipeline.scoring.matching.key_args import match_key_args

        return match_key_args(expected, reply)
    if profile == "bfcl":
        from toolchoice_pipeline.scoring.matching.bfcl import match_bfcl

        return match_bfcl(expected, reply, catalog)
    raise ValueError(f"unknown match profile {profile!r} (expected key_args or bfcl)")
