"""What a judge model is shown of one tool choice (DESIGN §5), and how it is read back.

The judge's user message holds three delimited sections, each holding JSON, rendered by :data:`INPUT_TEMPLATE`:
``<conversation>`` (every message so far, earlier turns included, one per line), ``<tool_catalog>`` (every tool
definition, one per line) and ``<model_output>`` (a one-line summary that names the chosen tools or says
"NO TOOL CALL", the model's own text, and the calls as a JSON list).

In the JSON of the sections ``<`` is written ``\\u003c``, so no content can close a section early and the
sections parse back exactly (:func:`read_judge_input`, used by the offline judge model). The rubric that goes
with it is the judge's (:mod:`toolchoice_pipeline.judge.prompt`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from toolchoice_pipeline.records.calls import FLAG_INVALID_ARGUMENTS, FLAG_INVALID_CALL, Reply, ToolCall

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


ABSTAIN = "abstain"
"""The verdict a judge model gives when it has no evidence either way: an invalid vote, never re-asked."""


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


def judge_input_text(conversation: list[dict[str, Any]], catalog: list[dict[str, Any]], reply: Reply | None) -> str:
    """The judge's user message for one tool choice: :data:`INPUT_TEMPLATE` filled in.

    ``conversation``: the messages the agent saw, in OpenAI chat format, earlier turns included;
    ``catalog``: the whole catalog the agent chose from, as tool definition objects; ``reply``: the agent's first-step reply (a reply with
    no calls is an explicit "no tool call"). Raises :class:`JudgeInputError` when the catalog is empty or the
    reply is missing ("judge input lacks the tool catalog or the chosen call"), or the conversation is empty.
    """
    if not catalog or reply is None:
        raise JudgeInputError("judge input lacks the tool catalog or the chosen call")
    if not conversation:
        raise JudgeInputError("judge input lacks the conversation")
    conversation_text = "\n".join(_json(message) for message in conversation)
    catalog_text = "\n".join(_json(tool) for tool in catalog)
    if reply.calls:
        summary = SUMMARY_CALLS.format(count=len(reply.calls), names=", ".join(str(call.name) for call in reply.calls))
    else:
        summary = SUMMARY_NO_CALL
    user = INPUT_TEMPLATE.format(
        conversation=conversation_text,
        catalog=catalog_text,
        summary=summary,
        text=_json(reply.text),
        calls=_json([_call_item(call) for call in reply.calls]),
    )
    return user


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
    """Parse the sections of :func:`judge_input_text` back out of the last user message.

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
    return JudgeInput(
        conversation=conversation, catalog=catalog, text=text if isinstance(text, str) else None, calls=calls
    )
