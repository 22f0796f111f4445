"""The judge input (DESIGN §5): conversation so far, the whole tool catalog, the chosen call(s), and the rubric.

The judge sees two messages:

- ``system``: the rubric (:data:`RUBRIC`), which grades the whole step: every call must serve a part of the
  request, the step must make every call the request needs (a missing one is incorrect; the step's other
  calls are never "better alternatives"), and a tool that changes or deletes state is incorrect for a request
  that only reads; reason step by step (what was asked, which tools were available, what was chosen, whether
  the arguments fit), then answer ``{"reasoning": str, "verdict": "correct" |
  "incorrect"}``;
- ``user``: three delimited sections, each holding JSON, rendered by :data:`INPUT_TEMPLATE`:
  ``<conversation>`` (every message so far, earlier turns included, one per line),
  ``<tool_catalog>`` (every tool definition, one per line) and ``<model_output>`` (a one-line summary that
  names the chosen tools or says "NO TOOL CALL", the model's own text, and the calls as a JSON list).

In the JSON of the sections ``<`` is written ``\\u003c``, so no content can close a section early and the
sections parse back exactly (:func:`read_judge_input`, used by the offline judge).

``RUBRIC_VERSION`` is the 12-hex short hash of every template text here; it is stored with every vote, so a
changed rubric is visible in the lineage. Building an input without the catalog or without the reply raises
:class:`JudgeInputError`: a judge that cannot see the alternatives scores everything 1.0 (DESIGN §5).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..calls import FLAG_INVALID_ARGUMENTS, FLAG_INVALID_CALL, Reply, ToolCall
from ..canonical import short_hash
from ..catalog import ToolDefinition

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

INPUT_TEMPLATE = """\
Grade the tool choice in the model output below.

<conversation>
{conversation}
</conversation>

<tool_catalog>
{catalog}
</tool_catalog>

<model_output>
{summary}
<model_text>
{text}
</model_text>
<tool_calls>
{calls}
</tool_calls>
</model_output>"""

SUMMARY_CALLS = "The agent called {count} tool(s), in this order: {names}."
SUMMARY_NO_CALL = "NO TOOL CALL: the agent called no tool and answered with text only."
PROBLEM_INVALID_CALL = "written into the reply text, not made through the tool-calling interface"
PROBLEM_INVALID_ARGUMENTS = "arguments are not a JSON object"

RUBRIC_VERSION = short_hash([RUBRIC, INPUT_TEMPLATE, SUMMARY_CALLS, SUMMARY_NO_CALL,
                             PROBLEM_INVALID_CALL, PROBLEM_INVALID_ARGUMENTS])


class JudgeInputError(ValueError):
    """A judge input that cannot be built (no catalog, no reply, no conversation) or read back."""


def _json(value: Any) -> str:
    """JSON with ``<`` escaped, so the text of a section can never contain a closing tag."""
    return json.dumps(value, ensure_ascii=False).replace("<", "\\u003c")


def _call_item(call: ToolCall) -> dict[str, Any]:
    item: dict[str, Any] = {"name": call.name, "arguments": call.arguments}
    if call.arguments is None:
        item["raw_arguments"] = call.raw_arguments
    if FLAG_INVALID_CALL in call.flags:
        item["problem"] = PROBLEM_INVALID_CALL
    elif FLAG_INVALID_ARGUMENTS in call.flags:
        item["problem"] = PROBLEM_INVALID_ARGUMENTS
    return item


def build_judge_messages(conversation: list[dict[str, Any]], catalog: list[ToolDefinition],
                         reply: Reply | None) -> list[dict[str, Any]]:
    """The judge's ``[system, user]`` messages for one tool choice (OpenAI chat format).

    ``conversation``: the messages the agent saw, in OpenAI chat format, earlier turns included;
    ``catalog``: the whole catalog the agent chose from; ``reply``: the agent's first-step reply (a reply with
    no calls is an explicit "no tool call"). Raises :class:`JudgeInputError` when the catalog is empty or the
    reply is missing ("judge input lacks the tool catalog or the chosen call"), or the conversation is empty.
    """
    if not catalog or reply is None:
        raise JudgeInputError("judge input lacks the tool catalog or the chosen call")
    if not conversation:
        raise JudgeInputError("judge input lacks the conversation")
    conversation_text = "\n".join(_json(message) for message in conversation)
    catalog_text = "\n".join(_json(tool.as_dict()) for tool in catalog)
    if reply.calls:
        summary = SUMMARY_CALLS.format(count=len(reply.calls),
                                       names=", ".join(str(call.name) for call in reply.calls))
    else:
        summary = SUMMARY_NO_CALL
    user = INPUT_TEMPLATE.format(
        conversation=conversation_text, catalog=catalog_text, summary=summary, text=_json(reply.text),
        calls=_json([_call_item(call) for call in reply.calls]),
    )
    return [{"role": "system", "content": RUBRIC}, {"role": "user", "content": user}]


@dataclass(frozen=True)
class JudgeInput:
    """A judge input read back from its messages: what the offline judge knows, and nothing more."""

    conversation: list[dict[str, Any]]
    catalog: list[dict[str, Any]]
    text: str | None
    calls: list[dict[str, Any]]


def _section(content: str, name: str) -> str:
    match = re.search(rf"<{name}>\n(.*?)\n?</{name}>", content, re.DOTALL)
    if match is None:
        raise JudgeInputError(f"the judge input has no <{name}> section")
    return match.group(1)


def _json_lines(text: str, name: str) -> list[Any]:
    try:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise JudgeInputError(f"the <{name}> section is not JSON: {exc.msg}") from None


def read_judge_input(messages: list[dict[str, Any]]) -> JudgeInput:
    """Parse the sections of :func:`build_judge_messages` back out of the last user message.

    Raises :class:`JudgeInputError` naming the section that is missing or not JSON.
    """
    users = [m for m in messages if m.get("role") == "user" and isinstance(m.get("content"), str)]
    if not users:
        raise JudgeInputError("the judge input has no user message")
    content = users[-1]["content"]
    conversation = _json_lines(_section(content, "conversation"), "conversation")
    catalog = _json_lines(_section(content, "tool_catalog"), "tool_catalog")
    try:
        text = json.loads(_section(content, "model_text"))
        calls = json.loads(_section(content, "tool_calls"))
    except json.JSONDecodeError as exc:
        raise JudgeInputError(f"the model output section is not JSON: {exc.msg}") from None
    if not catalog:
        raise JudgeInputError("judge input lacks the tool catalog or the chosen call")
    if not isinstance(calls, list):
        raise JudgeInputError("the <tool_calls> section is not a JSON list")
    return JudgeInput(conversation=conversation, catalog=catalog, text=text if isinstance(text, str) else None,
                      calls=calls)
