"""The built-in offline judge behind ``local/catalog-judge``: catalog-grounded, deterministic, explains itself.

It reads only its prompt (:func:`.prompt.read_judge_input`): the conversation, the catalog and the model
output. It never sees the expected answer. For the first step's reply it checks, in order:

1. every chosen tool exists in the catalog and was called through the tool interface (not written in text);
2. every call's arguments validate against the tool's JSON Schema (the ``jsonschema`` library, the dialect
   named by ``$schema``, 2020-12 otherwise);
3. when the latest request names paths, file names or URLs, the first call's arguments mention one of them;
4. the request's fit to the first chosen tool's description against the best alternative (:mod:`.fit`): the
   choice is wrong when the request hits something the description denies ("cannot ... delete a file",
   "knows nothing about ... git history", "prefer Read to show a file"), or when another tool *clearly*
   fits better: with no denial hit, it beats the chosen tool by more than :data:`CLEAR_MARGIN` distinctive
   terms;
5. for "no tool call": the choice is wrong when some tool clearly fitted: with no denial hit, its fit is
   above :data:`CLEAR_FIT` distinctive terms.

A *distinctive term* is a request term only one tool of the catalog has (the largest idf in the catalog), so
the thresholds mean the same for a 3-tool and a 30-tool catalog. With no descriptions in the catalog the judge
has no grounds to object and passes every existing, schema-valid choice: the calibration check
(:mod:`.calibration`) exists to catch exactly that. The verdict never depends on temperature or seed; with
temperature > 0 the seed picks one of several equivalent wordings of the reasoning.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from .fit import (
    FILE_PATTERN,
    PATH_PATTERN,
    PATH_TERM,
    URL_PATTERN,
    URL_TERM,
    ToolFit,
    catalog_capabilities,
    distinctive_weight,
    strip_names,
    terms,
    tool_fits,
    words,
)
from .prompt import JudgeInput, JudgeInputError, read_judge_input

CLEAR_MARGIN = 0.5
CLEAR_FIT = 0.5
MIN_REQUEST_TERMS = 2


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content
                         if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""


@dataclass(frozen=True)
class Request:
    """What was asked: the latest user message (``latest``), plus the turns before it (``context``) when it
    is a bare follow-up; its stemmed ``terms``, the ``literals`` it names, and a stem → word map for display."""

    latest: str
    context: str | None
    terms: tuple[str, ...]
    literals: tuple[str, ...]
    surface: dict[str, str]


def literals(text: str) -> tuple[str, ...]:
    """URLs, paths and file names named in ``text``, in order, each once."""
    found: list[str] = []
    remaining = text
    for pattern in (URL_PATTERN, PATH_PATTERN, FILE_PATTERN):
        for match in pattern.finditer(remaining):
            value = match.group(0).strip().rstrip(".,;:!?")
            if len(value) >= 2 and value.strip("/.") and value not in found:
                found.append(value)
        remaining = pattern.sub(" ", remaining)
    return tuple(found)


def read_request(conversation: list[dict[str, Any]]) -> Request:
    """The request behind the choice: the last user message with text; when it has fewer than
    :data:`MIN_REQUEST_TERMS` content terms ("yes, do it"), the two turns before it as well."""
    indices = [i for i, m in enumerate(conversation) if m.get("role") == "user" and _message_text(m).strip()]
    if not indices:
        return Request("", None, (), (), {})
    last = indices[-1]
    latest = _message_text(conversation[last]).strip()
    texts = [latest]
    context = None
    if len(set(terms(strip_names(latest)))) < MIN_REQUEST_TERMS:
        earlier = [_message_text(m).strip() for m in conversation[:last]
                   if m.get("role") in ("user", "assistant") and _message_text(m).strip()]
        if earlier:
            context = "\n".join(earlier[-2:])
            texts.append(context)
    joined = "\n".join(texts)
    unnamed = strip_names(joined)
    surface: dict[str, str] = {}
    for word in words(unnamed):
        for stem in terms(word):
            surface.setdefault(stem, word)
    found = tuple(dict.fromkeys(terms(unnamed)))
    named = literals(latest)
    if URL_PATTERN.search(joined):
        found += (URL_TERM,)
        surface[URL_TERM] = "a URL"
    if PATH_PATTERN.search(URL_PATTERN.sub(" ", joined)) or FILE_PATTERN.search(URL_PATTERN.sub(" ", joined)):
        found += (PATH_TERM,)
        surface[PATH_TERM] = "a file path"
    return Request(latest, context, found, named, surface)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _mentions(arguments: dict[str, Any], literal: str) -> bool:
    haystack = "\n".join(_strings(arguments)).lower()
    needle = literal.lower().removeprefix("./")
    base = needle.rstrip("/").rsplit("/", 1)[-1]
    return needle in haystack or (len(base) >= 3 and base in haystack)


def schema_errors(parameters: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """Why ``arguments`` fail the tool's JSON Schema (empty when they validate); the dialect from ``$schema``."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        cls = validator_for(parameters, default=Draft202012Validator)
        cls.check_schema(parameters)
        errors = sorted(cls(parameters).iter_errors(arguments), key=lambda e: list(e.absolute_path))
    except SchemaError as exc:
        return [f"the tool's parameter schema is itself invalid ({exc.message})"]
    out = []
    for error in errors[:5]:
        where = "/".join(str(p) for p in error.absolute_path)
        out.append(f"{where + ': ' if where else ''}{error.message}")
    return out


