"""Deterministic in-process baseline agents for ``local/<name>`` (baselines to compare models with, not models).

Each agent is a function ``(messages, tools, params) -> assistant message`` (OpenAI chat format) that chooses
only from the OpenAI ``tools`` it is given, reading the tool names, descriptions and parameter schemas: a
changed description changes its choices. Neither sees an expected answer. No randomness: the same input
gives the same reply.

- ``bm25-router``: BM25 (``rank_bm25.BM25Okapi``) over each tool's name, description and parameters, queried
  with the latest user request; abstains below :data:`ABSTAIN_BELOW`; a tool whose description denies a
  capability the request asks for is scored down (:data:`NEGATION_FACTOR`); arguments come from schema-guided
  extraction (:func:`extract_request`, :func:`fill_arguments`).
- ``name-match``: the tool whose name appears in the request, else the best keyword overlap with a
  description, else no call; only required string parameters are filled, crudely.

Multi-step: the router splits the request into steps ("... and then ...") and calls the next step's tool after
each tool result; with no step left it answers in text, so an episode always ends. ``name-match`` answers in
text after any tool result. ``docs/baselines.md`` describes both, their blind spots and their scores.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import snowballstemmer
from rank_bm25 import BM25Okapi

from toolchoice_pipeline.providers.local_model import LocalModel
from toolchoice_pipeline.records.calls import message_text

#: The router answers in text when the best adjusted BM25 score is below this (BM25Okapi units, k1=1.5, b=0.75).
ABSTAIN_BELOW = 1.2
#: Score multiplier for a tool whose description denies a capability the request asks for.
NEGATION_FACTOR = 0.2
#: Small catalogs are padded with filler documents to this size so BM25's IDF stays positive.
MIN_CORPUS = 8
#: A follow-up with fewer content words than this that agrees ("yes, do it") is read with the earlier turns.
SHORT_FOLLOW_UP = 3
_AGREEMENT = re.compile(
    r"\b(?:yes|yeah|yep|yup|sure|ok|okay|go ahead|do it|do that|proceed|please do|sounds good|"
    r"let's do|go for it|why not)\b",
    re.IGNORECASE,
)
#: Weight of a tool's name tokens in its BM25 document, relative to its description (1).
NAME_WEIGHT = 2

ABSTAIN_TEXT = "No tool is needed for this request; answering directly."

_STEMMER = snowballstemmer.stemmer("english")
_STOPWORDS = frozenset(
    """
