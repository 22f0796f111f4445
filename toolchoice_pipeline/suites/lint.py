"""The catalog lint: what in a tool catalog will make a reader (a model) pick the wrong tool, found before anything
runs. Warnings, never errors: a catalog with warnings still runs.

Kinds of warning (:data:`WarningKind`), each naming the file, the line and the tool:

- ``similar_descriptions``: two tools whose descriptions and parameters read alike (TF-IDF cosine at least
  :data:`DESCRIPTION_SIMILARITY`, :mod:`.lint_similarity`); at most :data:`MAX_PARTNERS` partners per tool;
- ``similar_names``: two names that differ only in case, separators, word order or plural, or by a typo-level
  edit (:func:`.lint_similarity.name_similarity` at least :data:`NAME_SIMILARITY`);
- ``empty_description``; ``short_description`` (fewer than :data:`MIN_DESCRIPTION_WORDS` content words);
- ``description_names_tool``: the description names another tool of the catalog (it then reads differently,
  or dangles, in a catalog without that tool, and it lends that tool's name to this one for a lexical reader);
- ``undescribed_parameter``: a parameter (nested properties too) without a description;
- ``opaque_enum``: enum values that say nothing by themselves (numbers, one or two characters, no letter) and
  that the parameter's description does not explain (``"C = Celsius"``, ``'c'``, ``Celsius (C)``), unless the
  schema labels each value (``enumDescriptions``, ``x-enumNames``...).

The suite's catalog is linted as one catalog; inline per-task catalogs (BFCL-style suites) are linted once per
distinct catalog, and a warning found in several is reported once, at its first task's line, with ``also``
counting the other tasks. IDF weights come from every distinct tool of the suite.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.lint_similarity import (
    DescriptionSpace,
    content_words,
    similar_name_pairs,
    stemmed_words,
)
from toolchoice_pipeline.suites.model import Suite
from toolchoice_pipeline.util.errors import display_path, field_path
from toolchoice_pipeline.util.json_text import load_json
from toolchoice_pipeline.util.text_files import read_utf8
from toolchoice_pipeline.util.yaml_lines import Lines, line_of, load_yaml, node_lines

WarningKind = Literal[
    "similar_descriptions",
    "similar_names",
    "empty_description",
    "short_description",
    "description_names_tool",
    "undescribed_parameter",
    "opaque_enum",
]
#: Parameter schemas are walked this deep (a guard against pathological nesting).
MAX_SCHEMA_DEPTH = 8
WARNING_KINDS: tuple[WarningKind, ...] = WarningKind.__args__  # type: ignore[attr-defined]
PAIR_KINDS = ("similar_descriptions", "similar_names")

#: TF-IDF cosine of two descriptions from which they are said to read alike, set on the demo catalog's own pairs
#: (docs/lint.md, with how it was chosen): only Edit/Write (0.39: each description says when to use the other)
#: crosses it, the next pairs (Grep/Glob, Read/Bash) are at 0.30 and 0.29.
DESCRIPTION_SIMILARITY = 0.35
#: Name similarity from which two names are said to be too alike: a typo-level edit such as ``list_files`` /
#: ``list_tiles`` (one edit in nine letters, 0.89) and beyond; ``Edit``/``Exit`` (0.75), ``WebSearch``/``WebFetch``
#: (0.67) and ``get_weather``/``get_weather_forecast`` (0.56) pass. Same stemmed word parts score 1.0.
NAME_SIMILARITY = 0.8
#: A description with fewer content words (stop words, numbers and single letters left out) is too short to say
#: what the tool is for and what it is not: "A utility." has one, "Read a file." two.
MIN_DESCRIPTION_WORDS = 3
#: Similar partners (by description, by name) reported per tool, the most similar first: a catalog of
#: near-identical tools (``tool_00001``, ``tool_00002``...) would otherwise list every pair.
MAX_PARTNERS = 3


class LintWarning(BaseModel):
    """One warning: ``file`` and 1-based ``line`` (None when unknown), the ``tool`` and the ``field`` it is about
    (a field path in the file: ``[3].description``, ``tools[0].parameters.properties.unit``), a ``message``; for
    a pair, ``other_tool`` and ``similarity`` (in [0, 1]); ``also``: how many other tasks' inline catalogs have
    the same warning (0 for the suite's catalog)."""

    model_config = ConfigDict(frozen=True)

    kind: WarningKind
    file: str
    line: int | None
    tool: str
    field: str
    message: str
    other_tool: str | None = None
    similarity: float | None = None
    also: int = 0

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        more = f" (and {self.also} other task{'s' if self.also != 1 else ''})" if self.also else ""
        return f"{where}: {self.tool}: {self.message}{more} [{self.kind}]"


class LintReport(BaseModel):
    """The lint of a suite: its ``warnings`` (in file and line order), their ``counts`` by kind, the number of
    distinct ``catalogs`` linted (the suite's and the distinct inline ones) and of distinct ``tools``,
    ``similar_pairs_over_threshold`` (before the per-tool cap of :data:`MAX_PARTNERS`) and the ``thresholds``
    used."""

    suite: str
    catalogs: int
    tools: int
    warnings: list[LintWarning]
    counts: dict[str, int]
    similar_pairs_over_threshold: int
    thresholds: dict[str, float]


@dataclass(frozen=True)
class ToolSource:
    """Where a tool is written: ``file``, the tool's field ``path`` in it (``(3,)`` in a catalog file,
    ``("tools", 0)`` in a task line) and either the file's ``lines`` (line of each node by path) or a fixed
    ``line`` (a task's line in ``tasks.jsonl``)."""

    file: str
    path: tuple
    lines: Lines | None = None
    line: int | None = None

    def line_of(self, *sub: Any) -> int | None:
        if self.lines is None:
            return self.line
        return line_of(self.lines, (*self.path, *sub)) or self.line

    def field(self, *sub: Any) -> str:
        return field_path((*self.path, *sub))


def lint_catalog(
    tools: Sequence[ToolDefinition],
    sources: Sequence[ToolSource] | None = None,
    *,
    file: str = "<catalog>",
    space: DescriptionSpace | None = None,
) -> list[LintWarning]:
    """Every warning of one catalog, in line order. ``sources`` gives each tool's place (default: index ``i`` in
    ``file``, line unknown); ``space`` the IDF weights (default: from this catalog alone)."""
    return [warning for _, warning in _lint(tools, sources, file, space)[0]]


def _lint(
    tools: Sequence[ToolDefinition],
    sources: Sequence[ToolSource] | None,
    file: str,
    space: DescriptionSpace | None,
) -> tuple[list[tuple[tuple, LintWarning]], int]:
    """Warnings with a key saying which tool definitions (by hash) and which part they are about, for dedupe;
    and how many pairs had similar descriptions before the per-tool cap."""
    places = list(sources) if sources is not None else [ToolSource(file=file, path=(i,)) for i in range(len(tools))]
    words = [stemmed_words(tool.description) for tool in tools]
    space = space or DescriptionSpace(words)
    hashes = [tool.definition_hash for tool in tools]
    found: list[tuple[tuple, LintWarning]] = []
    names = {tool.name for tool in tools}
    for index, tool in enumerate(tools):
        place = places[index]
        for kind, sub, message, other in _tool_warnings(tool, names):
            warning = LintWarning(
                kind=kind,
                file=place.file,
                line=place.line_of(*sub),
                tool=tool.name,
                field=place.field(*sub),
                message=message,
                other_tool=other,
            )
            found.append(((kind, hashes[index], sub, message), warning))
    similar, over = _similar_descriptions(tools, places, words, space)
    for i, j, similarity, message in similar:
        found.append(
            (
                ("similar_descriptions", *sorted((hashes[i], hashes[j]))),
                _pair(tools, places, i, j, "similar_descriptions", similarity, message),
            )
        )
    for i, j, similarity in _capped(similar_name_pairs([tool.name for tool in tools], NAME_SIMILARITY)):
        message = (
            f"name reads like '{tools[j].name}'{_at(places[j])} (similarity {similarity:.2f} ≥ {NAME_SIMILARITY}): "
            "a model may call one for the other or type one name for the other"
        )
        found.append(
            (
                ("similar_names", *sorted((hashes[i], hashes[j]))),
                _pair(tools, places, i, j, "similar_names", similarity, message),
            )
        )
    found.sort(key=lambda item: (item[1].file, item[1].line or 0, item[1].tool, item[1].kind))
    return found, over


def _capped(pairs: list[tuple[int, int, float]]) -> list[tuple[int, int, float]]:
    """``pairs`` (``i < j``) each tool keeps its :data:`MAX_PARTNERS` most similar partners of."""
    partners: dict[int, list[tuple[float, int]]] = {}
    for i, j, similarity in pairs:
        partners.setdefault(i, []).append((similarity, j))
        partners.setdefault(j, []).append((similarity, i))
    kept = {
        (min(i, j), max(i, j)) for i, found in partners.items() for _, j in sorted(found, reverse=True)[:MAX_PARTNERS]
    }
    return [pair for pair in pairs if pair[:2] in kept]


def _pair(tools, places, i: int, j: int, kind: WarningKind, similarity: float, message: str) -> LintWarning:
    place = places[i]
    return LintWarning(
        kind=kind,
        file=place.file,
        line=place.line_of(),
        tool=tools[i].name,
        field=place.field("name") if kind == "similar_names" else place.field("description"),
        message=message,
        other_tool=tools[j].name,
        similarity=round(similarity, 4),
    )


def _at(place: ToolSource) -> str:
    line = place.line_of()
    return f" (line {line})" if line is not None and place.lines is not None else ""


# --- one tool --------------------------------------------------------------------------------------------------

_MENTION = re.compile(r"[^\s,;:()\[\]{}<>\"'`“”‘’]+")


def _tool_warnings(tool: ToolDefinition, names: set[str]) -> list[tuple[WarningKind, tuple, str, str | None]]:
    """``(kind, field path inside the tool, message, other tool named)`` of one tool's own warnings."""
    out: list[tuple[WarningKind, tuple, str, str | None]] = []
    description = tool.description.strip()
    if not description:
        out.append(
            (
                "empty_description",
                ("description",),
                "description is empty: say what the tool does and when to use it",
                None,
            )
        )
    else:
        count = len(content_words(description))
        if count < MIN_DESCRIPTION_WORDS:
            out.append(
                (
                    "short_description",
                    ("description",),
                    f"description is too short ({count} content word{'s' if count != 1 else ''}, "
                    f"fewer than {MIN_DESCRIPTION_WORDS}): say what the tool does, on what, and what it cannot do",
                    None,
                )
            )
        mentioned = sorted({token.rstrip(".-/") for token in _MENTION.findall(description)} & (names - {tool.name}))
        for other in mentioned:
            out.append(
                (
                    "description_names_tool",
                    ("description",),
                    f"description names another tool of the catalog, '{other}': it reads differently in a "
                    "catalog without that tool, and lends that tool's name to this one",
                    other,
                )
            )
    for sub, label, schema, context in _parameters(tool.parameters):
        described = _description(schema, tool.parameters)
        if not described:
            out.append(
                (
                    "undescribed_parameter",
                    sub,
                    f"parameter '{label}' has no description: say what value it takes and what it changes",
                    None,
                )
            )
        problem = _enum_problem(schema, described or context)
        if problem:
            out.append(("opaque_enum", sub, f"parameter '{label}': {problem}", None))
    return out


def _parameters(schema: Any, sub: tuple = ("parameters",), label: str = "", depth: int = 0, context: str = ""):
    """``(field path, display name, schema, nearest description above)`` of every parameter and nested property
    (array items shown as ``name[]``)."""
    if depth > MAX_SCHEMA_DEPTH or not isinstance(schema, dict):
        return
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, child in properties.items():
            if not isinstance(child, dict):
                continue
            path = (*sub, "properties", name)
            shown = f"{label}.{name}" if label else str(name)
            yield path, shown, child, context
            described = child.get("description") if isinstance(child.get("description"), str) else ""
            yield from _parameters(child, path, shown, depth + 1, described or context)
    items = schema.get("items")
    if isinstance(items, dict):
        if "enum" in items and label:
            yield (*sub, "items"), f"{label}[]", items, context if not items.get("description") else ""
        yield from _parameters(items, (*sub, "items"), f"{label}[]", depth + 1, context)


def _description(schema: dict, root: dict) -> str:
    """A parameter's description; for a ``$ref`` without one, the description of the local definition."""
    text = schema.get("description")
    if isinstance(text, str) and text.strip():
        return text
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        if isinstance(target, dict) and isinstance(target.get("description"), str):
            return target["description"].strip()
    return ""


_ENUM_LABELS = ("enumDescriptions", "x-enumDescriptions", "x-enum-descriptions", "enumNames", "x-enumNames")


def _enum_problem(schema: dict, description: str) -> str | None:
    values = schema.get("enum")
    if not isinstance(values, list) or not values:
        return None
    if any(isinstance(schema.get(key), list) and len(schema[key]) == len(values) for key in _ENUM_LABELS):
        return None
    unexplained = [value for value in values if _opaque(value) and not _explained(value, description)]
    if not unexplained:
        return None
    shown = ", ".join(json.dumps(value, ensure_ascii=False) for value in unexplained[:6])
    more = f" and {len(unexplained) - 6} more" if len(unexplained) > 6 else ""
    return (
        f"enum value{'s' if len(unexplained) > 1 else ''} {shown}{more} say nothing by themselves and the "
        'description does not explain them: use words, or say what each means ("C = Celsius")'
    )


def _opaque(value: Any) -> bool:
    """A value that means nothing without an explanation: a number, or a string of at most two characters or
    without a letter."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, (int, float)):
        return True
    if isinstance(value, str):
        text = value.strip()
        return len(text) <= 2 or not any(char.isalpha() for char in text)
    return False


def _explained(value: Any, description: str) -> bool:
    """True when ``description`` explains ``value``: quoted, followed by ``=``/``:``/``-``/``(``/"means"/"for",
    or in parentheses after a word (``Celsius (C)``)."""
    if not description:
        return False
    token = re.escape(str(value).strip() if isinstance(value, str) else json.dumps(value))
    if not token:
        return False
    bare = rf"(?<![\w]){token}(?![\w])"
    patterns = (
        rf"[\"'`“‘]{token}[\"'`”’]",
        rf"{bare}\s*(?:=|:|->|→|-|–|—|\(|\bmeans?\b|\bfor\b|\bstands for\b|\bis\b)",
        rf"\(\s*{token}\s*\)",
    )
    return any(re.search(pattern, description) for pattern in patterns)


# --- pairs ---------------------------------------------------------------------------------------------------


def _similar_descriptions(
    tools: Sequence[ToolDefinition], places: Sequence[ToolSource], words: list[list[str]], space: DescriptionSpace
) -> tuple[list[tuple[int, int, float, str]], int]:
    """``(i, j, similarity, message)`` with ``i < j`` of each pair over :data:`DESCRIPTION_SIMILARITY`, each tool
    keeping its :data:`MAX_PARTNERS` most similar partners; and how many pairs were over it before that cap."""
    best: dict[tuple[int, int], float] = {}
    over = 0
    for start, stop, block in space.similarities(words):
        rows = np.arange(stop - start)
        block[rows, rows + start] = -1.0  # a tool and itself
        mask = block >= DESCRIPTION_SIMILARITY
        over += int(mask.sum())
        keep = min(MAX_PARTNERS, block.shape[1] - 1)
        if keep < 1:
            continue
        top = np.argpartition(block, -keep, axis=1)[:, -keep:]
        for row in np.nonzero(mask.any(axis=1))[0]:
            for column in top[row]:
                similarity = float(block[row, column])
                if similarity >= DESCRIPTION_SIMILARITY:
                    i, j = sorted((start + int(row), int(column)))
                    best[(i, j)] = similarity
    out = []
    vectors: dict[int, dict[str, float]] = {}

    def vector(index: int) -> dict[str, float]:
        if index not in vectors:
            vectors[index] = space.weights(words[index])
        return vectors[index]

    for (i, j), similarity in sorted(best.items()):
        shared = _shared_words(vector(i), vector(j))
        out.append(
            (
                i,
                j,
                similarity,
                f"description reads like that of '{tools[j].name}'{_at(places[j])} (TF-IDF cosine {similarity:.2f} ≥ "
                f"{DESCRIPTION_SIMILARITY}; shared words: {', '.join(shared)}): say what each does that the "
                "other does not",
            )
        )
    return out, over // 2


def _shared_words(a: dict[str, float], b: dict[str, float], limit: int = 5) -> list[str]:
    """The words two weighted descriptions share, the heaviest (by product of weights) first."""
    return [
        word for word, _ in sorted(((w, a[w] * b[w]) for w in a.keys() & b.keys()), key=lambda x: (-x[1], x[0]))[:limit]
    ]


# --- a suite -------------------------------------------------------------------------------------------------


def lint_suite(suite: Suite) -> LintReport:
    """The lint of a loaded suite: its catalog (curated and live tools, each named by its own file and line)
    and each distinct inline catalog (named by the first task's line in ``tasks.jsonl``)."""
    all_tools = suite.all_tools()
    space = DescriptionSpace([stemmed_words(tool.description) for tool in all_tools])
    keyed: list[tuple[tuple, LintWarning, int]] = []  # (dedupe key, warning, tasks it stands for)
    catalogs = 0
    pairs = 0
    catalog = suite.catalog
    if catalog:
        catalogs += 1
        found, over = _lint(catalog, _catalog_sources(suite), "", space)
        keyed.extend((key, warning, 1) for key, warning in found)
        pairs += over
    tasks_file = display_path(suite.tasks_file)
    groups: dict[tuple[str, ...], list] = {}
    for task in suite.tasks:
        if task.tools:
            groups.setdefault(tuple(tool.definition_hash for tool in task.tools), []).append(task)
    for tasks in groups.values():
        catalogs += 1
        first = tasks[0]
        line = suite.task_lines.get(first.id)
        sources = [ToolSource(file=tasks_file, path=("tools", i), line=line) for i in range(len(first.tools))]
        found, over = _lint(first.tools, sources, tasks_file, space)
        keyed.extend((key, warning, len(tasks)) for key, warning in found)
        pairs += over
    seen: dict[tuple, int] = {}
    merged: list[LintWarning] = []
    occurrences: Counter[tuple] = Counter()
    for key, warning, weight in keyed:
        occurrences[key] += weight
        if key not in seen:
            seen[key] = len(merged)
            merged.append(warning)
    warnings = [
        warning.model_copy(update={"also": occurrences[key] - 1}) if occurrences[key] > 1 else warning
        for key, warning in ((k, merged[i]) for k, i in seen.items())
    ]
    warnings.sort(key=lambda w: (w.file, w.line or 0, w.tool, w.kind))
    counts = Counter(warning.kind for warning in warnings)
    return LintReport(
        suite=suite.name,
        catalogs=catalogs,
        tools=len(all_tools),
        warnings=warnings,
        counts={kind: counts[kind] for kind in WARNING_KINDS if counts[kind]},
        similar_pairs_over_threshold=pairs,
        thresholds={
            "description_similarity": DESCRIPTION_SIMILARITY,
            "name_similarity": NAME_SIMILARITY,
            "min_description_words": MIN_DESCRIPTION_WORDS,
            "max_partners": MAX_PARTNERS,
        },
    )


def _catalog_sources(suite: Suite) -> list[ToolSource]:
    """Each merged-catalog tool's file, path and lines: curated tools in the catalog file, live ones in their
    dump (the first dump with that name, as :func:`~.catalog.merge_live` keeps it)."""
    catalog_file = suite.directory / suite.spec.catalog
    _, lines = load_yaml(catalog_file)
    shown = display_path(catalog_file)
    sources = [ToolSource(file=shown, path=(i,), lines=lines) for i in range(len(suite.curated))]
    where: dict[str, ToolSource] = {}
    for dump in suite.spec.live_catalogs:
        path = suite.directory / dump
        text = read_utf8(path)  # as the suite's loading read it: the same checks, so no new failure here
        dump_lines = node_lines(text) or {}
        for name, field in _dump_paths(load_json(text, display_path(path))):
            where.setdefault(name, ToolSource(file=display_path(path), path=field, lines=dump_lines))
    for tool in suite.catalog[len(suite.curated) :]:
        sources.append(where.get(tool.name) or ToolSource(file="<live catalog>", path=()))
    return sources


def _dump_paths(data: Any) -> list[tuple[str, tuple]]:
    """``(name, field path)`` of each tool in a live dump, for the shapes :func:`~.catalog_files.parse_tool_dump`
    reads."""
    root: tuple = ()
    if isinstance(data, dict) and isinstance(data.get("result"), dict) and "tools" in data["result"]:
        data, root = data["result"], ("result",)
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        data, root = data["tools"], (*root, "tools")
    out = []
    for index, item in enumerate(data if isinstance(data, list) else []):
        at: tuple = (*root, index)
        if isinstance(item, dict) and item.get("type") == "function" and isinstance(item.get("function"), dict):
            item, at = item["function"], (*at, "function")
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            out.append((item["name"], at))
    return out
