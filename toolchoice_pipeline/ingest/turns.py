"""From a stream of session events (prompt, assistant message, tool result, compaction) to recorded turns.

The Claude Code and Codex readers translate their lines into these events; :class:`TurnAssembler` keeps the
conversation window and the one open turn, sanitises everything it stores, and hands back each turn when
the next prompt (or the end of the file) closes it. State is bounded: the window, one open turn, and a
bounded map of recent call ids.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from toolchoice_pipeline.ingest.conversation import Conversation
from toolchoice_pipeline.ingest.model import BoundedMap, RecordedCall, RecordedTurn, Step
from toolchoice_pipeline.records.calls import decode_arguments
from toolchoice_pipeline.suites.catalog import ToolDefinition, printable_tool_name
from toolchoice_pipeline.util.sanitise import Sanitiser

RECENT_CALLS = 4096
MAX_ARGUMENT_NAMES = 64
# How agents and frameworks answer a call to a tool they do not have: Claude Code, Codex, Pydantic AI
# ("Unknown tool name: 'x'"), LangChain ("x is not a valid tool"), the OpenAI Agents SDK ("Tool x not found"),
# the Vercel AI SDK ("unavailable tool"). Such a tool was never on offer.
_REFUSED = re.compile(
    r"No such tool available|unsupported call|unknown tool|is not a valid tool|unavailable tool"
    r"|^\W*(?:error:?\s*)?tool\s+\S+\s+not found",  # at the start only: a command's output may say it too
    re.IGNORECASE,
)


@dataclass
class ToolLedger:
    """The tools the sessions called, with the argument names seen, for tools missing from the catalog."""

    arguments: dict[str, set[str]] = field(default_factory=dict)
    refused: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)
    calls: Counter[str] = field(default_factory=Counter)

    def called(self, call: RecordedCall) -> None:
        self.calls[call.name] += 1
        names = self.arguments.setdefault(call.name, set())
        if isinstance(call.arguments, dict) and len(names) < MAX_ARGUMENT_NAMES:
            names.update(list(call.arguments)[: MAX_ARGUMENT_NAMES - len(names)])

    def result(self, name: str, text: str) -> bool:
        """Note a call's result; True when the agent refused the call as a call to an unknown tool."""
        if _REFUSED.search(text[:300]):
            self.refused.add(name)
            return True
        self.answered.add(name)
        return False

    def missing_definitions(self, catalog: list[ToolDefinition]) -> list[ToolDefinition]:
        """A minimal definition (empty description, every argument name seen, any value allowed) for each tool
        called but absent from ``catalog``, except tools every call to which was refused as unknown, and names
        that differ from a catalog tool's only in case (``bash`` for ``Bash``): a miscased call of that tool, which
        a provider refuses (names are case-sensitive), so it stays a hallucinated call, never a second tool. Of
        names added that differ only in case (``Shell`` and ``shell``), the one called most is added (the first
        in sorted order on a tie); calls to the others stay hallucinated."""
        known = {tool.name for tool in catalog}
        folded = {name.casefold() for name in known}
        added = []
        for name in sorted(self.arguments, key=lambda n: (-self.calls[n], n)):
            if name in known or (name in self.refused and name not in self.answered) or name.casefold() in folded:
                continue
            folded.add(name.casefold())
            properties: dict[str, dict[str, Any]] = {argument: {} for argument in sorted(self.arguments[name])}
            added.append(
                ToolDefinition(name=name, description="", parameters={"type": "object", "properties": properties})
            )
        return sorted(added, key=lambda tool: tool.name)


