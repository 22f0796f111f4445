"""How well a request fits each tool's description, counting what a description says the tool cannot do.

Used by the offline judge (:mod:`toolchoice_pipeline.providers.offline_judge`). Pure functions, no model:

- Terms are lower-cased words (identifiers split at ``_``, ``-``, ``.``, ``/`` and camelCase humps), stop words
  dropped, reduced by the Snowball English stemmer (``deleting`` → ``delet``).
- Numbers are values, not capabilities: they are never terms ("defaults to 10" says nothing a request for "10
  results" needs).
- A tool's *capability text* is its description plus its parameters' descriptions. Parts of it are *denials*:
  - a negated clause: from a capability-denial cue (``cannot``, ``can't``, ``does not``, ``do not``, ``never``,
    ``knows nothing about``, ``unable to``, ``not for``...) to the end of the clause or the next cue ("cannot
    create, change or delete a file"); a bare ``not`` only as a contrast ("searches inside files, not file
    names") or at the start of a clause ("Not for a single quick lookup"). A negation inside a condition is no
    denial: "if not provided, defaults to ...", "whether or not to include ...", "if the file does not exist,
    it is created" say what happens in a case, not what the tool cannot do (a cue preceded, in its clause and
    with no comma in between, by ``if``, ``unless``, ``when``, ``whether``, ``otherwise``...);
  - ``read-only``: each mutation verb (create, write, change, delete...) on its own;
  - a deferral: a clause that sends a job to another tool of the catalog ("Prefer Read to show a file",
    "use Glob for names"); its words count *for* the named tool too.
  Every other word is a *positive capability*.
- A request *hits* a denial when it has at least two of the denial's terms, or its only term: "delete the
  lock file" hits "cannot ... delete a file", while "rename usr to user" does not hit "cannot rename files".
- Terms are weighted by their inverse document frequency over the catalog's capability texts (BM25's idf),
  so a word every tool mentions says little.
- ``fit(tool) = sum(idf of request terms among its positive capabilities)
  - NEGATION_WEIGHT * sum(idf of request terms in the denials it hits)``.
- Two parameter kinds are capabilities too, as pseudo-terms: a parameter for a file path (``<path>``) and one
  for a URL (``<url>``); a request naming a path or a URL carries the same pseudo-term.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

NEGATION_WEIGHT = 2.0
PATH_TERM = "<path>"
URL_TERM = "<url>"

NEGATION_CUES = (
    "knows nothing about",
    "know nothing about",
    "cannot",
    "can't",
    "can not",
    "could not",
    "does not",
    "doesn't",
    "do not",
    "don't",
    "unable to",
    "no access to",
    "never",
    "not for",
    "without access to",
)
# Words that open a condition: a negation after one of them (in the same clause, no comma in between) says what
# happens in a case ("if not provided, defaults to 10"), not what the tool cannot do.
CONDITION_WORDS = ("if", "unless", "when", "whenever", "whether", "otherwise", "in case", "until", "once")
READ_ONLY_CUES = ("read-only", "read only", "readonly")
MUTATION_VERBS = (
    "create",
    "write",
    "change",
    "modify",
    "edit",
    "update",
    "delete",
    "remove",
    "rename",
    "move",
    "overwrite",
    "save",
    "append",
    "insert",
    "replace",
)
DEFERRAL_CUES = ("use", "prefer", "instead", "rather")
# A clause ends at sentence punctuation or a dash; a negation also ends where the text turns to an alternative.
_CLAUSE_SPLIT = re.compile(r"[.;:!?()\n]|\s[-–—]\s")
_NEGATION_END = re.compile(r"\b(?:but|use|instead|except|only|however|so)\b", re.IGNORECASE)
# A cue, or a contrasting bare "not": at the start of a clause or after a comma ("inside files, not file names").
_CUE = re.compile(
    r"(?<![A-Za-z])(?:"
    + "|".join(re.escape(c) for c in sorted(NEGATION_CUES, key=len, reverse=True))
    + r")(?![A-Za-z])|(?:^|,)\s*(?:but\s+)?not(?![A-Za-z])",
    re.IGNORECASE,
)
_CONDITION = re.compile(
    r"(?<![A-Za-z])(?:" + "|".join(re.escape(w) for w in CONDITION_WORDS) + r")(?![A-Za-z])", re.IGNORECASE
)

STOP_WORDS = frozenset(
    """