a an the and or but if then else of to in on at by for with from into onto over under about as is are was were be
been being am do does did doing have has had having i me my we our you your he she it its they them their this that
these those there here what which who whom whose where when why how all any each every some no nor not only own same
so than too very can could will would shall should may might must just also please pls kindly let lets let's us
want need like get got make sure one ok okay yes yeah go ahead thanks thank hi hello now right well e g eg ie i.e
""".split()
)

# --- words ---------------------------------------------------------------------------------------------------

_IDENTIFIER_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_RAW_WORD = re.compile(r"[A-Za-z0-9_.\-']+")


def split_identifier(name: str) -> list[str]:
    """``"WebSearch"`` → ``["web", "search"]``; ``"read_file"``, ``"spotify.play"``, ``"HTTPClient"`` alike."""
    return [part.lower() for part in _IDENTIFIER_PART.findall(name)]


@lru_cache(maxsize=8192)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word)


def words(text: str) -> list[str]:
    """Content words of ``text``: identifiers split, lower-cased, stop words dropped, Snowball-stemmed."""
    out = []
    for raw in _RAW_WORD.findall(text or ""):
        for part in split_identifier(raw):
            if len(part) > 1 and part not in _STOPWORDS and not part.isdigit():
                out.append(_stem(part))
    return out


# --- negated capabilities in descriptions ---------------------------------------------------------------------

_NEGATION_CUE = re.compile(
    r"\b(?:cannot|can ?not|can't|does not|doesn't|do not|don't|is not|isn't|never|not for|not meant for|"
    r"knows nothing about|read-only|read only)\b",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[.;!?()\n]|\bbut\b|\buse\b|\binstead\b", re.IGNORECASE)
_REDIRECT_END = re.compile(r"[.;!?()\n]")
#: What "read-only" denies, besides the words that follow it.
_READ_ONLY_DENIES = words("write modify edit change delete create update remove overwrite save rename move")


@dataclass(frozen=True)
class DescriptionParts:
    """A description read for routing: what the tool claims, what it denies, and what it says other tools do."""

    positive: str
    denied: list[str]
    credited: dict[str, list[str]]


def split_negations(description: str, other_tools: tuple[str, ...] = ()) -> DescriptionParts:
    """Cut a description into what the tool claims and what it denies.

    Two kinds of clause are cut from the text, and their words become the tool's denied words:
    a negation cue ("cannot", "does not", "read-only", "knows nothing about", "not for"...) and the rest of its
    clause; and a redirection to other tools of the catalog ("use Write", "prefer Read to show a file, Grep to
    search contents"), which describes those tools' jobs: each named tool is credited with the words that
    follow its name.
    """
    cues = [_NEGATION_CUE]
    names_pattern = None
    if other_tools:
        names = "|".join(re.escape(name) for name in sorted(other_tools, key=len, reverse=True))
        names_pattern = re.compile(rf"\b(?:{names})\b")
        cues.append(re.compile(rf"\b(?:use|prefer|see|try)\s+(?=(?:{names})\b)", re.IGNORECASE))
    positive: list[str] = []
    denied: list[str] = []
    credited: dict[str, list[str]] = {}
    rest = description or ""
    while True:
        found = [match for match in (cue.search(rest) for cue in cues) if match]
        if not found:
            positive.append(rest)
            break
        cue = min(found, key=lambda match: match.start())
        positive.append(rest[: cue.start()])
        tail = rest[cue.end() :]
        end = (_CLAUSE_END if cue.re is _NEGATION_CUE else _REDIRECT_END).search(tail)
        clause = tail[: end.start()] if end else tail
        denied.extend(words(clause))
        if cue.group(0).lower().startswith("read"):
            denied.extend(_READ_ONLY_DENIES)
        if cue.re is not _NEGATION_CUE and names_pattern is not None:
            mentions = list(names_pattern.finditer(clause))
            for index, mention in enumerate(mentions):
                stop = mentions[index + 1].start() if index + 1 < len(mentions) else len(clause)
                credited.setdefault(mention.group(0), []).extend(words(clause[mention.end() : stop]))
        rest = tail[end.start() :] if end else ""
    return DescriptionParts(" ".join(positive), denied, credited)


# --- the catalog index -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexedTool:
    """One tool as the agents see it: its OpenAI function definition and the words derived from it."""

    name: str
    description: str
    parameters: dict[str, Any]
    name_words: frozenset[str]
    document_words: frozenset[str]
    denied: frozenset[str]


@dataclass(frozen=True)
class CatalogIndex:
    """The tokenised catalog: tools in the order given and a BM25 index over them (plus filler documents)."""

    tools: tuple[IndexedTool, ...]
    bm25: BM25Okapi
    vocabulary: frozenset[str]


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    return tool.get("function", tool) if isinstance(tool, dict) else {}


def _parameter_text(parameters: dict[str, Any]) -> str:
    parts = []
    for name, schema in (parameters.get("properties") or {}).items():
        parts.append(" ".join(split_identifier(name)))
        if isinstance(schema, dict) and isinstance(schema.get("description"), str):
            parts.append(split_negations(schema["description"]).positive)
    return " ".join(parts)


def _values_as_kinds(text: str) -> str:
    """A description with its example URLs, globs and paths replaced by their kind words, as in queries
    ("such as src/**/*.py" → "such as glob pattern"): values match by kind, not by their letters."""
    text = _URL.sub(" url link web page ", text)
    text = _GLOB.sub(" glob pattern ", text)
    return _PATH.sub(" file path ", text)


def _build_index(tools: list[dict[str, Any]]) -> CatalogIndex:
    functions = [_function(tool) for tool in tools]
    names = [str(function.get("name") or "") for function in functions]
    read = [
        split_negations(str(function.get("description") or ""), tuple(n for n in names if n and n != name))
        for function, name in zip(functions, names)
    ]
    credited: dict[str, list[str]] = {}
    for parts in read:
        for name, credit in parts.credited.items():
            credited.setdefault(name, []).extend(credit)
    indexed, documents = [], []
    for function, name, parts in zip(functions, names, read):
        declared = function.get("parameters")
        parameters: dict[str, Any] = declared if isinstance(declared, dict) else {}
        name_words = words(name)
        document = (
            name_words * NAME_WEIGHT
            + words(_values_as_kinds(parts.positive))
            + words(_values_as_kinds(_parameter_text(parameters)))
            + credited.get(name, [])
        )
        claimed = set(document)
        # A word the tool also claims positively is not a capability it denies.
        indexed.append(
            IndexedTool(
                name,
                str(function.get("description") or ""),
                parameters,
                frozenset(name_words),
                frozenset(claimed),
                frozenset(w for w in parts.denied if w not in claimed),
            )
        )
        documents.append(document)
    vocabulary = frozenset(w for document in documents for w in document)
    mean_length = max(1, round(sum(map(len, documents)) / max(1, len(documents))))
    filler = [["\x00filler"] * mean_length] * max(0, MIN_CORPUS - len(documents))
    return CatalogIndex(tuple(indexed), BM25Okapi(documents + filler or [["\x00filler"]]), vocabulary)


_INDEX_CACHE: dict[str, CatalogIndex] = {}


def catalog_index(tools: list[dict[str, Any]]) -> CatalogIndex:
    """The index of ``tools`` (OpenAI ``tools`` list), cached by a hash of the list (last 256 catalogs)."""
    key = hashlib.sha256(json.dumps(tools, sort_keys=True, default=str).encode()).hexdigest()
    index = _INDEX_CACHE.get(key)
    if index is None:
        if len(_INDEX_CACHE) >= 256:
            _INDEX_CACHE.pop(next(iter(_INDEX_CACHE)))
        index = _INDEX_CACHE[key] = _build_index(tools)
    return index


# --- the conversation -------------------------------------------------------------------------------------------


@dataclass
class Turn:
    """Where the conversation stands: the request to act on and what happened since it was made."""

    request: str
    context: str
    calls_made: list[str]
    tool_results: list[str]

    @property
    def after_tool_result(self) -> bool:
        return bool(self.tool_results)


def read_turn(messages: list[dict[str, Any]]) -> Turn:
    """The latest user request; for a short follow-up that agrees ("yes, do it"), the two turns before it join
    it as context."""
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    request = message_text(messages[last_user]) if last_user >= 0 else ""
    context = ""
    if len(words(request)) < SHORT_FOLLOW_UP and _AGREEMENT.search(request):
        earlier = [message_text(m) for m in messages[: max(last_user, 0)] if m.get("role") in ("user", "assistant")]
        context = "\n".join(t for t in earlier[-2:] if t)
    calls_made, results = [], []
    for message in messages[last_user + 1 :]:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or []:
                calls_made.append(str(_function(call).get("name") or ""))
        elif message.get("role") == "tool":
            results.append(message_text(message))
    return Turn(request=request, context=context, calls_made=calls_made, tool_results=results)


_STEP_BREAK = re.compile(
    r"\s*(?:[;,]?\s*\b(?:and then|then|after that|afterwards|and also|finally)\b|;)\s*", re.IGNORECASE
)


def request_steps(request: str) -> list[str]:
    """The request cut into the steps it asks for, in order ("find X and then fix it" → two steps)."""
    steps = [part.strip(" ,.") for part in _STEP_BREAK.split(request)]
    return [step for step in steps if words(step)] or [request]


# --- values in a request ----------------------------------------------------------------------------------------

_URL = re.compile(r"\bhttps?://[^\s<>\"'`)\]]+", re.IGNORECASE)
_QUOTED = re.compile(r"`([^`]+)`|\"([^\"]+)\"|“([^”]+)”|(?<![\w])'([^']+)'(?![\w])")
_GLOB = re.compile(r"(?<![\w/])(?:[\w.\-]*/)*[\w.\-]*(?:\*|\?[\w.]|\[[^\]\s]+\]|\{[^}\s]+,[^}\s]+\})[\w.\-*/?{},\[\]]*")
_FILE_EXTENSIONS = (
    "py|pyi|ipynb|js|mjs|cjs|jsx|ts|tsx|vue|svelte|json|jsonl|yaml|yml|toml|ini|cfg|conf|env|lock|md|rst|txt|log|csv|"
    "tsv|sql|sh|bash|zsh|ps1|html|htm|css|scss|xml|go|rs|java|kt|kts|swift|rb|php|lua|r|scala|c|h|cc|cpp|hpp|cs|"
    "gradle|tf|proto|pem|pdf|png|jpg|jpeg|gif|svg|zip|gz|tar|parquet|db|sqlite|duckdb|mod|sum|gitignore|dockerignore"
)
_PATH = re.compile(
    r"(?<![\w/.])(?:~|\.{1,2})?/?(?:[\w.\-]+/)+[\w.\-]*"  # with a slash: src/app/main.py, ./x, src/
    rf"|(?<![\w/.])[\w\-]+(?:\.[\w\-]+)*\.(?:{_FILE_EXTENSIONS})\b(?!\.\w)"  # a file name: main.py, README.md
    r"|(?<![\w/.])\.[A-Za-z][\w\-]*(?:\.[A-Za-z]\w*)?\b"  # a dot file: .env, .gitignore
    r"|\b(?:Makefile|Dockerfile|Procfile|Gemfile|Rakefile|Justfile|LICENSE|CHANGELOG|README)\b",
)
_NUMBER = re.compile(r"(?<![\w.\-/])-?\d+(?:\.\d+)?(?![\w.]*[A-Za-z/])")
_IDENT = re.compile(
    r"\b[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+\b"  # dotted: os.path.join
    r"|\b[a-z]+_\w+\b|\b_\w+\b"  # snake_case, _private
    r"|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z]+[A-Z]\w*\b"  # camelCase, PascalCase
    r"|\b\w+(?=\(\))"  # called()
    r"|\b[A-Z]{2,}[A-Z0-9_]*\b"  # TODO, FIXME, MAX_RETRIES
)
_EXECUTABLES = frozenset(
    """
git python python3 pip pip3 pytest uv poetry npm npx yarn pnpm node deno bun make cmake cargo go rustc gcc clang
docker kubectl ls cd cat rm mv cp mkdir rmdir touch chmod chown find grep rg sed awk head tail wc echo curl wget tar
zip unzip ssh scp ps kill du df sort bash sh zsh mvn gradle java javac dotnet ruby bundle rake php composer terraform
helm psql sqlite3 tox nox black ruff mypy flake8 eslint prettier tsc jest vitest
""".split()
)
_RUN_VERB = re.compile(r"\b(?:run|execute|exec|invoke)\s+", re.IGNORECASE)
_LANGUAGE_EXTENSIONS = {
    "python": "py",
    "typescript": "ts",
    "javascript": "js",
    "markdown": "md",
    "yaml": "yaml",
    "json": "json",
    "rust": "rs",
    "go": "go",
    "java": "java",
    "ruby": "rb",
    "shell": "sh",
    "html": "html",
    "css": "css",
    "toml": "toml",
    "csv": "csv",
    "sql": "sql",
    "text": "txt",
    "c": "c",
    "cpp": "cpp",
    "kotlin": "kt",
}
_QUERY_LEAD = re.compile(
    r"^\s*(?:please\s+)?(?:(?:can|could)\s+you\s+)?(?:search|look\s+up|lookup|google|find|check|browse)\b"
    r"(?:\s+(?:the\s+)?(?:web|internet|online|net))?(?:\s+(?:for|about|on))?\s+",
    re.IGNORECASE,
)


@dataclass
class RequestValues:
    """Values found in a request, each list in order of appearance."""

    text: str
    urls: list[str] = field(default_factory=list)
    quoted: list[str] = field(default_factory=list)
    globs: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    numbers: list[tuple[float, int]] = field(default_factory=list)  # (value, character offset)
    identifiers: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    #: commands the request spells out (backticks, "run ..."), as opposed to ones inferred from plain words
    explicit_commands: int = 0
    #: the text with every URL, quoted string, glob, path and code identifier blanked out
    masked: str = ""


def extract_request(text: str) -> RequestValues:
    """URLs, quoted strings (backticks, double or single quotes), glob patterns, file paths, numbers, code
    identifiers and shell commands found in ``text``."""
    values = RequestValues(text=text)
    masked = text

    def take(pattern: re.Pattern, group: Callable[[re.Match], str], into: list) -> None:
        nonlocal masked
        for match in pattern.finditer(masked):
            value = group(match)
            if value:
                into.append(value)
        masked = pattern.sub(lambda m: " " * len(m.group(0)), masked)

    take(_URL, lambda m: m.group(0).rstrip(".,;:!?"), values.urls)
    for match in _QUOTED.finditer(masked):
        quoted = next(g for g in match.groups() if g is not None)
        values.quoted.append(quoted)
        if match.group(1) is not None and _looks_like_command(quoted):
            values.commands.append(quoted)
    for quoted in values.quoted:
        (values.globs if _GLOB.fullmatch(quoted) else values.paths if _PATH.fullmatch(quoted) else []).append(quoted)
    masked = _QUOTED.sub(lambda m: " " * len(m.group(0)), masked)
    command = _command_after_verb(masked)
    if command:
        values.commands.append(command)
    values.explicit_commands = len(values.commands)
    take(_GLOB, lambda m: m.group(0).rstrip(".,;:!?"), values.globs)
    take(_PATH, lambda m: m.group(0).rstrip(".,;:!?"), values.paths)
    command = _command_from_intent(masked, values)
    if command:
        values.commands.append(command)
    for match in _NUMBER.finditer(masked):
        number = float(match.group(0))
        values.numbers.append((int(number) if number.is_integer() else number, match.start()))
    values.identifiers = [m.group(0) for m in _IDENT.finditer(masked)]
    # Plain upper-case words (TODO, API) stay words; identifiers with "_", "." or inner capitals are masked.
    values.masked = _IDENT.sub(
        lambda m: m.group(0) if m.group(0).isalpha() and m.group(0).isupper() else " " * len(m.group(0)), masked
    )
    return values


def _looks_like_command(text: str) -> bool:
    first = text.strip().split(" ", 1)[0]
    return first in _EXECUTABLES or first.startswith(("./", "/")) or " -" in text


_GIT_SUBCOMMANDS = (
    "status",
    "diff",
    "log",
    "commit",
    "push",
    "pull",
    "fetch",
    "branch",
    "checkout",
    "switch",
    "stash",
    "add",
    "merge",
    "rebase",
    "blame",
    "tag",
    "reset",
    "show",
)
#: Words that name a git operation even without the word "git".
_GIT_ONLY_WORDS = frozenset({"commit", "push", "pull", "rebase", "stash", "checkout"})


def _command_from_intent(text: str, values: RequestValues) -> str | None:
    """A shell command for a plainly worded file or git operation: "delete build/" → ``rm -rf build/``,
    "rename a.py to b.py" → ``mv a.py b.py``, "git status" → ``git status``, 'commit it with the message
    "x"' → ``git commit -m "x"``."""
    lowered = text.lower()
    paths = [p for p in values.paths if p not in values.globs]
    if paths and re.search(r"\b(?:delete|remove|rm)\b", lowered):
        return " ".join(["rm -rf" if any(p.endswith("/") for p in paths) else "rm", *paths])
    if len(paths) >= 2 and re.search(r"\b(?:move|rename|mv)\b", lowered):
        return f"mv {paths[0]} {paths[1]}"
    if len(paths) >= 2 and re.search(r"\b(?:copy|duplicate|cp)\b", lowered):
        return f"cp {paths[0]} {paths[1]}"
    if paths and re.search(r"\b(?:make|create)\s+(?:a\s+|the\s+)?(?:new\s+)?(?:directory|folder)\b", lowered):
        return f"mkdir -p {paths[0]}"
    mentions_git = re.search(r"\bgit\b", lowered)
    for sub in _GIT_SUBCOMMANDS:
        if (mentions_git or sub in _GIT_ONLY_WORDS) and re.search(rf"\b{sub}\b", lowered):
            if sub == "commit" and values.quoted:
                return f"git commit -m {json.dumps(values.quoted[0])}"
            return f"git {sub}"
    return None


def _command_after_verb(text: str) -> str | None:
    """The command in "run pytest on tests/ to see ...": from the first executable after a run verb to the end
    of its clause, stop words left out (``pytest tests/``)."""
    for verb in _RUN_VERB.finditer(text):
        clause = re.split(r"[;!?\n]|\.(?:\s|$)|,\s|\s(?:and|then|to see|so that|so)\s", text[verb.end() :])[0]
        tokens = clause.split()
        start = next((i for i, token in enumerate(tokens) if _looks_like_command(token)), None)
        if start is not None:
            kept = [t for t in tokens[start:] if not (t.isalpha() and t.lower() in _STOPWORDS)]
            return " ".join(kept)
    return None


# --- filling arguments from the schema ----------------------------------------------------------------------------

_KIND_WORDS = {
    "url": {"url", "uri", "link", "endpoint", "href", "website", "webpag"},
    "glob": {"glob"},
    "regex": {"pattern", "regex", "regexp", "express"},
    "path": {"path", "file", "filenam", "filepath", "dir", "directori", "folder"},
    "command": {"command", "cmd", "shell", "script"},
    "query": {"queri", "q", "search", "keyword", "question", "term", "topic"},
}
#: Words near a number that point to a numeric parameter, by a word of the parameter's name.
_NUMBER_HINTS = {
    "limit": {"first", "top", "line", "most", "max", "limit", "result", "item", "entri", "row"},
    "offset": {"from", "start", "skip", "offset", "after"},
    "timeout": {"second", "sec", "timeout", "minut", "wait"},
    "count": {"count", "number", "time", "item", "result"},
    "max": {"max", "maximum", "most", "limit", "top"},
}


def parameter_kind(name: str, schema: dict[str, Any], tool_words: frozenset[str]) -> str:
    """What kind of value a parameter takes: ``url``, ``glob``, ``regex``, ``path``, ``command``, ``query``,
    ``number``, ``boolean``, ``array``, ``object`` or ``text``, from its name, type and description.

    ``tool_words`` are the words of the tool's own definition: a ``pattern`` of a tool that speaks of globs
    (and not of regular expressions) is a glob, any other ``pattern`` a regex. The description only decides
    between a glob and a regex; a ``format: uri`` makes a URL."""
    types = schema.get("type") if isinstance(schema, dict) else None
    types = [types] if isinstance(types, str) else list(types or ["string"])
    if "integer" in types or "number" in types:
        return "number"
    for other in ("boolean", "array", "object"):
        if other in types and "string" not in types:
            return other
    own = set(split_identifier(name)) | set(words(name))
    description = set(words(schema.get("description", ""))) if isinstance(schema, dict) else set()
    if own & {"pattern"} or own & _KIND_WORDS["glob"]:
        context = tool_words | description
        if own & _KIND_WORDS["glob"] or ("glob" in context and not {"regex", "regular"} & context):
            return "glob"
        return "regex"
    for kind in ("url", "command", "path", "query", "regex"):
        if own & _KIND_WORDS[kind]:
            return kind
    # Descriptions mention files and commands in passing ("the text to replace in the file"): only a declared
    # format says more than the name.
    if isinstance(schema, dict) and schema.get("format") in ("uri", "url", "iri"):
        return "url"
    return "text"


def fill_arguments(tool: IndexedTool, values: RequestValues, vocabulary: frozenset[str]) -> dict[str, Any]:
    """Arguments for ``tool`` from the values of a request, guided by the schema: each parameter takes the first
    unused value of its kind; optional parameters only when the request holds such a value; required
    parameters fall back to what is left, then to an example quoted in their description that shares a word
    with the request (never to an invented path or URL). ``vocabulary`` holds the words of
    the whole catalog (a regex fallback skips them: "find", "file", "search" are not what to search for)."""
    properties = tool.parameters.get("properties") or {}
    required = [n for n in tool.parameters.get("required") or [] if n in properties]
    order = required + [n for n in properties if n not in required]
    used: set[str] = set()
    used_numbers: set[int] = set()
    arguments: dict[str, Any] = {}

    def first_unused(candidates: list[str]) -> str | None:
        for candidate in candidates:
            if candidate not in used:
                used.add(candidate)
                return candidate
        return None

    for name in order:
        schema = properties[name] if isinstance(properties[name], dict) else {}
        kind = parameter_kind(name, schema, tool.document_words)
        is_required = name in required
        value: Any = None
        if "enum" in schema and isinstance(schema["enum"], list):
            value = _enum_choice(schema["enum"], values.text, is_required)
        elif kind == "url":
            value = first_unused(values.urls)
        elif kind == "glob":
            value = first_unused(values.globs) or (_glob_from_words(values.text) if is_required else None)
        elif kind == "path":
            value = first_unused([p for p in values.paths if p not in values.globs])
        elif kind == "command":
            value = first_unused(values.commands)
        elif kind == "regex":
            value = first_unused(values.quoted + values.identifiers)
            if value is None and is_required:
                value = _salient_word(values.text, vocabulary)
        elif kind == "query":
            value = first_unused(values.quoted) or (_query_text(values.text) if is_required else None)
        elif kind == "number":
            value = _number_for(name, schema, values, is_required, used_numbers)
        elif kind == "text" and is_required:
            value = first_unused(values.quoted) or values.text.strip()
        elif kind == "array" and is_required:
            value = _array_items(schema, values)
        elif kind == "object" and is_required:
            value = {}
        elif kind == "boolean" and is_required:
            value = False
        if value is None and is_required and kind not in ("number", "boolean", "array", "object"):
            value = _described_example(schema, values.text)
        if value is not None:
            arguments[name] = value
    return arguments


_EXAMPLE = re.compile(r"\"([^\"]+)\"|`([^`]+)`|'([^']+)'")


def _described_example(schema: dict[str, Any], text: str) -> str | None:
    """An example value quoted in the parameter's description (``e.g. "pytest -q tests/"``) that shares a
    word with the request, for a required parameter the request gives no value for."""
    asked = set(words(text))
    for match in _EXAMPLE.finditer(str(schema.get("description") or "")):
        example = next(g for g in match.groups() if g is not None)
        if asked & set(words(example.replace("/", " "))):
            return example
    return None


def _enum_choice(options: list[Any], text: str, is_required: bool) -> Any:
    lowered = text.lower()
    for option in options:
        if isinstance(option, str) and re.search(rf"\b{re.escape(option.lower())}\b", lowered):
            return option
    return options[0] if is_required and options else None


def _glob_from_words(text: str) -> str | None:
    for word in re.findall(r"[A-Za-z+#]+", text.lower()):
        if word in _LANGUAGE_EXTENSIONS:
            return f"**/*.{_LANGUAGE_EXTENSIONS[word]}"
    return None


def _salient_word(text: str, tool_words: frozenset[str]) -> str | None:
    """The first word of the request that is neither a stop word nor a word of the tool catalog."""
    for raw in re.findall(r"[A-Za-z_][\w\-]*", text):
        if raw.lower() not in _STOPWORDS and _stem(raw.lower()) not in tool_words and len(raw) > 2:
            return raw
    return None


def _query_text(text: str) -> str:
    first_sentence = re.split(r"(?<=[.!?])\s|\n", text.strip())[0]
    return _QUERY_LEAD.sub("", first_sentence).strip().rstrip("?.!").strip() or text.strip()


def _number_for(
    name: str, schema: dict[str, Any], values: RequestValues, is_required: bool, used: set[int]
) -> int | float | None:
    """The number whose neighbourhood (30 characters each side) holds a word of the parameter's name or
    description, or a hint word for it ("first 40 lines" → ``limit``); a required one takes the first left."""
    hints = set(words(name)) | set(words(schema.get("description", "")))
    for part in split_identifier(name):
        hints |= _NUMBER_HINTS.get(part, set())
    free = [
        (position, number, offset) for position, (number, offset) in enumerate(values.numbers) if position not in used
    ]
    for position, number, offset in free:
        if hints & set(words(values.text[max(0, offset - 30) : offset + 30])):
            used.add(position)
            return number
    if is_required and free:
        used.add(free[0][0])
        return free[0][1]
    return None


def _array_items(schema: dict[str, Any], values: RequestValues) -> list[Any]:
    items = values.quoted or [part.strip() for part in re.split(r",|\band\b|\n", values.text) if words(part)]
    declared = schema.get("items")
    item_schema: dict[str, Any] = declared if isinstance(declared, dict) else {}
    if item_schema.get("type") == "object":
        key = next(
            (
                k
                for k, s in (item_schema.get("properties") or {}).items()
                if isinstance(s, dict) and s.get("type") == "string"
            ),
            "content",
        )
        return [{key: item} for item in items]
    return items


# --- bm25-router -------------------------------------------------------------------------------------------------

_ENTITY_WORDS = {
    "urls": words("url link web page"),
    "paths": words("file path"),
    "globs": words("glob pattern"),
    "explicit_commands": words("command shell run"),
    "identifiers": words("symbol code identifier"),
}


@dataclass(frozen=True)
class Ranking:
    """The router's scores for one query: ``(adjusted score, tool index)`` best first, and the denials applied."""

    scored: list[tuple[float, int]]
    denied: dict[str, list[str]]

    @property
    def best(self) -> tuple[float, int] | None:
        return self.scored[0] if self.scored else None


def query_words(values: RequestValues) -> list[str]:
    """The BM25 query: the request's words outside its values, plus the kind words of the values it holds
    (a path adds "file" and "path", a URL "url", "link", "web" and "page", a glob "glob" and "pattern", a code
    identifier "symbol", "code" and "identifier", a shell command "command", "shell" and "run")."""
    query = words(values.masked)
    for kind, extra in _ENTITY_WORDS.items():
        if getattr(values, kind) and (kind != "identifiers" or any(not i.isupper() for i in values.identifiers)):
            query += extra
    return list(dict.fromkeys(query))


def rank_tools(index: CatalogIndex, text: str) -> Ranking:
    """Rank the catalog's tools for ``text`` by BM25, each tool that denies a requested capability scored down."""
    values = extract_request(text)
    query = query_words(values)
    scores = index.bm25.get_scores(query) if query else [0.0] * len(index.tools)
    asked = set(query)
    scored, denied = [], {}
    for position, tool in enumerate(index.tools):
        score = float(scores[position])
        hits = sorted(asked & tool.denied)
        if hits:
            score *= NEGATION_FACTOR
            denied[tool.name] = hits
        scored.append((score, position))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return Ranking(scored, denied)


def _route(index: CatalogIndex, text: str) -> IndexedTool | None:
    best = rank_tools(index, text).best
    if best is None or best[0] < ABSTAIN_BELOW:
        return None
    return index.tools[best[1]]


def _plan(index: CatalogIndex, turn: Turn) -> list[tuple[IndexedTool, str]]:
    """The tools the request asks for, one per step, with the text each step's arguments come from."""
    request = turn.request if not turn.context else f"{turn.context}\n{turn.request}"
    steps = request_steps(request)
    plan = []
    if len(steps) > 1:
        for step in steps:
            tool = _route(index, step)
            if tool is not None:
                plan.append((tool, step))
    if not plan:
        tool = _route(index, request)
        if tool is not None:
            plan.append((tool, request))
    return plan


def _call_message(name: str, arguments: dict[str, Any], step: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{step}_0",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
            }
        ],
    }