class TurnAssembler:
    """Builds the turns of one session (or one subagent) from events; see the module doc."""

    def __init__(
        self,
        *,
        source: str,
        session_id: str,
        agent_id: str | None,
        file: str,
        sanitiser: Sanitiser,
        ledger: ToolLedger,
        max_context_chars: int,
    ):
        self.source = source
        self.session_id = session_id
        self.agent_id = agent_id
        self.file = file
        self.sanitiser = sanitiser
        self.ledger = ledger
        self.conversation = Conversation(max_context_chars)
        self.prompts = 0
        self._turn: RecordedTurn | None = None
        self._first_started = False
        self._first_step_id: str | None = None
        self._first_step_done = False
        self._calls: BoundedMap = BoundedMap(RECENT_CALLS)  # call id -> (tool name, is a first-step call)

    # --- events -------------------------------------------------------------------------------------------

    def prompt(
        self, text: str, line: int | None, *, history: bool = False, rewind_to: int | None = None
    ) -> tuple[RecordedTurn | None, bool]:
        """A user prompt. Returns the turn it closes (or None) and whether ``rewind_to`` could be honoured.

        A ``history`` prompt (a record copied from an earlier file) joins the context but opens no turn.
        """
        closed = self.close()
        rewound = True
        if rewind_to is not None and rewind_to < self.conversation.position:
            rewound = self.conversation.rewind(rewind_to)
        clean = self.sanitiser.message_text(text)
        if not history:
            self._turn = RecordedTurn(
                source=self.source,
                session_id=self.session_id,
                agent_id=self.agent_id,
                index=self.prompts,
                file=self.file,
                line=line,
                messages=self.conversation.snapshot(clean),
            )
            self.prompts += 1
        self.conversation.add_user(clean)
        return closed, rewound

    def assistant(
        self,
        message_id: str | None,
        text: str | None,
        calls: list[tuple[str, Any, str | None]],
        *,
        history: bool = False,
    ) -> None:
        """Assistant text and calls ``(name, arguments, call id)``; several events of one message merge."""
        clean_text = self.sanitiser.message_text(text).strip() if text else None
        recorded = [self._call(name, arguments, call_id) for name, arguments, call_id in calls]
        self.conversation.add_assistant(message_id, clean_text or None, recorded)
        turn = self._turn
        if turn is None or history:
            for call in recorded:
                if call.id is not None:
                    self._calls[call.id] = (call.name, False)
            return
        if not self._first_started:
            self._first_started = True
            self._first_step_id = message_id
            in_first = True
        else:
            in_first = not self._first_step_done and message_id is not None and message_id == self._first_step_id
            self._first_step_done = not in_first
        if in_first:
            step = turn.first_step or Step()
            if clean_text:
                step.text = f"{step.text}\n{clean_text}" if step.text else clean_text
            step.calls.extend(recorded)
            turn.first_step = step
        for call in recorded:
            turn.record_call(call.name)
            if call.id is not None:
                self._calls[call.id] = (call.name, in_first)

    def tool_result(self, call_id: str | None, text: str) -> None:
        clean = self.sanitiser.tool_result(text)
        self.conversation.add_tool_result(call_id, clean)
        name, in_first_step = self._calls.get(call_id, (None, False))
        if name is None:
            return
        refused = self.ledger.result(name, text)
        turn = self._turn
        if turn is not None and in_first_step and not refused and name not in turn.tool_results:
            turn.tool_results[name] = clean

    def compacted(self, summary: str | None) -> None:
        self.conversation.reset(self.sanitiser.message_text(summary) if summary else None)

    def close(self) -> RecordedTurn | None:
        """Close the open turn (if any) and return it."""
        turn, self._turn = self._turn, None
        self._first_started = False
        self._first_step_id = None
        self._first_step_done = False
        return turn

    # --- internals ----------------------------------------------------------------------------------------

    def _call(self, name: str, arguments: Any, call_id: str | None) -> RecordedCall:
        call = recorded_call(name, arguments, call_id, self.sanitiser)
        self.ledger.called(call)
        return call


def recorded_call(name: str, arguments: Any, call_id: str | None, sanitiser: Sanitiser) -> RecordedCall:
    """A sanitised :class:`RecordedCall` (the tool name too: an MCP server's name can hold a user name);
    arguments given as JSON text are decoded (kept raw when they do not decode to an object, as
    :func:`toolchoice_pipeline.records.calls.decode_arguments` does)."""
    decoded, raw = decode_arguments(arguments)
    clean = sanitiser.value(decoded) if decoded is not None else sanitiser.text(raw or "")
    return RecordedCall(name=printable_tool_name(sanitiser.text(name)), arguments=clean, id=call_id)
