"""The judge input (DESIGN §5): conversation so far, the whole tool catalog, the chosen call(s), and the rubric.

The judge sees two messages:

- ``system``: the rubric (:data:`RUBRIC`), which grades the whole step: every call must serve a part of the
  request, the step must make every call the request needs (a missing one is incorrect; the step's other
  calls are never "better alternatives"), and a tool that changes or deletes state is incorrect for a request
  that only reads; reason step by step (what was asked, which tools were available, what was chosen, whether
  the arguments fit), then answer ``{"reasoning": str, "verdict": "correct" |
  "incorrect"}``;
- ``user``: the conversation, the whole catalog and the chosen calls in delimited JSON sections
  (:mod:`toolchoice_pipeline.records.judge_input`, which a judge model such as the offline one reads back).

``RUBRIC_VERSION`` is the 12-hex short hash of every template text here; it is stored with every vote, so a
changed rubric is visible in the lineage. Building an input without the catalog or without the reply raises
:class:`JudgeInputError`: a judge that cannot see the alternatives scores everything 1.0 (DESIGN §5).
"""

from __future__ import annotations

from typing import Any

from toolchoice_pipeline.records.calls import Reply
from toolchoice_pipeline.records.judge_input import (
    INPUT_TEMPLATE,
    PROBLEM_INVALID_ARGUMENTS,
    PROBLEM_INVALID_CALL,
    SUMMARY_CALLS,
    SUMMARY_NO_CALL,
    JudgeInputError,
    judge_input_text,
    read_judge_input,
)
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.util.canonical import short_hash

__all__ = ["RUBRIC", "RUBRIC_VERSION", "JudgeInputError", "build_judge_messages", "read_judge_input"]

RUBRIC = """\
You grade one step of an AI agent: the set of tool calls it made in reply to the request, or no tool call. \
You see the conversation so far, the whole tool catalog the agent could choose from (names, descriptions and \
JSON-Schema parameters), and the agent's output: its own text and the tool call(s) it chose, or no tool call.

Reason step by step, in this order:
1. What was asked: the user's latest request, read in the light of the earlier turns (a follow-up such as \
"yes, do it" refers to what was proposed before), and its parts: a request may ask for several things \
(two cities, three files, "then repeat with ...") that need a call each; and whether it only asks to read or \
look, or asks to change something.
2. Which tools were available: the tools in the catalog that could serve the request, what their \
descriptions say they cannot do, and which of them change or delete state (create, write, edit, delete, \
update).
3. What was chosen: every tool call in the model output, or no tool call; which part of the request each \
call serves, and whether the step makes every call the request needs.
4. Whether the arguments fit: do they satisfy each tool's parameter schema, and do they say what the user asked for?

The step is "correct" when every call serves a part of the request with one of the best tools in the catalog \
for that part, the calls together cover every part the request asks for, and the arguments fit; for no tool \
call, when no tool in the catalog was needed or could serve the request. It is "incorrect" when a tool is \
not in the catalog, when a call serves no part of the request, when a call the request needs is missing \
(only some of the parts were served), when a tool's description says it cannot do what was asked, when \
another tool in the catalog clearly serves that part better, when a tool that changes or deletes state is \
called for a request that only asks to read or look, when the arguments do not fit, or when no tool was \
called although one clearly fitted. The other calls of the same step are never "better alternatives" to a \
call: they serve other parts. Judge only from what is shown; the agent could not see anything else.

Answer with one JSON object and nothing after it:
{"reasoning": "<your step-by-step reasoning>", "verdict": "correct" or "incorrect"}"""

RUBRIC_VERSION = short_hash(
    [RUBRIC, INPUT_TEMPLATE, SUMMARY_CALLS, SUMMARY_NO_CALL, PROBLEM_INVALID_CALL, PROBLEM_INVALID_ARGUMENTS]
)


def build_judge_messages(
    conversation: list[dict[str, Any]], catalog: list[ToolDefinition], reply: Reply | None
) -> list[dict[str, Any]]:
    """The judge's ``[system, user]`` messages for one tool choice (OpenAI chat format): the rubric, then
    :func:`~toolchoice_pipeline.records.judge_input.judge_input_text`, whose errors it raises."""
    return [
        {"role": "system", "content": RUBRIC},
        {"role": "user", "content": judge_input_text(conversation, [tool.as_dict() for tool in catalog], reply)},
    ]