def _text_message(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def _summary(turn: Turn) -> str:
    result = turn.tool_results[-1].strip()
    last = result.splitlines()[0][:200] if result else "(empty)"
    return f"Done: called {', '.join(turn.calls_made) or 'a tool'}. Last result: {last}"


def bm25_router(messages: list[dict[str, Any]], tools: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
    """The ``local/bm25-router`` baseline: one call for the next step of the request, or a text answer."""
    if not tools:
        return _text_message(ABSTAIN_TEXT)
    index = catalog_index(tools)
    turn = read_turn(messages)
    plan = _plan(index, turn)
    done = len(turn.calls_made)
    if done >= len(plan):
        return _text_message(_summary(turn) if turn.after_tool_result else ABSTAIN_TEXT)
    tool, step_text = plan[done]
    # A later step may take its values from the last tool result too (a path found by a search, say).
    values = extract_request("\n".join([step_text, *turn.tool_results[-1:]]))
    arguments = fill_arguments(tool, values, index.vocabulary)
    return _call_message(tool.name, arguments, done)


# --- name-match ---------------------------------------------------------------------------------------------------

_PLAIN_WORD = re.compile(r"[a-z0-9]+")
_NAME_MATCH_MIN_OVERLAP = 2


def _plain_words(text: str) -> list[str]:
    return [w for w in _PLAIN_WORD.findall(text.lower()) if w not in _STOPWORDS]


def name_match(messages: list[dict[str, Any]], tools: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
    """The ``local/name-match`` baseline: the tool named in the request, else the description sharing the most
    words (at least two), else no call; required string parameters get the request's values crudely."""
    turn = read_turn(messages)
    if turn.after_tool_result or not tools:
        return _text_message(_summary(turn) if turn.after_tool_result else ABSTAIN_TEXT)
    request = turn.request
    lowered = request.lower()
    request_words = set(_plain_words(request))
    best: tuple[float, int] | None = None
    for position, tool in enumerate(tools):
        name = str(_function(tool).get("name") or "")
        parts = split_identifier(name)
        if re.search(rf"(?<![\w]){re.escape(name.lower())}(?![\w])", lowered):
            score = 3.0
        elif parts and all(p in request_words for p in parts):
            score = 2.0
        else:
            score = sum(p in request_words for p in parts) / max(1, len(parts)) if len(parts) > 1 else 0.0
        if score > 0 and (best is None or score > best[0]):
            best = (score, position)
    if best is None:
        for position, tool in enumerate(tools):
            overlap = len(request_words & set(_plain_words(str(_function(tool).get("description") or ""))))
            if overlap >= _NAME_MATCH_MIN_OVERLAP and (best is None or overlap > best[0]):
                best = (float(overlap), position)
    if best is None:
        return _text_message(ABSTAIN_TEXT)
    function = _function(tools[best[1]])
    parameters = function.get("parameters") or {}
    properties = parameters.get("properties") or {}
    values = extract_request(request)
    pool = values.quoted + values.urls + values.paths
    arguments: dict[str, Any] = {}
    for name in parameters.get("required") or []:
        schema = properties.get(name) or {}
        if schema.get("type", "string") == "string":
            arguments[name] = pool.pop(0) if pool else request.strip()
    return _call_message(str(function.get("name")), arguments, 0)


MODELS: dict[str, LocalModel] = {
    "bm25-router": bm25_router,
    "name-match": name_match,
}