a about above after again all also already am an and any anything anywhere are as at be been being below both
but by can could did do does doing done down during each either else etc even ever every few for from further
get gets given go had has have having he her here hers him his how i if in into is it its itself just let lets
like make may me might more most much must my need no nor not now of off on once one only or other our out over
own please same shall she should so some something such than that the their them then there these they this
those through to too under until up upon us very via was we were what when where whether which while who whom
whose why will with would yes you your yours e g eg ie ok okay thanks thank hi hello tell want wants many
still really right
""".split()
)

# A small thesaurus: words that software requests and tool descriptions use for the same thing, each mapped
# to one canonical word before stemming (multi-word phrases first).
SYNONYMS: dict[str, tuple[str, ...]] = {
    "count": ("how many",),
    "repository": ("repo", "repos"),
    "directory": ("folder", "folders", "dir", "dirs"),
    "delete": ("remove", "erase", "rm"),
    "internet": ("web", "online"),
    "show": ("display", "view"),
    "run": ("execute", "launch"),
    "search": ("look up", "look it up", "lookup", "google"),
}
_SYNONYM_PATTERNS = [
    (re.compile(rf"(?<![\w-]){re.escape(variant)}(?![\w-])", re.IGNORECASE), canonical)
    for canonical, variants in SYNONYMS.items()
    for variant in sorted(variants, key=len, reverse=True)
]
# Names of things, not of capabilities: URLs, paths, file names. They are left out of a request's terms and
# of a description's, so an example path in a description ("such as src/**/*.py") does not make a tool fit
# every request that names a path. Quoted text and bracketed lists in a description are examples too.
URL_PATTERN = re.compile(r"https?://[^\s'\"<>)\]]+")
PATH_PATTERN = re.compile(r"(?<![\w/.~-])(?:[\w.*~-]*/)+[\w.*~-]*")
FILE_PATTERN = re.compile(r"(?<![\w/.-])\.?[A-Za-z0-9_-]{2,}\.[A-Za-z][A-Za-z0-9]{0,5}\b(?!\.\w)")
_EXAMPLES = re.compile(r"\"[^\"\n]*\"|`[^`\n]*`|\[[^\]\n]*\]")

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9']*|[0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@lru_cache(maxsize=1)
def _stemmer():
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _stemmer().stemWord(word)


# Values that look like names: digits between separators are a date, a ratio or a time ("2022/08/16", "4/5"),
# not a path; a file-like word right after a number is its unit ("350 sq.ft"), not a file name.
_NUMERIC_NAME = re.compile(r"(?=[^\d]*\d)[\d/.:,-]+")
_AFTER_NUMBER = re.compile(r"\d\s?$")


_FILE_EXTENSION = re.compile(r"\.([A-Za-z][A-Za-z0-9]*)$")


def _missing_space(value: str, rest: str) -> bool:
    """Whether a file-like ``value`` is two words with the space after a full stop left out ("Napa.I want",
    "time.will it"): its "extension" is a capitalised word or a stop word, no file type ``mimetypes`` knows,
    and a word follows after a space."""
    import mimetypes

    extension = _FILE_EXTENSION.search(value)
    if extension is None or not re.match(r"\s+\w", rest):
        return False
    word = extension.group(1)
    if mimetypes.guess_type(f"x.{word}")[0] is not None:
        return False
    return word[0].isupper() or word.lower() in STOP_WORDS


@dataclass(frozen=True)
class NameSpan:
    """A name of a thing in a text: ``kind`` is ``url``, ``path`` or ``file``; ``value`` is the name as written
    (trailing sentence punctuation dropped)."""

    start: int
    end: int
    kind: str
    value: str


def name_spans(text: str) -> list[NameSpan]:
    """The URLs, paths and file names in ``text``, in order; a URL's path is not a path of its own, and a
    numeric "path" (a date, a ratio), a unit after a number or two words with the space after a full stop left
    out ("Napa.I want") is not a name at all."""
    found: list[NameSpan] = []
    taken = [False] * len(text)
    for kind, pattern in (("url", URL_PATTERN), ("path", PATH_PATTERN), ("file", FILE_PATTERN)):
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(taken[start:end]):
                continue
            value = match.group(0)
            if kind != "url" and _NUMERIC_NAME.fullmatch(value):
                continue
            if kind == "file" and (_AFTER_NUMBER.search(text[:start]) or _missing_space(value, text[end:])):
                continue
            found.append(NameSpan(start, end, kind, value.strip().rstrip(".,;:!?")))
            taken[start:end] = [True] * (end - start)
    return sorted(found, key=lambda span: span.start)


def blank(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` with each ``(start, end)`` span replaced by as many spaces (offsets stay valid)."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def strip_names(text: str) -> str:
    """``text`` with URLs, paths and file names (:func:`name_spans`) blanked out, offsets kept."""
    return blank(text, ((span.start, span.end) for span in name_spans(text)))


def canonical_words(text: str) -> str:
    """``text`` with the :data:`SYNONYMS` variants replaced by their canonical word."""
    for pattern, canonical in _SYNONYM_PATTERNS:
        text = pattern.sub(canonical, text)
    return text


def words(text: str) -> list[str]:
    """Lower-cased words of ``text``; identifiers split at camelCase humps and punctuation."""
    out: list[str] = []
    for raw in _WORD.findall(_CAMEL.sub(" ", canonical_words(text or ""))):
        word = raw.lower().strip("'")
        if word.endswith("'s"):
            word = word[:-2]
        if word:
            out.append(word)
    return out


def terms(text: str) -> list[str]:
    """Stemmed content terms of ``text``, in order, stop words and numbers dropped (repeats kept)."""
    return [_stem(w) for w in words(text) if w not in STOP_WORDS and len(w) > 1 and not w.isdigit()]


@dataclass(frozen=True)
class Denial:
    """Something a description says its tool cannot do (or leaves to ``to``, another tool)."""

    terms: frozenset[str]
    phrase: str
    to: str | None = None

    def hit_by(self, request: set[str]) -> frozenset[str]:
        """The request terms that hit this denial (empty when it is not hit)."""
        common = self.terms & request
        return frozenset(common) if self.terms and len(common) >= min(2, len(self.terms)) else frozenset()


@dataclass
class Capabilities:
    """What one tool's capability text says it does (``positive`` stems) and what it denies."""

    name: str
    described: bool
    positive: set[str] = field(default_factory=set)
    denials: list[Denial] = field(default_factory=list)

    @property
    def vocabulary(self) -> set[str]:
        return self.positive.union(*(d.terms for d in self.denials))


