"""The records passed between the stages: episodes (execution), judge votes (judge), task scores (scoring).

They are plain pydantic models with no Dagster in them; the warehouse turns them into Parquet rows.
Units: latency in milliseconds, cost in USD, tokens as counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field

from toolchoice_pipeline.records.calls import Reply, ToolCall


class StepRecord(BaseModel):
    """One model call of an episode (one ``agent_calls`` row). ``reply`` is None when the call failed.

    ``latency_ms`` is the call as our client timed it; ``provider_ms`` the provider's own part of it (None when
    not reported: a failed call, a reply reused from the journal, a provider LiteLLM does not time);
    ``queued_ms`` the part spent in our client (waiting for a slot, the event loop, LiteLLM's own work).
    ``confidence`` is the model's own confidence in the reply (0-1), None unless its provider reports one
    (``needle/``).
    """

    step: int = Field(ge=0)
    reply: Reply | None = None
    latency_ms: float = 0.0
    provider_ms: float | None = None
    queued_ms: float = 0.0
    confidence: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    error: str | None = None
    cache_hit: bool = False
    request_key: str = ""


class Episode(BaseModel):
    """One model working on one task, once: sample ``sample`` (0..k-1) of the run's ``repeats`` k.
    ``error`` set = an infrastructure error: the sample gets no score."""

    model: str
    task_id: str
    sample: int = Field(default=0, ge=0)
    steps: list[StepRecord] = Field(default_factory=list)
    error: str | None = None

    @property
    def first_reply(self) -> Reply | None:
        """The reply of the first step (the choice that right tool and the judge both grade)."""
        return self.steps[0].reply if self.steps and self.steps[0].reply is not None else None

    @property
    def first_call(self) -> ToolCall | None:
        """The first tool call of the first step, in the order the model listed them (DESIGN §2)."""
        reply = self.first_reply
        return reply.first_call if reply is not None else None

    @property
    def calls(self) -> int:
        """Number of tool calls over all steps (invalid calls written in text included)."""
        return sum(len(s.reply.calls) for s in self.steps if s.reply is not None)

    @property
    def cost_usd(self) -> float:
        return sum(s.cost_usd for s in self.steps)

    @property
    def provider_ms(self) -> float:
        """The provider's time over all steps: each step's ``provider_ms``, or its ``latency_ms`` when not reported."""
        return sum(s.latency_ms if s.provider_ms is None else s.provider_ms for s in self.steps)


Verdict = Literal["correct", "incorrect"]


class JudgeVote(BaseModel):
    """One judge poll of one episode's first step (one ``judge_votes`` row).

    ``valid`` is False when no attempt of the poll gave a parseable verdict; tokens and cost then still count.
    """

    model: str
    task_id: str
    sample: int = Field(default=0, ge=0)
    poll: int = Field(ge=0)
    verdict: Verdict | None = None
    reasoning: str | None = None
    valid: bool = False
    attempts: int = 1
    judge_model: str
    rubric_version: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    error: str | None = None


class TaskScore(BaseModel):
    """The score of one episode, i.e. one sample of a task (one ``task_scores`` row).

    ``right_tool`` / ``right_args`` are None for an infrastructure error or an unlabelled task;
    ``tsq`` is None when the judge did not run or no vote was valid. ``latency_ms`` sums the episode's calls as
    our client timed them, ``provider_ms`` their provider time (:attr:`Episode.provider_ms`).
    ``expected_tool`` is the expected first tool (``expected.tool``, else the first of ``expected.calls``; None = no
    call expected, or any call for ``expected.any_call`` tasks); ``expected_any_call`` is None for an unlabelled
    task, so the two say apart "no call expected" from "no expectation" (tool confusion, DESIGN §3).
    """

    model: str
    task_id: str
    sample: int = Field(default=0, ge=0)
    right_tool: bool | None
    right_args: bool | None
    calls: int
    first_tool: str | None
    tsq: float | None = None
    error: str | None = None
    flags: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    latency_ms: float = 0.0
    agent_cost_usd: float = 0.0
    judge_cost_usd: float = 0.0
    judge_tokens: int = 0
    provider_ms: float = 0.0
    expected_tool: str | None = None
    expected_any_call: bool | None = None


FLAG_INFRA_ERROR = "infra_error"
FLAG_JUDGE_FAILED = "judge_failed"
FLAG_BUDGET_EXHAUSTED = "judge_budget_exhausted"
FLAG_AGENT_BUDGET_EXHAUSTED = "agent_budget_exhausted"


def tsq_of(votes: Iterable[JudgeVote]) -> float | None:
    """Tool selection quality of one episode: ``correct`` votes / valid votes in [0, 1]; None when none is valid."""
    valid = [vote for vote in votes if vote.valid and vote.verdict is not None]
    if not valid:
        return None
    return sum(vote.verdict == "correct" for vote in valid) / len(valid)
