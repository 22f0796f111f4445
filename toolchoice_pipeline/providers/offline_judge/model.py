"""The built-in offline judge behind ``local/catalog-judge``: catalog-grounded, deterministic, explains itself.

It reads only its prompt (:func:`toolchoice_pipeline.records.judge_input.read_judge_input`): the conversation, the catalog and the model
output. It never sees the expected answer. It grades the first step's reply as a whole, in this order:

0. with descriptions in the catalog but no tool sharing a term with the request (and none named), a step that
   makes no call is right (nothing in the catalog serves the request), and a step that makes a call gets an
   abstention (verdict ``"abstain"``, an invalid vote: no evidence for or against the call), unless a check
   below that needs no evidence fails;
1. every chosen tool exists in the catalog and was called through the tool interface (not written in text);
2. every call's arguments validate against the tool's JSON Schema (:mod:`.arguments`: the ``jsonschema``
   library, the dialect named by ``$schema``, 2020-12 otherwise). A call that fails is incorrect even when the
   tool is right; when the only failure is an argument the schema does not declare (``additionalProperties:
   false``), the reasoning says so: the right tool, called in a way its schema rejects;
3. when the latest request names paths, file names, URLs or numeric values with separators (dates, ratios,
   times), the step's calls name one of them in their arguments (numbers by value, whatever their format);
4. the tool choice, for every call (the first failing call decides):
   - a tool that changes or deletes state for a request that only reads is wrong (:mod:`.effects`);
   - a tool the user ruled out by name ("don't use the Bash tool") is wrong;
   - a tool whose description denies what the request asks ("cannot ... delete a file", "knows nothing about
     ... git history", "prefer Read to show a file") is wrong, even when the user named it;
   - a tool the latest request names explicitly (:mod:`.mentions`: "websearch ...", "with the Read tool") is
     right: the user's instruction counts more than the fit of words; choosing another tool than the one
     named is wrong, unless the named tool's description denies the request;
   - when the request gives a URL, it is what the request is about: a tool with no URL parameter is wrong while
     another (not denied) has one, and a tool that has one is never beaten by a tool that has none;
   - otherwise the request's fit to the tool's description against the best alternative (:mod:`.fit`): wrong
     when another tool *clearly* fits better: with no denial hit, it beats the chosen tool by more than
     :data:`CLEAR_MARGIN` distinctive terms; a tool the step also calls is never that better alternative;
   - a tool that shares no term with the request while other tools do serves no part of it: wrong;
   then the step (:mod:`.coverage`): a tool of a several-tool step none of whose calls names a value of the
   request, or a call the request needs that is missing, is wrong;
5. for "no tool call": the choice is wrong when the user named a tool (its description not denying the
   request) or when some tool clearly fitted: with no denial hit, its fit is above :data:`CLEAR_FIT`
   distinctive terms.

A *distinctive term* is a request term only one tool of the catalog has (the largest idf in the catalog), so
the thresholds mean the same for a 3-tool and a 30-tool catalog. With no descriptions in the catalog the judge
has no grounds to object (beyond the user's own naming of a tool) and passes every existing, schema-valid
choice: the calibration check (:mod:`toolchoice_pipeline.judge.calibration`) exists to catch exactly that. The verdict never depends on
temperature or seed; with temperature > 0 the seed picks one of several equivalent wordings of the reasoning.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, TypeGuard

from toolchoice_pipeline.providers.offline_judge.arguments import (
    is_value_literal,
    names_literal,
    numbers,
    request_literals,
    schema_problems,
    strings,
)
from toolchoice_pipeline.providers.offline_judge.coverage import idle_calls, unserved_values
from toolchoice_pipeline.providers.offline_judge.effects import changes_state, only_reads
from toolchoice_pipeline.providers.offline_judge.fit import (
    PATH_TERM,
    URL_TERM,
    ToolFit,
    blank,
    catalog_capabilities,
    distinctive_weight,
    name_spans,
    strip_names,
    terms,
    tool_fits,
    words,
)
from toolchoice_pipeline.providers.offline_judge.mentions import Mention, named_tools, tool_mentions
from toolchoice_pipeline.providers.offline_judge.relevance import (
    grounded,
    lacks_values,
    request_acronyms,
    subject_named,
    subject_terms,
)
from toolchoice_pipeline.records.calls import message_text
from toolchoice_pipeline.records.judge_input import ABSTAIN, JudgeInput, JudgeInputError, read_judge_input

CLEAR_MARGIN = 0.5
NO_EVIDENCE = (
    "no tool in the catalog shares anything with the request, so there is no evidence to grade the "
    "choice on: the judge abstains (an invalid vote)."
)
NO_OVERLAP_NO_CALL = (
    "no tool in the catalog shares anything with the request, so no tool serves it: answering without a call is right."
)
CLEAR_FIT = 0.5
MIN_REQUEST_TERMS = 2


@dataclass(frozen=True)
class Request:
    """What was asked: the latest user message (``latest``), plus the turns before it (``context``) when it
    is a bare follow-up; its stemmed ``terms``, the ``literals`` it names, the catalog tools it names
    (``mentions``, in the latest message only), and a stem → word map for display."""

    latest: str
    context: str | None
    terms: tuple[str, ...]
    literals: tuple[str, ...]
    surface: dict[str, str]
    mentions: tuple[Mention, ...] = ()


def read_request(conversation: list[dict[str, Any]], tool_names: tuple[str, ...] = ()) -> Request:
    """The request behind the choice: the last user message with text; when it has fewer than
    :data:`MIN_REQUEST_TERMS` content terms ("yes, do it"), the two turns before it as well. The words that name
    a tool ("the Read tool") are an instruction (``mentions``), not request terms."""
    indices = [i for i, m in enumerate(conversation) if m.get("role") == "user" and message_text(m).strip()]
    if not indices:
        return Request("", None, (), (), {})
    last = indices[-1]
    latest = message_text(conversation[last]).strip()
    mentions = tuple(tool_mentions(latest, tool_names))
    asked = blank(latest, ((m.start, m.end) for m in mentions))
    texts = [asked]
    context = None
    if len(set(terms(strip_names(asked)))) < MIN_REQUEST_TERMS:
        earlier = [
            message_text(m).strip()
            for m in conversation[:last]
            if m.get("role") in ("user", "assistant") and message_text(m).strip()
        ]
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
    kinds = {span.kind for span in name_spans(joined)}
    if "url" in kinds:
        found += (URL_TERM,)
        surface[URL_TERM] = "a URL"
    if kinds & {"path", "file"}:
        found += (PATH_TERM,)
        surface[PATH_TERM] = "a file path"
    own = {name.lower() for name in tool_names}
    named = tuple(literal for literal in request_literals(latest) if literal.lower() not in own)
    return Request(latest, context, found, named, surface, mentions)


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
        parts.append(
            f"says {json.dumps(phrase, ensure_ascii=False)}, which "
            f"{_quoted([surface.get(t, t) for t in hit])} in the request runs into"
        )
    return f"{fit.name} ({'; '.join(parts) or 'nothing in common with the request'}; fit {fit.score:.2f})"


def _clearly_fits(fit: ToolFit | None, threshold: float) -> TypeGuard[ToolFit]:
    return fit is not None and not fit.denied and bool(fit.matched) and fit.score > threshold


def _named_and_fitting(asked_for: list[str], fit_by_name: dict[str, ToolFit]) -> list[ToolFit]:
    """The tools the user asked for by name whose description rules out nothing asked, in the order named."""
    return [fit_by_name[t] for t in asked_for if t in fit_by_name and not fit_by_name[t].denied]


def _naming(request: Request, tool: str) -> str:
    texts = [m.text for m in request.mentions if m.tool == tool]
    return f"{tool} ({_quoted(texts[:2])})"


@dataclass(frozen=True)
class ToolChoice:
    """The verdict on one chosen tool (arguments aside) and why."""

    correct: bool
    reason: str


def judge_tool(
    request: Request,
    mine: ToolFit,
    fits: list[ToolFit],
    unit: float,
    any_described: bool,
    step_tools: frozenset[str] = frozenset(),
) -> ToolChoice:
    """Step 4 of the module docstring: is ``mine`` (the fit of one chosen tool) a right tool for the request?

    ``step_tools``: every tool the step called; none of them is ever a "better alternative" to another."""
    asked_for, ruled_out = named_tools(request.mentions)
    fit_by_name = {f.name: f for f in fits}
    surface = request.surface
    if mine.name in ruled_out:
        return ToolChoice(False, f"the user ruled out {_naming(request, mine.name)}, yet the agent called it")
    if mine.denied:
        return ToolChoice(
            False, f"the request asks for what {mine.name}'s description rules out: {_describe_fit(mine, surface)}"
        )
    if mine.name in asked_for:
        return ToolChoice(
            True,
            f"the user asked for {_naming(request, mine.name)} by name, and its description "
            "rules out nothing asked: an explicit instruction outweighs the fit of words",
        )
    wanted = _named_and_fitting(asked_for, fit_by_name)
    if wanted and wanted[0].name not in step_tools:
        return ToolChoice(
            False,
            f"the user asked for {_naming(request, wanted[0].name)} by name, and its "
            f"description rules out nothing asked, but the agent called {mine.name}",
        )
    # The named tool is called by another call of the step: this call is judged by its own fit.
    others = [f for f in fits if f.name != mine.name and f.name not in step_tools]
    if URL_TERM in request.terms:
        # A URL the request gives is the thing it is about: only a tool that takes a URL can act on it.
        takes_url = [f for f in fits if URL_TERM in f.matched and not f.denied]
        if takes_url and URL_TERM not in mine.matched and not step_tools & {f.name for f in takes_url}:
            return ToolChoice(
                False,
                f"the request gives a URL to act on, and {takes_url[0].name} takes one, while {mine.name} has no "
                f"parameter for a URL: {_describe_fit(takes_url[0], surface)} against {_describe_fit(mine, surface)}",
            )
        if URL_TERM in mine.matched:
            others = [f for f in others if URL_TERM in f.matched]
    best_other = others[0] if others else None
    if _clearly_fits(best_other, mine.score + CLEAR_MARGIN * unit):
        return ToolChoice(
            False,
            f"{_describe_fit(best_other, surface)} serves the request clearly better than "
            f"{_describe_fit(mine, surface)}",
        )
    if any_described and not mine.matched and any(f.matched for f in fits if f.name != mine.name):
        return ToolChoice(
            False,
            f"{mine.name} serves no part of the request: {_describe_fit(mine, surface)}, "
            "while other tools of the catalog do",
        )
    if not mine.described and not any_described:
        return ToolChoice(
            True, f"{mine.name} exists and nothing says what any tool is for, so there is nothing to object to"
        )
    if mine.score > 0:
        return ToolChoice(True, f"{_describe_fit(mine, surface)} is among the best fits for the request")
    return ToolChoice(
        True, f"no tool fits the request clearly better than {mine.name}, and its description rules out nothing asked"
    )


def assess(data: JudgeInput) -> Assessment:
    """Grade the choice in ``data`` (see the module docstring for the rules)."""
    tools = {str(t.get("name")): t for t in data.catalog if isinstance(t, dict)}
    request = read_request(data.conversation, tuple(tools))
    caps = catalog_capabilities(list(tools.values()))
    fits = tool_fits(request.terms, caps)
    fit_by_name = {f.name: f for f in fits}
    unit = distinctive_weight(len(caps))
    any_described = any(c.described for c in caps)
    asked_for, ruled_out = named_tools(request.mentions)

    asked = f"the user asks {json.dumps(request.latest[:300], ensure_ascii=False)}"
    if request.context:
        asked += f", a follow-up to {json.dumps(request.context[-300:], ensure_ascii=False)}"
    shown_terms = [request.surface.get(t, t) for t in request.terms]
    asked += f" (what it is about: {', '.join(shown_terms[:12]) or 'nothing specific'})"
    if asked_for:
        asked += "; it names the tool to use: " + ", ".join(_naming(request, t) for t in asked_for)
    if ruled_out:
        asked += "; it rules out " + ", ".join(_naming(request, t) for t in ruled_out)
    asked += "."

    if not any_described:
        available = (
            f"{len(caps)} tools ({', '.join(list(tools)[:12])}), named only: no tool has a description, "
            "so nothing says what a tool is for or what it cannot do."
        )
    else:
        ranked = [f for f in fits if f.score > 0][:3]
        available = f"{len(caps)} tools in the catalog. "
        available += (
            "By their descriptions the closest are "
            + "; ".join(_describe_fit(f, request.surface) for f in ranked)
            + "."
            if ranked
            else "No tool's description has anything in common with the request."
        )
        denied = [f for f in fits if f.denied and f not in ranked][:2]
        if denied:
            available += " Ruled out: " + "; ".join(_describe_fit(f, request.surface) for f in denied) + "."

    calls = [c for c in data.calls if isinstance(c, dict)]
    no_evidence = abstains(request, fits, any_described)
    if not calls:
        chosen = "no tool call"
        if data.text:
            chosen += f"; the agent answered {json.dumps(data.text[:200], ensure_ascii=False)}"
        arguments = "nothing to check, as there is no call."
        if no_evidence:
            # No tool shares a term with the request: that is evidence *for* answering without a call.
            return Assessment("correct", asked, available, chosen + ".", arguments, NO_OVERLAP_NO_CALL)
        wanted = _named_and_fitting(asked_for, fit_by_name)
        if wanted:
            return Assessment(
                "incorrect",
                asked,
                available,
                chosen + ".",
                arguments,
                f"the user asked for {_naming(request, wanted[0].name)} by name, yet no tool was called.",
            )
        fitting = [f for f in fits if _clearly_fits(f, CLEAR_FIT * unit)]
        # Only the values decide here: a tool's subject in other words than its name's (a user's "temperature"
        # for get_current_weather) is too common in real requests to call a step without a call right on it.
        serving = [f for f in fitting if _why_not_served(request, f, tools.get(f.name), subject=False) is None]
        if serving:
            return Assessment(
                "incorrect",
                asked,
                available,
                chosen + ".",
                arguments,
                f"{_describe_fit(serving[0], request.surface)} clearly serves the request, yet no tool was called.",
            )
        if fitting:
            why = _why_not_served(request, fitting[0], tools.get(fitting[0].name), subject=False)
            return Assessment(
                "correct",
                asked,
                available,
                chosen + ".",
                arguments,
                f"{fitting[0].name} shares words with the request, but {why}: no tool in the catalog serves it, "
                "so answering without a call is right.",
            )
        return Assessment(
            "correct",
            asked,
            available,
            chosen + ".",
            arguments,
            "no tool in the catalog clearly serves the request, so answering without a call is right.",
        )

    shown_calls = []
    for call in calls:
        args = call.get("arguments")
        shown = json.dumps(args if args is not None else call.get("raw_arguments"), ensure_ascii=False)
        shown_calls.append(f"{call.get('name')} with {shown[:200]}")
    chosen = "the agent called " + "; then ".join(shown_calls) + "."

    problems: list[str] = []
    undeclared: list[tuple[str, list[str]]] = []  # (tool, arguments it does not declare) per call that has only that
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
            found = schema_problems(tools[name].get("parameters") or {"type": "object"}, call["arguments"])
            if not found:
                notes.append(f"the arguments of {name} validate against its parameter schema")
                continue
            problems.append(f"the arguments of {name} fail its parameter schema: {'; '.join(p.message for p in found)}")
            if all(p.undeclared for p in found):
                undeclared.append((name, [n for p in found for n in p.undeclared]))
    # What the user named may be the job of any call of the step ("Tenet at 5 pm and No Time To Die at 7:30 pm").
    step_args = {str(i): c["arguments"] for i, c in enumerate(calls) if isinstance(c.get("arguments"), dict)}
    checkable = [
        lit for lit in request.literals if strings(step_args) or (is_value_literal(lit) and numbers(step_args))
    ]
    if not problems and checkable:
        if any(names_literal(step_args, lit) for lit in checkable):
            notes.append("they name what the user named")
        else:
            problems.append(
                f"the arguments of {' and '.join(dict.fromkeys(str(c.get('name')) for c in calls))} "
                f"name none of what the user named ({', '.join(checkable[:4])})"
            )
    arguments = "; ".join(notes + problems) + "."

    unsupported = None if problems else _unsupported_call(request, calls, tools, fit_by_name)
    if no_evidence and not problems:
        unsafe = [_unsafe(request, tools[str(c.get("name"))]) for c in calls if str(c.get("name")) in tools]
        reason = next((r for r in unsafe if r), None) or unsupported
        if reason is None:
            return Assessment(ABSTAIN, asked, available, chosen, arguments, NO_EVIDENCE)
        return Assessment("incorrect", asked, available, chosen, arguments, reason + ".")
    step_tools = frozenset(str(c.get("name")) for c in calls)
    choice = None
    for call in calls:
        name = str(call.get("name"))
        mine = fit_by_name.get(name)
        if mine is None or call.get("problem"):
            continue
        verdict = _call_choice(request, data, tools[name], mine, fits, unit, any_described, step_tools)
        if choice is None or (choice.correct and not verdict.correct):
            choice = verdict
    if problems:
        if choice is not None and len(problems) == len(undeclared):
            # Only undeclared extra arguments: say whether the tool was right, and why the call still fails.
            extras = "; ".join(
                f"{tool} gets {_quoted(names)}, which its parameter schema does not declare"
                for tool, names in undeclared
            )
            as_to_tool = (
                f"the tool is right ({choice.reason}), but"
                if choice.correct
                else f"the tool is not the best either ({choice.reason}), and"
            )
            return Assessment(
                "incorrect",
                asked,
                available,
                chosen,
                arguments,
                f"{as_to_tool} the call is malformed: {extras} and allows no undeclared "
                "argument, so the tool would reject the call as made.",
            )
        return Assessment("incorrect", asked, available, chosen, arguments, problems[0] + ".")
    assert choice is not None  # no problem: every call exists in the catalog and went through the interface
    if choice.correct and unsupported:
        return Assessment("incorrect", asked, available, chosen, arguments, unsupported + ".")
    if choice.correct:
        catalog_text = json.dumps(data.catalog, ensure_ascii=False)
        idle = idle_calls(request.latest, [(str(c.get("name")), c.get("arguments") or {}) for c in calls], catalog_text)
        if idle:
            names = " and ".join(f"call {i + 1} ({calls[i].get('name')})" for i in idle)
            return Assessment(
                "incorrect",
                asked,
                available,
                chosen,
                arguments,
                f"{names} of the step serves no part of the request: no call to its tool names "
                "anything the request names, while the calls to another tool do.",
            )
        missing = unserved_values(request.latest, list(step_args.values()), catalog_text)
        if missing:
            return Assessment(
                "incorrect",
                asked,
                available,
                chosen,
                arguments,
                f"the step makes {len(calls)} call(s), but no call serves "
                f"{_quoted([v.text for v in missing[:4]])} of the request: a call the request needs "
                "is missing.",
            )
    return Assessment(
        "correct" if choice.correct else "incorrect", asked, available, chosen, arguments, choice.reason + "."
    )


def _request_text(request: Request) -> str:
    return "\n".join(t for t in (request.latest, request.context) if t)


def _capability_text(tool: dict[str, Any] | None) -> str:
    """A tool's description and its parameters' descriptions, as one text."""
    if not tool:
        return ""
    texts = [str(tool.get("description") or "")]
    properties = (tool.get("parameters") or {}).get("properties") or {}
    texts += [str(p.get("description") or "") for p in properties.values() if isinstance(p, dict)]
    return "\n".join(texts)


def _why_not_served(
    request: Request, fit: ToolFit, tool: dict[str, Any] | None, values: bool = True, subject: bool = True
) -> str | None:
    """Why a tool that shares words with the request does not serve it (:mod:`.relevance`), or None when it
    does: its subject is not what the request is about (unless ``subject`` is False), or the request gives too
    few of the numbers it needs (unless ``values`` is False)."""
    description = _capability_text(tool)
    asked = request.terms + tuple(request_acronyms(_request_text(request)))
    if subject and subject_named(asked, fit.name, description, frozenset(fit.matched)) is False:
        named = ", ".join(sorted(subject_terms(fit.name, description)))
        return f"what it is for ({fit.name}: {named}) is not what the request is about"
    if values and tool is not None and lacks_values(_request_text(request), tool.get("parameters")):
        return f"the request gives too few of the numbers {fit.name} requires"
    return None


def _unsupported_call(
    request: Request, calls: list[dict[str, Any]], tools: dict[str, dict[str, Any]], fit_by_name: dict[str, ToolFit]
) -> str | None:
    """Why a call of the step is tied to nothing asked (:mod:`.relevance`: its tool does not serve the request
    and none of its arguments holds a value the request gives), or None. A tool the user named is never."""
    asked_for, _ = named_tools(request.mentions)
    text = _request_text(request)
    for call in calls:
        name = str(call.get("name"))
        if name not in tools or name in asked_for or name not in fit_by_name:
            continue
        why = _why_not_served(request, fit_by_name[name], tools[name], values=False)
        if why and not grounded(text, call.get("arguments") or {}):
            return f"the call to {name} serves nothing asked: {why}, and none of its arguments holds a value the request gives"
    return None


def _unsafe(request: Request, tool: dict[str, Any]) -> str | None:
    """Why calling ``tool`` is wrong for a request that only reads (it changes or deletes state), or None."""
    asked_for, _ = named_tools(request.mentions)
    name = str(tool.get("name"))
    why = changes_state(tool)
    if why and name not in asked_for and only_reads(request.latest):
        return f"{name} changes or deletes state ({why}), but the request only asks to read or look"
    return None


def _call_choice(
    request: Request,
    data: JudgeInput,
    tool: dict[str, Any],
    mine: ToolFit,
    fits: list[ToolFit],
    unit: float,
    any_described: bool,
    step_tools: frozenset[str],
) -> ToolChoice:
    """One call's tool against the request: a tool that changes state for a request that only reads is wrong;
    otherwise :func:`judge_tool`, the step's other tools never counting as better alternatives."""
    unsafe = _unsafe(request, tool)
    if unsafe:
        return ToolChoice(False, unsafe)
    return judge_tool(request, mine, fits, unit, any_described, step_tools)


