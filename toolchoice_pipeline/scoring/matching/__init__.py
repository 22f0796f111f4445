"""Matching a model's first-step reply against a task's expectation, one registered profile per rule
(DESIGN §4).

- ``key_args`` (:mod:`.key_args`): the first call decides; only the key arguments count.
- ``bfcl`` (:mod:`.bfcl`): reproduces the BFCL AST checker (every call of the first step, strict types),
  with its known faults fixed; the differences are listed in ``docs/bfcl.md``.

A new profile is one module defining a :class:`MatchProfile` and one entry in :data:`PROFILES`.
"""

from __future__ import annotations

from toolchoice_pipeline.records.calls import Reply
from toolchoice_pipeline.scoring.matching import bfcl, key_args
from toolchoice_pipeline.scoring.matching.profile import MatchProfile, MatchResult
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.tasks import Expected

PROFILES: dict[str, MatchProfile] = {profile.name: profile for profile in (key_args.PROFILE, bfcl.PROFILE)}

__all__ = ["PROFILES", "MatchProfile", "MatchResult", "match_reply", "profile_named"]


def profile_named(name: str) -> MatchProfile:
    """The registered profile called ``name``; raises ``ValueError`` naming the known ones for another."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown match profile {name!r} (expected {' or '.join(sorted(PROFILES))})") from None


def match_reply(expected: Expected, reply: Reply, catalog: list[ToolDefinition], profile: str) -> MatchResult:
    """Grade the first step's ``reply`` against ``expected`` with the catalog the task ran with.

    ``profile`` names a registered profile (:data:`PROFILES`); raises ``ValueError`` for another.
    """
    return profile_named(profile).match(expected, reply, catalog)
