"""Reading a judge's answer: the verdict comes from the structured ``verdict`` field only (DESIGN §5).

Where the judge model supports JSON-Schema structured output (``litellm.supports_response_schema``) the call
asks for :data:`VERDICT_SCHEMA` through ``response_format``; otherwise the JSON object is extracted from the
text (a fenced block or the last object holding a ``verdict`` key, found with ``json.JSONDecoder.raw_decode``).
Either way the verdict is never found by searching the prose: a reasoning that says "correct" cannot flip an
``"incorrect"`` verdict. Truncated JSON, prose only, an HTML error page, empty output, a missing reasoning or
a verdict outside ``{"correct", "incorrect"}`` give an invalid vote with the reason in ``error``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from toolchoice_pipeline.records.episodes import Verdict

VERDICTS: tuple[Verdict, ...] = ("correct", "incorrect")

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string", "description": "step-by-step reasoning, before the verdict"},
        "verdict": {"type": "string", "enum": list(VERDICTS)},
    },
    "required": ["reasoning", "verdict"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class ParsedVerdict:
    """One judge answer read: ``verdict`` and ``reasoning`` when valid, else ``error`` says why not."""

    verdict: Verdict | None
    reasoning: str | None
    error: str | None = None

    @property
    def valid(self) -> bool:
        return self.verdict is not None


def response_format_for(model: str) -> dict[str, Any] | None:
    """The ``response_format`` asking for :data:`VERDICT_SCHEMA`, or None when the model cannot take one.

    Uses ``litellm.supports_response_schema`` (LiteLLM's model table); unknown models get None (JSON extraction).
    """
    import litellm

    try:
        supported = litellm.supports_response_schema(model=model)
    except Exception:  # LiteLLM raises for models it cannot map to a provider: no schema then
        supported = False
    if not supported:
        return None
    return {"type": "json_schema",
            "json_schema": {"name": "judge_verdict", "schema": VERDICT_SCHEMA, "strict": True}}


_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL | re.IGNORECASE)
_HTML = re.compile(r"^\s*(<!doctype html|<html|<head|<body)", re.IGNORECASE)


def _objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object that decodes starting at a ``{`` of ``text``, outermost first, in text order."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    index = text.find("{")
    while index != -1:
        try:
            value, end = decoder.raw_decode(text, index)
        except (json.JSONDecodeError, RecursionError):
            index = text.find("{", index + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        index = text.find("{", end)
    return found


def _why_no_json(text: str) -> str:
    stripped = text.strip()
    if _HTML.match(stripped):
        return "an HTML page, not a verdict (provider error page?)"
    if stripped.startswith(("{", "```")) or "{" in stripped:
        return "truncated or malformed JSON (output cut off?)"
    return "prose only: no JSON verdict object"


def extract_verdict_object(text: str) -> dict[str, Any] | str:
    """The judge's JSON object from ``text`` (the whole text, a fenced block, or the last object with a
    ``verdict`` key), or a string saying why there is none."""
    stripped = text.strip()
    try:
        whole = json.loads(stripped)
    except (json.JSONDecodeError, RecursionError):
        whole = None
    if isinstance(whole, dict):
        return whole
    if whole is not None:
        return "JSON, but not an object"
    for block in reversed(_FENCED.findall(stripped)):
        try:
            value = json.loads(block)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict) and "verdict" in value:
            return value
    candidates = [obj for obj in _objects(stripped) if "verdict" in obj]
    if candidates:
        return candidates[-1]
    return _why_no_json(stripped)


def parse_verdict(content: Any) -> ParsedVerdict:
    """Read one judge answer (the message ``content``: a string, or None for an empty reply).

    Valid only when a JSON object has a ``verdict`` that is ``"correct"`` or ``"incorrect"`` (surrounding
    whitespace and letter case ignored) and a string ``reasoning``.
    """
    if content is None or (isinstance(content, str) and not content.strip()):
        return ParsedVerdict(None, None, "empty output")
    if not isinstance(content, str):
        return ParsedVerdict(None, None, f"output is {type(content).__name__}, not text")
    found = extract_verdict_object(content)
    if isinstance(found, str):
        return ParsedVerdict(None, None, found)
    reasoning = found.get("reasoning")
    raw_verdict = found.get("verdict")
    if not isinstance(raw_verdict, str) or raw_verdict.strip().lower() not in VERDICTS:
        return ParsedVerdict(None, reasoning if isinstance(reasoning, str) else None,
                             f"verdict {json.dumps(raw_verdict)[:60]} is not one of {', '.join(VERDICTS)}")
    if not isinstance(reasoning, str) or not reasoning.strip():
        return ParsedVerdict(None, None, "no reasoning given with the verdict")
    return ParsedVerdict(raw_verdict.strip().lower(), reasoning)  # type: ignore[arg-type]
