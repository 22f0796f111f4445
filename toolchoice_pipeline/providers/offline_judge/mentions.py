"""Catalog tools that a request names explicitly: "websearch xterm.js tmux", "read it back with the Read tool".

Used by the offline judge (:mod:`toolchoice_pipeline.providers.offline_judge`): a user who names the tool to use gives an instruction, which
counts more than how well the words of the request fit the tool's description. Pure functions, no model.

A tool's *name tokens* are its name split at ``_``, ``-``, ``.``, ``/``, spaces and camelCase humps, lower-cased
(``WebSearch`` → ``web``, ``search``). A request names a tool (case-insensitively) when it has:

- the name as an identifier, for a name of two or more tokens: as written ("WebSearch", "websearch",
  "get_weather") or its tokens run together or joined by ``_``;
- the name, or its tokens as a phrase ("web search", "web-search"), *marked* as a tool's: followed by "tool"
  ("the Read tool", "web search tool", "the get_weather function"), after "tool" or "function" ("the tool
  Grep"), after a verb of use ("use Grep", "using the Bash", "call WebFetch", "do a web search"), or quoted
  (`` `Read` ``, ``"Read"``).

So "read the file" or "get the weather" names nothing: a one-token name is also an ordinary word, and a
description of the job that shares the name's words ("Get historical GDP data") is no instruction.

Names inside paths, file names and URLs do not count (a dotted tool name such as ``random_forest.train`` is the
tool's, not a file's). A mention is *negated* when one of the four words before
it, in its clause, is a negation (``not``, ``don't``, ``never``, ``without``, ``avoid``, ``no``, ``instead of``,
``rather than``...: "don't use the Read tool", "without WebSearch"): the user then rules that tool out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from toolchoice_pipeline.providers.offline_judge.fit import blank, name_spans

_TOKEN_SPLIT = re.compile(r"[\s_./-]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
NEGATION_WORDS = frozenset(
    {"not", "don't", "dont", "never", "without", "avoid", "no", "doesn't", "cannot", "can't", "stop"}
)
NEGATION_PHRASES = ("instead of", "rather than")
_CLAUSE_END = re.compile(r"[.;:!?,\n()]")
_WORD = re.compile(r"[A-Za-z']+")


@dataclass(frozen=True)
class Mention:
    """``tool`` named in the request at ``start:end`` (as ``text``); ``negated`` when the user rules it out."""

    tool: str
    start: int
    end: int
    text: str
    negated: bool


def name_tokens(name: str) -> list[str]:
    """The lower-cased tokens of a tool name (``WebSearch`` → ``["web", "search"]``, ``get_weather`` →
    ``["get", "weather"]``)."""
    return [token.lower() for token in _TOKEN_SPLIT.split(name.strip()) if token]


_USE = r"(?:use|using|call|calling|invoke|via|try|do\s+a|run\s+a)"
_TOOL = r"(?:tools?|functions?)\b"


# Compiled once per tool name: every poll of every episode looks for the same catalog's names, and a catalog of over
# ~100 tools (5 patterns each) overflows the re module's own cache of 512, so each call compiled them all again.
@lru_cache(maxsize=1024)
def _patterns(name: str) -> tuple[re.Pattern[str], ...]:
    tokens = name_tokens(name)
    if not tokens:
        return ()
    edge_before, edge_after = r"(?<![\w-])", r"(?![\w-])"
    exact = {name, "".join(tokens), "_".join(tokens)} if len(tokens) >= 2 else set()
    spelled = exact | {tokens[0]} | {sep.join(tokens) for sep in (" ", "-")}
    core = "|".join(re.escape(v) for v in sorted(spelled, key=len, reverse=True))
    patterns = [
        re.compile(rf"{edge_before}(?:{core})\s+{_TOOL}", re.IGNORECASE),
        re.compile(rf"\b{_TOOL}\s+(?:called\s+|named\s+)?(?:{core}){edge_after}", re.IGNORECASE),
        re.compile(rf"\b{_USE}\s+(?:the\s+|a\s+)?(?:{core}){edge_after}(?:\s+{_TOOL})?", re.IGNORECASE),
        re.compile(rf"[`\"'](?:{core})[`\"']", re.IGNORECASE),
    ]
    if exact:
        alternation = "|".join(re.escape(v) for v in sorted(exact, key=len, reverse=True))
        patterns.append(re.compile(rf"{edge_before}(?:{alternation}){edge_after}", re.IGNORECASE))
    return tuple(patterns)


def _negated(text: str, start: int) -> bool:
    clause = _CLAUSE_END.split(text[:start])[-1]
    before = [w.lower() for w in _WORD.findall(clause)][-4:]
    return any(w in NEGATION_WORDS for w in before) or any(p in " ".join(before) for p in NEGATION_PHRASES)


def tool_mentions(text: str, names: Iterable[str]) -> list[Mention]:
    """The catalog tools ``text`` names explicitly (see the module docstring), in order of appearance; where two
    names overlap ("WebSearch" and "Search"), the longer mention wins."""
    names = list(dict.fromkeys(str(n) for n in names))
    own = {n.lower() for n in names}
    text = text or ""
    unnamed = blank(text, ((s.start, s.end) for s in name_spans(text) if s.value.lower() not in own))
    candidates: list[Mention] = []
    for name in names:
        for pattern in _patterns(name):
            for match in pattern.finditer(unnamed):
                candidates.append(
                    Mention(
                        name,
                        match.start(),
                        match.end(),
                        text[match.start() : match.end()],
                        _negated(unnamed, match.start()),
                    )
                )
    chosen: list[Mention] = []
    for mention in sorted(candidates, key=lambda m: (m.start - m.end, m.start)):
        if all(mention.end <= other.start or mention.start >= other.end for other in chosen):
            chosen.append(mention)
    return sorted(chosen, key=lambda m: m.start)


def named_tools(mentions: Iterable[Mention]) -> tuple[list[str], list[str]]:
    """``(asked_for, ruled_out)``: the tools named without a negation, and those the user ruled out, each once,
    in order; a tool both asked for and ruled out counts as neither."""
    asked = list(dict.fromkeys(m.tool for m in mentions if not m.negated))
    ruled_out = list(dict.fromkeys(m.tool for m in mentions if m.negated))
    both = set(asked) & set(ruled_out)
    return [t for t in asked if t not in both], [t for t in ruled_out if t not in both]
