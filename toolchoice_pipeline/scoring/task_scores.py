"""What one :class:`~toolchoice_pipeline.records.episodes.TaskScore` per episode (per task and sample) holds
(DESIGN §2), and the flags' order. :mod:`.columnar` computes them for a release; the tests compute them row by row
with a reference implementation of their own (``toolchoice_pipeline_tests/scoring_reference.py``) and check that
both agree.

- ``right_tool`` / ``right_args``: the suite's matching profile on the first step's reply, with the catalog
  the task ran with; None for an infrastructure error and for an unlabelled task (``task.expected`` None).
- ``calls``: tool calls over all steps (invalid calls written in text included).
- ``tsq``: tool selection quality = yes-votes / valid votes (ChainPoll), None when no vote was valid.
- ``flags`` (each once, in :data:`FLAG_ORDER`, then any other sorted): ``hallucinated_tool``, ``invalid_arguments``,
  ``invalid_call``, and the schema flags of decoded arguments (``missing_required``, ``wrong_type``,
  ``not_in_enum``, ``schema_violation``: :mod:`toolchoice_pipeline.suites.argument_schema`) (from any call of
  any step), ``infra_error``, ``judge_failed`` (votes but none valid),
  ``judge_budget_exhausted`` (a poll not asked because the run's judge budget was spent),
  ``agent_budget_exhausted`` (the sample did not run: the run's agent ``budget_usd`` was spent).
- ``judge_tokens``: prompt + completion tokens of the episode's judge votes, every attempt included.
"""

from __future__ import annotations

from toolchoice_pipeline.records.calls import (
    ARGUMENT_SCHEMA_FLAGS,
    FLAG_HALLUCINATED,
    FLAG_INVALID_ARGUMENTS,
    FLAG_INVALID_CALL,
)
from toolchoice_pipeline.records.episodes import (
    FLAG_BUDGET_EXHAUSTED,
    FLAG_INFRA_ERROR,
    FLAG_JUDGE_FAILED,
)

FLAG_ORDER = (
    FLAG_HALLUCINATED,
    FLAG_INVALID_ARGUMENTS,
    FLAG_INVALID_CALL,
    *ARGUMENT_SCHEMA_FLAGS,
    FLAG_INFRA_ERROR,
    FLAG_JUDGE_FAILED,
    FLAG_BUDGET_EXHAUSTED,
)
NO_FIRST_REPLY = "no model reply for the first step"
