"""Reading a judge's answer: the verdict comes from the structured ``verdict`` field only (DESIGN §5).

Where the judge model supports JSON-Schema structured output (``litellm.supports_response_schema``) the call
asks for :data:`VERDICT_SCHEMA` through ``response_format``; otherwise the JSON object is extracted from the
text (a fenced block or the last object holding a ``verdict`` key, found with ``json.JSONDecoder.raw_decode``).
Either way the verdict is never found by searching the prose: a reasoning that says "correct" cannot flip an
``"incorrect"`` verdict. Truncated JSON, prose only, an HTML error page, empty output, a missing reasoning or
a verdict outside ``{"correct", "incorrect"}`` give an invalid vote with the reason in ``error``. So do
conflicting verdicts: a ``verdict`` key repeated within one object, or two JSON objects (whole, fenced or
inline) whose verdicts disagree. A verdict ``"abstain"`` (the offline judge's answer when nothing in the
catalog bears on the request) is an invalid vote whose ``error`` says the judge abstained and why.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from toolchoice_pipeline.records.episodes import Verdict
from toolchoice_pipeline.records.judge_input import ABSTAIN

VERDICTS: tuple[Verdict, ...] = ("correct", "incorrect")
ABSTAINED = "the judge abstained"

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

    @property
    def abstained(self) -> bool:
        """The judge answered that it has no evidence to grade on (an invalid vote, not a parse failure)."""
        return self.verdict is None and (self.error or "").startswith(ABSTAINED)


def response_format_for(model: str) -> dict[str, Any] | None:
    """The ``response_format`` asking for :data:`VERDICT_SCHEMA`, or None when the model cannot take one.

    Uses ``litellm.supports_response_schema`` (LiteLLM's model table); unknown models get None (JSON extraction),
    as do our direct-path models (``local/``, ``replay/``: LiteLLM's table has none), without asking LiteLLM.
    """
    from toolchoice_pipeline.providers.direct import is_direct

    if is_direct(model):
        return None
    import litellm

    try:
        supported = litellm.supports_response_schema(model=model)
    except Exception:  # LiteLLM raises for models it cannot map to a provider: no schema then
        supported = False
    if not supported:
        return None
    return {"type": "json_schema", "json_schema": {"name": "judge_verdict", "schema": VERDICT_SCHEMA, "strict": True}}


_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL | re.IGNORECASE)
_HTML = re.compile(r"^\s*(<!doctype html|<html|<head|<body)", re.IGNORECASE)


class ConflictingVerdicts(ValueError):
    """A JSON object that gives its ``verdict`` key more than once, with different values."""


def _no_repeated_verdict(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: refuse an object whose ``verdict`` key appears twice with different values."""
    seen = [value for key, value in pairs if key == "verdict"]
    if len(seen) > 1 and any(value != seen[0] for value in seen[1:]):
        raise ConflictingVerdicts(f"the verdict key is given {len(seen)} times, with different values")
    return dict(pairs)


def _loads(text: str) -> Any:
    return json.loads(text, object_pairs_hook=_no_repeated_verdict)


def _objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object that decodes starting at a ``{`` of ``text``, outermost first, in text order."""
    decoder = json.JSONDecoder(object_pairs_hook=_no_repeated_verdict)
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


def _normal(verdict: Any) -> Any:
    return verdict.strip().lower() if isinstance(verdict, str) else json.dumps(verdict)


def extract_verdict_object(text: str) -> dict[str, Any] | str:
    """The judge's JSON object from ``text`` (the whole text, or else the objects of its fenced blocks and
    inline, which must not disagree: the last one with a ``verdict`` key), or a string saying why there is
    none (no JSON, conflicting verdicts)."""
    try:
        return _extract(text)
    except ConflictingVerdicts as exc:
        return f"conflicting verdicts: {exc}"


def _extract(text: str) -> dict[str, Any] | str:
    stripped = text.strip()
    try:
        whole = _loads(stripped)
    except (json.JSONDecodeError, RecursionError):
        whole = None
    if isinstance(whole, dict):
        return whole
    if whole is not None:
        return "JSON, but not an object"
    # Every object in the text, fenced or inline, counts: two that disagree are no verdict.
    candidates = [obj for obj in _objects(stripped) if "verdict" in obj]
    said = {_normal(obj.get("verdict")) for obj in candidates}
    if len(said) > 1:
        return f"conflicting verdicts: {len(candidates)} JSON objects say {', '.join(sorted(map(str, said)))}"
    for block in reversed(_FENCED.findall(stripped)):
        try:
            value = _loads(block)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict) and "verdict" in value:
            return value
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
    if isinstance(raw_verdict, str) and raw_verdict.strip().lower() == ABSTAIN:
        why = reasoning.strip().splitlines()[-1][:200] if isinstance(reasoning, str) and reasoning.strip() else ""
        return ParsedVerdict(
            None, reasoning if isinstance(reasoning, str) else None, ABSTAINED + (f": {why}" if why else "")
        )
    if not isinstance(raw_verdict, str) or raw_verdict.strip().lower() not in VERDICTS:
        return ParsedVerdict(
            None,
            reasoning if isinstance(reasoning, str) else None,
            f"verdict {json.dumps(raw_verdict)[:60]} is not one of {', '.join(VERDICTS)}",
        )
    if not isinstance(reasoning, str) or not reasoning.strip():
        return ParsedVerdict(None, None, "no reasoning given with the verdict")
    return ParsedVerdict(raw_verdict.strip().lower(), reasoning)  # type: ignore[arg-type]