@dataclass(frozen=True)
class Assessment:
    """The offline judge's verdict and its findings, one per rubric step, and the conclusion."""

    verdict: str
    asked: str
    available: str
    chosen: str
    arguments: str
    conclusion: str


def _quoted(words_: list[str]) -> str:
    return ", ".join(json.dumps(w, ensure_ascii=False) for w in words_)


def _describe_fit(fit: ToolFit, surface: dict[str, str]) -> str:
    parts = []
    if fit.matched:
        parts.append("covers " + _quoted([surface.get(t, t) for t in fit.matched]))
    for phrase, hit in fit.hits[:2]:
        parts.append(f"says {json.dumps(phrase, ensure_ascii=False)}, which "
                     f"{_quoted([surface.get(t, t) for t in hit])} in the request runs into")
    return f"{fit.name} ({'; '.join(parts) or 'nothing in common with the request'}; fit {fit.score:.2f})"


def _clearly_fits(fit: ToolFit | None, threshold: float) -> bool:
    return fit is not None and not fit.denied and bool(fit.matched) and fit.score > threshold


def assess(data: JudgeInput) -> Assessment:
    """Grade the choice in ``data`` (see the module docstring for the rules)."""
    request = read_request(data.conversation)
    tools = {str(t.get("name")): t for t in data.catalog if isinstance(t, dict)}
    caps = catalog_capabilities(list(tools.values()))
    fits = tool_fits(request.terms, caps)
    fit_by_name = {f.name: f for f in fits}
    unit = distinctive_weight(len(caps))

    asked = f"the user asks {json.dumps(request.latest[:300], ensure_ascii=False)}"
    if request.context:
        asked += f", a follow-up to {json.dumps(request.context[-300:], ensure_ascii=False)}"
    shown_terms = [request.surface.get(t, t) for t in request.terms]
    asked += f" (what it is about: {', '.join(shown_terms[:12]) or 'nothing specific'})."

    if not any(c.described for c in caps):
        available = (f"{len(caps)} tools ({', '.join(list(tools)[:12])}), named only: no tool has a description, "
                     "so nothing says what a tool is for or what it cannot do.")
    else:
        ranked = [f for f in fits if f.score > 0][:3]
        available = f"{len(caps)} tools in the catalog. "
        available += ("By their descriptions the closest are " + "; ".join(_describe_fit(f, request.surface)
                                                                          for f in ranked) + "."
                      if ranked else "No tool's description has anything in common with the request.")
        denied = [f for f in fits if f.denied and f not in ranked][:2]
        if denied:
            available += " Ruled out: " + "; ".join(_describe_fit(f, request.surface) for f in denied) + "."

    calls = [c for c in data.calls if isinstance(c, dict)]
    if not calls:
        chosen = "no tool call"
        if data.text:
            chosen += f"; the agent answered {json.dumps(data.text[:200], ensure_ascii=False)}"
        arguments = "nothing to check, as there is no call."
        best = fits[0] if fits else None
        if _clearly_fits(best, CLEAR_FIT * unit):
            return Assessment("incorrect", asked, available, chosen + ".", arguments,
                              f"{_describe_fit(best, request.surface)} clearly serves the request, yet no tool "
                              "was called.")
        return Assessment("correct", asked, available, chosen + ".", arguments,
                          "no tool in the catalog clearly serves the request, so answering without a call is right.")

    shown_calls = []
    for call in calls:
        args = call.get("arguments")
        shown = json.dumps(args if args is not None else call.get("raw_arguments"), ensure_ascii=False)
        shown_calls.append(f"{call.get('name')} with {shown[:200]}")
    chosen = "the agent called " + "; then ".join(shown_calls) + "."

    problems: list[str] = []
    notes: list[str] = []
    for call in calls:
        name = call.get("name")
        if call.get("problem"):
            problems.append(f"the call to {name} was {call['problem']}")
        elif name not in tools:
            problems.append(f"{name} is not a tool in the catalog")
        elif not isinstance(call.get("arguments"), dict):
            problems.append(f"the arguments of {name} are not a JSON object")
        else:
            errors = schema_errors(tools[name].get("parameters") or {"type": "object"}, call["arguments"])
            if errors:
                problems.append(f"the arguments of {name} fail its parameter schema: {'; '.join(errors)}")
            else:
                notes.append(f"the arguments of {name} validate against its parameter schema")
    first = calls[0]
    first_args = first.get("arguments")
    if not problems and request.literals and isinstance(first_args, dict) and _strings(first_args):
        if any(_mentions(first_args, lit) for lit in request.literals):
            notes.append("they name what the user named")
        else:
            problems.append(f"the arguments of {first.get('name')} name none of what the user named "
                            f"({', '.join(request.literals[:4])})")
    arguments = "; ".join(notes + problems) + "."
    if problems:
        return Assessment("incorrect", asked, available, chosen, arguments,
                          problems[0] + ".")

    mine = fit_by_name[str(first["name"])]
    if mine.denied:
        return Assessment("incorrect", asked, available, chosen, arguments,
                          f"the request asks for what {mine.name}'s description rules out: "
                          f"{_describe_fit(mine, request.surface)}.")
    others = [f for f in fits if f.name != mine.name]
    best_other = others[0] if others else None
    if _clearly_fits(best_other, mine.score + CLEAR_MARGIN * unit):
        return Assessment("incorrect", asked, available, chosen, arguments,
                          f"{_describe_fit(best_other, request.surface)} serves the request clearly better than "
                          f"{_describe_fit(mine, request.surface)}.")
    if not mine.described and not any(c.described for c in caps):
        reason = f"{mine.name} exists and its arguments are valid; without descriptions there is nothing to object to."
    elif mine.score > 0:
        reason = f"{_describe_fit(mine, request.surface)} is among the best fits for the request."
    else:
        reason = f"no tool fits the request clearly better than {mine.name}, and its description rules out nothing asked."
    return Assessment("correct", asked, available, chosen, arguments, reason)