def abstains(request: Request, fits: list[ToolFit], any_described: bool) -> bool:
    """Whether the judge has no evidence: tools are described, yet none shares a term with the request and the
    user names none."""
    return any_described and not request.mentions and not any(f.matched or f.denied for f in fits)


_WORDINGS = (
    (
        "Step 1, what was asked: ",
        "Step 2, which tools were available: ",
        "Step 3, what was chosen: ",
        "Step 4, whether the arguments fit: ",
        "Verdict: {verdict}, because ",
    ),
    ("1. The request: ", "2. The tools: ", "3. The choice: ", "4. The arguments: ", "So the choice is {verdict}: "),
    (
        "First, the request: ",
        "Next, the catalog: ",
        "Then the choice: ",
        "Finally, the arguments: ",
        "Conclusion ({verdict}): ",
    ),
)


def write_reasoning(assessment: Assessment, wording: int = 0) -> str:
    """The step-by-step reasoning text in wording number ``wording`` (any int; taken modulo the wordings)."""
    heads = _WORDINGS[wording % len(_WORDINGS)]
    steps = (assessment.asked, assessment.available, assessment.chosen, assessment.arguments)
    lines = [head + text for head, text in zip(heads[:4], steps)]
    lines.append(heads[4].format(verdict=assessment.verdict) + assessment.conclusion)
    return "\n".join(lines)


def catalog_judge(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]], params: dict[str, Any]
) -> dict[str, Any]:
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
    content = json.dumps(
        {"reasoning": write_reasoning(assessment, wording), "verdict": assessment.verdict}, ensure_ascii=False
    )
    return {"role": "assistant", "content": content}
