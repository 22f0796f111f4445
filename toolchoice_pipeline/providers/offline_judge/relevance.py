"""Whether a tool *serves* a request, beyond sharing words with it: the offline judge's relevance rules.

Used by the offline judge (:mod:`.model`) on both sides of the same question, so a step that makes no call and
a step that calls a tool are graded alike: when no tool serves the request, answering without a call is right
and a call serves no part of it; when one does, a step without a call misses it. Pure functions, no model.

Sharing words is not serving: "the area of a triangle given its base and height" shares *calculate*, *given*
and *height* with "Calculate body mass index given weight and height", and no call of that tool answers it.
Two checks, each needing no knowledge of the domain:

- **the tool's subject**: the content terms of its *name* (``determine_body_mass_index`` → body, mass, index),
  less the actions any tool's name may start with (:data:`ACTIONS`: get, calculate, find, search...), that its
  description uses too. A tool whose name has such terms serves only a request that has one of them (stemmed,
  with the fit's synonyms), half of the terms of the description's first sentence (what it is for in other
  words: "the area under a curve" for ``integrate``), a file path or URL the tool takes, or names the tool; a
  name of actions only (``requests.get``) or in a code of its own (``ChaFod``) says nothing, and the
  description's fit decides alone;
- **the values it needs**: a tool with more required number parameters than the request (and the turns it
  follows up) gives numbers cannot be called with the user's values: the request lacks what the call needs
  (BFCL counts such a request as irrelevant too: "a function that needs the price, a request that gives none").

A step without a call is wrong only when a tool that clearly fits has the values it needs in the request (the
subject check is not used there: real users name a tool's subject in words of their own, "temperature" for
``get_current_weather``, "burger" for ``change_food``, and a step without a call would be called right on
it). A call is *unsupported*, and wrong, when its tool's subject is not in the request and none of its
arguments holds a value the request gives: nothing ties the call to what was asked. The values check is not
used on calls: a call may carry numbers everybody knows (52 cards in a deck).
"""

from __future__ import annotations

import re
from typing import Any

from toolchoice_pipeline.providers.offline_judge.arguments import numbers, strings
from toolchoice_pipeline.providers.offline_judge.fit import PATH_TERM, URL_TERM, terms

# Actions a tool's name starts with whatever it acts on: they name no subject.
ACTIONS = frozenset(
    terms(
        """get gets retrieve fetch find lookup query search list show display calculate calc compute determine
        estimate evaluate check validate verify perform execute run do make generate create build provide return
        give obtain analyze analyse predict convert process handle manage request send post put set call invoke
        tool tools function api service util utils helper helpers info information data details detail result
        results value values by for of from to with the a an all new current"""
    )
)
# A number, a unit may follow without a space ("6cm", "1.75m", "50mH")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\d])")
_NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty hundred thousand "
    "million billion half quarter double twice dozen".split()
)
MIN_TERMS = 2
_NUMERIC_TYPES = ("integer", "number", "float", "int", "double", "long")


def subject_terms(name: str, description: str = "") -> frozenset[str]:
    """The content terms of a tool's name that are not :data:`ACTIONS` and that its description (when it has
    one) uses too (``finance.fetchGDP`` → ``{financ, gdp}``): a name in a code of its own (``ChaFod``) says
    nothing the description does not."""
    subject = frozenset(terms(name)) - ACTIONS
    return subject & frozenset(terms(description)) if description.strip() else subject


PREFIX = 5


def _same_stem(subject: str, asked: str) -> bool:
    """The stems of one word family the stemmer keeps apart (``evolut``, ``evolutionari``): one starts with the
    other, five letters at least."""
    short, long = sorted((subject, asked), key=len)
    return len(short) >= PREFIX and long.startswith(short)


def request_acronyms(text: str) -> frozenset[str]:
    """The initials of every run of 2-5 capitalised or lower-case content words of ``text`` ("Body Mass Index" →
    ``bmi``, "greatest common divisor" → ``gcd``): a tool named by an acronym is named by its words too."""
    words = [w for w in re.findall(r"[A-Za-z]+", text) if w.lower() not in ACRONYM_SKIP]
    found = set()
    for size in range(2, 6):
        for start in range(len(words) - size + 1):
            found.add("".join(w[0] for w in words[start : start + size]).lower())
    return frozenset(found)


ACRONYM_SKIP = frozenset("a an the of and or for in on to with by".split())


def subject_named(
    request_terms: tuple[str, ...], name: str, description: str = "", takes: frozenset[str] = frozenset()
) -> bool | None:
    """Whether the request has a term of the tool's subject (or a path or URL the tool takes: ``takes`` holds
    its ``<path>`` / ``<url>`` pseudo-terms); None when the name has no subject (actions only, or words its
    description does not use), or the request has fewer than two terms to tell by (a request in a script the
    terms do not read)."""
    subject = subject_terms(name, description)
    if not subject or len(set(request_terms) - {PATH_TERM, URL_TERM}) < MIN_TERMS:
        return None
    asked = set(request_terms)
    if lead_covered(asked, description) or any(_same_stem(a, b) for a in subject for b in asked):
        return True
    return bool(subject & asked) or bool(takes & asked & {PATH_TERM, URL_TERM})


LEAD_SHARE = 0.5
_SENTENCE_END = re.compile(r"[.;:!?\n]")


def lead_covered(asked: set[str], description: str) -> bool:
    """Whether the request has half or more of the content terms (less :data:`ACTIONS`, two at least) of the
    description's first sentence, what the tool is for in the description's words ("the area under a curve"
    for ``integrate``, "greatest common divisor" for ``math.gcd``)."""
    lead = frozenset(terms(_SENTENCE_END.split(description.strip(), maxsplit=1)[0])) - ACTIONS
    return len(lead) >= MIN_TERMS and len(lead & asked) >= LEAD_SHARE * len(lead)


def request_numbers(text: str) -> int:
    """How many numbers ``text`` gives: numerals (``1,000`` and ``2.5`` are one each) and number words."""
    words = re.findall(r"[a-z]+", text.lower())
    return len(_NUMBER.findall(text)) + sum(w in _NUMBER_WORDS for w in words)


def required_numbers(parameters: Any) -> int:
    """How many required parameters of a tool take a plain number (no ``enum``, no ``default``)."""
    if not isinstance(parameters, dict):
        return 0
    properties = parameters.get("properties") or {}
    count = 0
    for name in parameters.get("required") or []:
        schema = properties.get(name)
        if not isinstance(schema, dict) or "enum" in schema or "default" in schema:
            continue
        kind = schema.get("type")
        kinds = kind if isinstance(kind, list) else [kind]
        if kinds and all(k in _NUMERIC_TYPES for k in kinds):
            count += 1
    return count


def lacks_values(text: str, parameters: Any) -> bool:
    """Whether the request (``text``) gives fewer numbers than the tool requires number parameters."""
    needed = required_numbers(parameters)
    return needed > 0 and request_numbers(text) < needed


def grounded(text: str, arguments: Any) -> bool:
    """Whether some argument value is something the request (``text``) says: a string of 3+ characters found
    in it (case-insensitively, or a word of it), or a number it gives."""
    lowered = text.lower()
    asked_words = set(re.findall(r"\w{3,}", lowered))
    for value in strings(arguments):
        value = value.strip().lower()
        if len(value) >= 3 and (value in lowered or set(re.findall(r"\w{3,}", value)) & asked_words):
            return True
    asked_numbers = {float(n.replace(",", "")) for n in _NUMBER.findall(text) if n.replace(",", "").count(".") <= 1}
    return bool(numbers(arguments) & asked_numbers)