_WORDINGS = (
    ("Step 1, what was asked: ", "Step 2, which tools were available: ", "Step 3, what was chosen: ",
     "Step 4, whether the arguments fit: ", "Verdict: {verdict}, because "),
    ("1. The request: ", "2. The tools: ", "3. The choice: ", "4. The arguments: ", "So the choice is {verdict}: "),
    ("First, the request: ", "Next, the catalog: ", "Then the choice: ", "Finally, the arguments: ",
     "Conclusion ({verdict}): "),
)


def write_reasoning(assessment: Assessment, wording: int = 0) -> str:
    """The step-by-step reasoning text in wording number ``wording`` (any int; taken modulo the wordings)."""
    heads = _WORDINGS[wording % len(_WORDINGS)]
    steps = (assessment.asked, assessment.available, assessment.chosen, assessment.arguments)
    lines = [head + text for head, text in zip(heads[:4], steps)]
    lines.append(heads[4].format(verdict=assessment.verdict) + assessment.conclusion)
    return "\n".join(lines)


def catalog_judge(messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                  params: dict[str, Any]) -> dict[str, Any]:
    """The ``local/catalog-judge`` model: an assistant message whose content is ``{"reasoning", "verdict"}``.

    An input that is not a judge prompt (no catalog section...) gets a plain-text refusal, which the parser
    counts as an invalid vote, as it would an LLM's.
    """
    try:
        data = read_judge_input(messages)
    except JudgeInputError as exc:
        return {"role": "assistant", "content": f"I cannot grade this input: {exc}."}
    assessment = assess(data)
    wording = 0
    temperature = params.get("temperature")
    if temperature and float(temperature) > 0 and params.get("seed") is not None:
        wording = random.Random(int(params["seed"])).randrange(len(_WORDINGS))
    content = json.dumps({"reasoning": write_reasoning(assessment, wording), "verdict": assessment.verdict},
                         ensure_ascii=False)
    return {"role": "assistant", "content": content}