def _clauses(text: str) -> list[str]:
    return [c for c in _CLAUSE_SPLIT.split(text) if c.strip()]


def _conditional(clause: str, at: int) -> bool:
    """Whether the negation cue at ``at`` belongs to a condition: a condition word before it in the clause, with
    no comma in between ("if not provided", "whether or not", "if the file does not exist")."""
    return bool(_CONDITION.search(clause[:at].rsplit(",", 1)[-1]))


def _negations(clause: str) -> tuple[list[tuple[str, frozenset[str]]], str]:
    """The negated parts of a clause (phrase, terms) and the clause with them blanked out."""
    found: list[tuple[str, frozenset[str]]] = []
    cues = list(_CUE.finditer(clause))
    kept = clause
    for index, cue in enumerate(cues):
        if _conditional(clause, cue.start()):
            continue  # its words stay in the clause's positive text
        limit = cues[index + 1].start() if index + 1 < len(cues) else len(clause)
        stop = _NEGATION_END.search(clause, cue.end(), limit)
        end = stop.start() if stop else limit
        phrase = clause[cue.start() : end].strip(" ,")
        negated = frozenset(terms(clause[cue.end() : end]))
        if negated:
            found.append((phrase, negated))
        kept = kept[: cue.start()] + " " * (end - cue.start()) + kept[end:]
    return found, kept


def _deferral_parts(clause: str, own: str, others: Iterable[str]) -> list[tuple[str, str]]:
    """``(tool, text)`` parts of a clause that sends jobs to other tools ("Prefer Read to show a file, Grep to
    search contents"); empty when the clause names no other tool or has no deferral cue."""
    names = [n for n in others if n != own and re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", clause)]
    if not names or not re.search(r"\b(?:" + "|".join(DEFERRAL_CUES) + r")\b", clause, re.IGNORECASE):
        return []
    pieces = [p for p in re.split(r",|\band\b|\bor\b", clause) if p.strip()]
    owners: list[str | None] = []
    for piece in pieces:
        named = [n for n in names if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", piece)]
        owners.append(named[0] if named else None)
    parts = []
    for index, piece in enumerate(pieces):
        owner = owners[index]
        if owner is None:
            before = [o for o in owners[:index] if o]
            after = [o for o in owners[index + 1 :] if o]
            owner = before[-1] if before else after[0]
        parts.append((owner, piece))
    return parts


def _is_path_parameter(name: str, schema: dict[str, Any]) -> bool:
    text = f"{name} {schema.get('description', '')}".lower()
    return schema.get("type") in (None, "string") and bool(re.search(r"\b(path|file|directory|dir)\b|_path\b", text))


def _is_url_parameter(name: str, schema: dict[str, Any]) -> bool:
    return schema.get("format") in ("uri", "url") or name.lower() in ("url", "uri", "link")


def capabilities(
    name: str, description: str, parameters: dict[str, Any] | None = None, catalog_names: Iterable[str] = ()
) -> Capabilities:
    """Split a tool's capability text (description + parameter descriptions) into positives and denials.

    ``catalog_names`` lets deferrals to other tools ("use Glob for names") be recognised.
    """
    properties = (parameters or {}).get("properties") or {}
    texts = [description or ""]
    texts += [
        p["description"] for p in properties.values() if isinstance(p, dict) and isinstance(p.get("description"), str)
    ]
    caps = Capabilities(name=name, described=any(t.strip() for t in texts))
    texts = [strip_names(_EXAMPLES.sub(" ", t)) for t in texts]
    others = list(catalog_names)
    for text in texts:
        lowered = text.lower()
        for cue in READ_ONLY_CUES:
            if re.search(rf"(?<![a-z]){re.escape(cue)}(?![a-z])", lowered):
                caps.denials += [Denial(frozenset(terms(v)), f"{cue}: cannot {v}") for v in MUTATION_VERBS]
        for clause in _clauses(text):
            deferrals = _deferral_parts(clause, name, others)
            if deferrals:
                for owner, piece in deferrals:
                    piece_terms = frozenset(terms(re.sub(rf"(?<![\w-]){re.escape(owner)}(?![\w-])", " ", piece)))
                    piece_terms -= set(terms(" ".join(DEFERRAL_CUES)))
                    if piece_terms:
                        caps.denials.append(Denial(piece_terms, piece.strip(" ,"), to=owner))
                continue
            negated, kept = _negations(clause)
            caps.denials += [Denial(t, phrase) for phrase, t in negated]
            caps.positive.update(terms(kept))
    for prop, schema in properties.items():
        if isinstance(schema, dict):
            if _is_url_parameter(prop, schema):
                caps.positive.add(URL_TERM)
            elif _is_path_parameter(prop, schema):
                caps.positive.add(PATH_TERM)
    return caps


def catalog_capabilities(catalog: list[dict[str, Any]]) -> list[Capabilities]:
    """The capabilities of every tool in a catalog (``{name, description, parameters}`` dicts); a deferral's
    words also count as positive capabilities of the tool it names. Cached per catalog: treat as read-only."""
    return list(_cached_capabilities(json.dumps(catalog, sort_keys=True, ensure_ascii=False)))


@lru_cache(maxsize=256)
def _cached_capabilities(catalog_json: str) -> tuple[Capabilities, ...]:
    catalog = json.loads(catalog_json)
    names = [str(t.get("name")) for t in catalog]
    caps = [
        capabilities(str(t.get("name")), str(t.get("description") or ""), t.get("parameters"), names) for t in catalog
    ]
    by_name = {c.name: c for c in caps}
    for cap in caps:
        for denial in cap.denials:
            if denial.to in by_name:
                by_name[denial.to].positive.update(denial.terms)
    return tuple(caps)


@dataclass(frozen=True)
class ToolFit:
    """The fit of the request to one tool: ``score``, the request terms it covers (``matched``) and the
    denials the request hits (``hits``: phrase and the request terms that hit it)."""

    name: str
    score: float
    matched: tuple[str, ...]
    hits: tuple[tuple[str, tuple[str, ...]], ...]
    described: bool

    @property
    def denied(self) -> bool:
        return bool(self.hits)


def idf_weights(catalog: Iterable[Capabilities]) -> dict[str, float]:
    """BM25 inverse document frequency of every term over the catalog's capability texts."""
    tools = list(catalog)
    n = len(tools)
    df: dict[str, int] = {}
    for caps in tools:
        for term in caps.vocabulary:
            df[term] = df.get(term, 0) + 1
    return {term: math.log(1 + (n - d + 0.5) / (d + 0.5)) for term, d in df.items()}


def distinctive_weight(n_tools: int) -> float:
    """The idf of a term that only one tool of an ``n_tools`` catalog has: the unit of the judge's thresholds."""
    return math.log(1 + (max(n_tools, 1) - 0.5) / 1.5)


def tool_fits(request_terms: Iterable[str], catalog: list[Capabilities]) -> list[ToolFit]:
    """The fit of the request to every tool in the catalog, best first (ties keep catalog order)."""
    wanted = list(dict.fromkeys(request_terms))
    request = set(wanted)
    idf = idf_weights(catalog)
    fits = []
    for caps in catalog:
        matched = tuple(t for t in wanted if t in caps.positive)
        hits = []
        against: set[str] = set()
        for denial in caps.denials:
            hit = denial.hit_by(request)
            if hit:
                hits.append((denial.phrase, tuple(t for t in wanted if t in hit)))
                against |= hit
        score = sum(idf[t] for t in matched) - NEGATION_WEIGHT * sum(idf[t] for t in against)
        fits.append(ToolFit(caps.name, round(score, 4), matched, tuple(hits), caps.described))
    return sorted(fits, key=lambda f: -f.score)
