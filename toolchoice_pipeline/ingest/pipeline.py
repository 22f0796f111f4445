"""One ingest: session files → sanitised, labelled tasks with replayed first steps → a suite (``docs/ingest.md``).

Nothing is read but the files named. Every turn with a recorded reply becomes a task ``<session>-t<n>``
(``<session>-<agent>-t<n>`` for a subagent; ``<session>`` is the first 8 characters of the session id):
its ``messages`` are the conversation so far, its ``expected`` comes from the labels file (null when
unlabelled: judged, but in no share), its ``tool_results`` are the recorded results of the first step's
calls; the first step itself is the task's line in the suite's replay file.

Catalogs. Session files do not record the tools on offer, so Claude Code and Codex sessions are ingested
against a curated catalog (``catalog``, default the demo suite's ``<data-dir>/suites/coding_agent/
catalog.yaml``, the coding agents' tools) merged with live dumps (curated wins a name collision); a tool the
sessions called that is in neither gets a minimal definition (empty description, the argument names seen, any
value allowed), unless every call to it was refused as an unknown tool. An OpenTelemetry span that lists its
tool definitions keeps them inline with its task; the suite catalog is then the union of the traces' catalogs
(with the given one). A trace's model call that records no definitions (or whose definitions were cut by an
attribute length limit) has no knowable catalog: the ingest is refused unless one is given (``catalog``, a
live dump) or explicitly chosen (``catalog_from="curated"``: the demo suite's catalog). Every task is tagged
with where its catalog came from (:data:`CATALOG_SOURCES`: ``catalog:trace``, ``catalog:file``,
``catalog:live-dump``, ``catalog:curated``), and ``ingest.json`` counts them. Two traces defining one tool
name differently keep their own definitions inline (each task is graded against its own catalog); the suite
catalog keeps the first and ``ingest.json`` lists the name under ``catalog.conflicts`` (a warning too). The
catalog written with the suite is a snapshot: a later change of the curated catalog does not change an
ingested suite.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolchoice_pipeline.ingest.claude_code import SeenRecords, read_claude_code
from toolchoice_pipeline.ingest.codex import read_codex
from toolchoice_pipeline.ingest.conversation import DEFAULT_MAX_CONTEXT_CHARS
from toolchoice_pipeline.ingest.hallucinated import HallucinationCounts, flag_task
from toolchoice_pipeline.ingest.jsonl import Warnings, check_readable
from toolchoice_pipeline.ingest.labels import load_labels
from toolchoice_pipeline.ingest.model import RecordedTurn
from toolchoice_pipeline.ingest.otel import read_otel
from toolchoice_pipeline.ingest.turns import ToolLedger
from toolchoice_pipeline.ingest.writer import SuiteWriter
from toolchoice_pipeline.suites.catalog import ToolDefinition, catalog_version, merge_live
from toolchoice_pipeline.suites.catalog_files import load_catalog_file, load_tool_dump
from toolchoice_pipeline.suites.tasks import Expected, Task
from toolchoice_pipeline.suites.validate import task_problems
from toolchoice_pipeline.util.errors import InputError, Problem, display_path
from toolchoice_pipeline.util.sanitise import DEFAULT_MAX_TOOL_RESULT_BYTES, Sanitiser

SOURCES = ("claude-code", "codex", "otel")
CATALOG_SOURCES = ("trace", "file", "live-dump", "curated")
CATALOG_FROM = ("curated",)
DEMO_SUITE = "coding_agent"
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class IngestOptions:
    """Options of one ingest. Sizes: ``max_tool_result_bytes`` in UTF-8 bytes, ``max_context_chars`` in characters."""

    suite: str
    data_dir: Path = Path("data")
    catalog: Path | None = None
    catalog_dumps: Sequence[Path] = ()
    catalog_from: str | None = None  # "curated": grade traces without definitions against the demo catalog
    labels: Path | None = None
    max_tool_result_bytes: int = DEFAULT_MAX_TOOL_RESULT_BYTES
    max_context_chars: int = DEFAULT_MAX_CONTEXT_CHARS
    force: bool = False


@dataclass
class SessionSummary:
    session_id: str
    agent_id: str | None
    file: str
    turns: int = 0
    tasks: int = 0
    catalog_sources: Counter = field(default_factory=Counter)


@dataclass
class IngestReport:
    """What an ingest wrote. ``redactions`` counts replacements by kind; ``warnings`` holds skipped lines etc."""

    source: str
    suite: str
    suite_dir: Path
    sessions: list[SessionSummary]
    tasks: int
    labelled: int
    catalog_version: str
    catalog_size: int
    added_tools: list[str]
    redactions: Counter
    warnings: Warnings
    hallucinated: HallucinationCounts = field(default_factory=HallucinationCounts)

    @property
    def turns(self) -> int:
        return sum(s.turns for s in self.sessions)


def default_catalog_path(data_dir: Path) -> Path:
    return data_dir / "suites" / DEMO_SUITE / "catalog.yaml"


def load_curated_catalog(options: IngestOptions) -> tuple[list[ToolDefinition], list[str]]:
    """The curated catalog merged with the live dumps (curated wins), and the sources' names for the manifest.

    Raises :class:`InputError` when a file is missing or malformed, or when no ``catalog`` is given and the
    demo suite's catalog is missing.
    """
    path = options.catalog or default_catalog_path(options.data_dir)
    if options.catalog is None and not path.is_file():
        raise InputError(
            Problem(
                file=display_path(path),
                field="--catalog",
                message="session files do not record the tools on offer: give the catalog to "
                "ingest against with --catalog FILE (the default, the demo suite's "
                "catalog, is missing)",
            )
        )
    curated = load_catalog_file(path)
    live: list[ToolDefinition] = []
    for dump in options.catalog_dumps:
        live.extend(load_tool_dump(dump))
    return merge_live(curated, live), [display_path(path), *(display_path(d) for d in options.catalog_dumps)]


class _ShortIds:
    """First 8 characters of an id, or the whole id when another id already has that prefix."""

    def __init__(self) -> None:
        self._owner: dict[str, str] = {}

    def __call__(self, full: str) -> str:
        short = full[:8] or "session"
        owner = self._owner.setdefault(short, full)
        return short if owner == full else full


ReaderFactory = Callable[..., Iterator[RecordedTurn]]


def _reader(source: str, seen: SeenRecords) -> ReaderFactory:
    if source == "claude-code":
        return lambda path, index, **common: read_claude_code(path, file_index=index, seen=seen, **common)
    return lambda path, index, **common: read_codex(path, **common)


def _turns(
    source: str, files: Sequence[Path], shown_files: list[str], common: dict[str, Any]
) -> Iterator[tuple[int, str, RecordedTurn]]:
    """``(file index, shown file, turn)`` of every file; OpenTelemetry files are read together (a call's
    content can sit in another file's log records)."""
    if source == "otel":
        index_of = {shown: index for index, shown in enumerate(shown_files)}
        for turn in read_otel(list(zip(files, shown_files)), **common):
            yield index_of.get(turn.file, 0), turn.file, turn
        return
    read = _reader(source, SeenRecords())
    for index, (path, shown) in enumerate(zip(files, shown_files)):
        for turn in read(path, index, shown=shown, **common):
            yield index, shown, turn


def _catalog_source(source: str, options: IngestOptions) -> str:
    """Where the catalog of a turn without recorded definitions comes from (one of :data:`CATALOG_SOURCES`)."""
    if options.catalog is not None:
        return "file"
    if source == "otel" and options.catalog_dumps and options.catalog_from is None:
        return "live-dump"
    return "curated"


def ingest_sessions(source: str, files: Sequence[Path], options: IngestOptions) -> IngestReport:
    """Ingest ``files`` of one ``source`` (``claude-code``, ``codex``, ``otel``) into ``options.suite``.

    Raises :class:`InputError` (nothing is written) for a missing or non-JSONL file, a bad labels or catalog
    file, a label naming no ingested turn, an existing suite without ``force``, or no turn with a reply.
    """
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}")
    if not files:
        raise InputError(Problem(file="<command line>", field="FILE", message="name at least one session file"))
    sanitiser = Sanitiser(max_tool_result_bytes=options.max_tool_result_bytes)
    for path in files:  # ~/.claude/projects/-home-<user>-<project>/...: shown relative, it may lack the /home/
        sanitiser.learn_path(str(path.absolute()))
    shown_files = [sanitiser.text(display_path(path)) for path in files]
    missing = [problem for path, shown in zip(files, shown_files) if (problem := check_readable(path, shown))]
    if missing:
        raise InputError(missing)
    # a label without session names a turn of the only session (otel: traces and logs files of one run)
    sessionless_ok = len(files) == 1 or source == "otel"
    labels = load_labels(options.labels, session_optional=sessionless_ok) if options.labels else None
    if options.catalog_from is not None and options.catalog_from not in CATALOG_FROM:
        raise InputError(
            Problem(
                file="<command line>",
                field="--catalog-from",
                message=f"'{options.catalog_from}' is not one of {', '.join(CATALOG_FROM)}",
            )
        )
    curated: list[ToolDefinition] | None = None
    catalog_sources: list[str] = []
    given = options.catalog is not None or bool(options.catalog_dumps) or options.catalog_from is not None
    if source != "otel" or given:
        curated, catalog_sources = _given_catalog(source, options)
    gap_source = _catalog_source(source, options)

    warnings = Warnings()
    ledger = ToolLedger()
    short_ids = _ShortIds()
    sessions: dict[tuple[str, str | None, int], SessionSummary] = {}
    task_ids: set[str] = set()
    labelled: list[tuple[Task, int]] = []
    trace_tools: dict[str, ToolDefinition] = {}
    conflicts: dict[str, list[str]] = {}
    by_source: Counter = Counter()
    gaps: list[tuple[RecordedTurn, str]] = []
    hallucinated = HallucinationCounts()
    deferred_called: set[str] = set()  # tool names in first steps (and their results) graded by the suite catalog
    common: dict[str, Any] = dict(
        sanitiser=sanitiser, ledger=ledger, warnings=warnings, max_context_chars=options.max_context_chars
    )

    with SuiteWriter(options.data_dir, options.suite, force=options.force) as writer:
        for index, shown, turn in _turns(source, files, shown_files, common):
            summary = sessions.setdefault(
                (turn.session_id, turn.agent_id, index),
                SessionSummary(
                    session_id=sanitiser.text(turn.session_id),
                    agent_id=sanitiser.text(turn.agent_id) if turn.agent_id else None,
                    file=shown,
                ),
            )
            summary.turns += 1
            label = labels.take(turn.session_id, turn.agent_id, turn.index) if labels is not None else None
            if turn.first_step is None:
                warnings.add(
                    shown,
                    turn.line,
                    f"turn {turn.index} has no recorded reply: no task" + (" (its label is not used)" if label else ""),
                )
                continue
            task_id = _task_id(turn, short_ids, sanitiser)
            if task_id in task_ids:
                warnings.add(
                    shown,
                    turn.line,
                    f"task id {task_id} already taken by another file of the "
                    f"same session: stored as {task_id}-f{index}",
                )
                task_id = f"{task_id}-f{index}"
            catalog_from = "trace" if turn.tools is not None else gap_source
            task = _task(turn, task_id, _sanitised_tools(label[0], sanitiser) if label else None, catalog_from)
            called = [call.name for call in turn.first_step.calls]
            if turn.tools is not None:
                task = flag_task(task, called, {tool.name for tool in turn.tools}, hallucinated)
                bad = [] if label else task_problems(task, task.tools, shown, turn.line)
                if bad:  # one bad turn costs that turn only
                    where = f"{bad[0].field}: " if bad[0].field else ""
                    warnings.add(shown, turn.line, f"turn {turn.index}: {where}{bad[0].message}: no task")
                    continue
            else:
                deferred_called.update(called)
                deferred_called.update(task.tool_results or {})
            task_ids.add(task_id)
            if turn.tools is None and turn.catalog_gap and not given:
                gaps.append((turn, task_id))
            by_source[catalog_from] += 1
            summary.catalog_sources[catalog_from] += 1
            if label:
                labelled.append((task, label[1]))
            for tool in turn.tools or []:
                first = trace_tools.setdefault(tool.name, tool)
                if first != tool and task_id not in conflicts.setdefault(tool.name, []):
                    if not conflicts[tool.name]:
                        warnings.add(
                            shown,
                            turn.line,
                            f"tool '{tool.name}' is defined differently by two traces "
                            f"(first kept in the suite catalog; each task keeps its own)",
                        )
                    conflicts[tool.name].append(task_id)
            writer.add(task, _replay_line(task_id, turn))
            summary.tasks += 1

        turn_counts: Counter[tuple[str, str | None]] = Counter()
        for (session, agent, _), summary in sessions.items():
            turn_counts[(session, agent)] += summary.turns
        problems: list[Problem] = []
        if gaps:
            problems.append(_catalog_gap_problem(gaps))
        if labels is not None:
            problems.extend(labels.unused_problems(dict(turn_counts)))
            problems.extend(labels.sessionless_problems({session for session, _ in turn_counts}))
        if writer.task_count == 0 and not problems:
            problems.append(
                Problem(
                    file=shown_files[0] if len(files) == 1 else ", ".join(shown_files),
                    message="no user prompt with a recorded reply found: nothing to ingest",
                )
            )
        base = merge_live(curated or [], list(trace_tools.values()))
        added = ledger.missing_definitions(base)
        catalog = base + added
        offered = {tool.name for tool in catalog}
        if deferred_called - offered:  # calls to tools outside the suite catalog: flag them, once it is known
            writer.rewrite_tasks(
                lambda task, line: (
                    task
                    if task.tools is not None
                    else flag_task(task, [call["name"] for call in line["tool_calls"]], offered, hallucinated)
                )
            )
        if labels is not None:
            for task, line in labelled:
                if task.tools is None:
                    task = flag_task(task, [], offered, HallucinationCounts())
                task_catalog = task.tools if task.tools is not None else catalog
                problems.extend(task_problems(task, task_catalog, labels.file, line))
        if problems:
            raise InputError(problems)
        # Warnings were written while reading; a user name learned later (a cwd) may sit in an earlier one.
        warnings.items[:] = [sanitiser.text(item) for item in warnings.items]
        summaries = list(sessions.values())
        manifest = _manifest(
            source,
            shown_files,
            summaries,
            writer.task_count,
            len(labelled),
            catalog,
            catalog_sources,
            added,
            sanitiser,
            warnings,
            options,
        )
        manifest["catalog"]["task_catalog_sources"] = dict(sorted(by_source.items()))
        manifest["hallucinated"] = hallucinated.as_manifest()
        manifest["catalog"]["conflicts"] = {name: tasks for name, tasks in sorted(conflicts.items()) if tasks}
        description = (
            f"Recorded {source} sessions: {writer.task_count} tasks from {len(summaries)} sessions (see ingest.json)"
        )
        suite_dir = writer.commit(catalog=catalog, description=description, manifest=manifest)
    return IngestReport(
        source=source,
        suite=options.suite,
        suite_dir=suite_dir,
        sessions=summaries,
        tasks=writer.task_count,
        labelled=len(labelled),
        catalog_version=catalog_version(catalog),
        catalog_size=len(catalog),
        added_tools=[t.name for t in added],
        redactions=Counter(sanitiser.counts),
        warnings=warnings,
        hallucinated=hallucinated,
    )


def ingest_claude_code(files: Sequence[Path], options: IngestOptions) -> IngestReport:
    """Claude Code session files → a suite (see :func:`ingest_sessions`)."""
    return ingest_sessions("claude-code", files, options)


def ingest_codex(files: Sequence[Path], options: IngestOptions) -> IngestReport:
    """Codex CLI rollouts → a suite (see :func:`ingest_sessions`)."""
    return ingest_sessions("codex", files, options)


def ingest_otel(files: Sequence[Path], options: IngestOptions) -> IngestReport:
    """OpenTelemetry GenAI traces (OTLP JSON) → a suite (see :func:`ingest_sessions`)."""
    return ingest_sessions("otel", files, options)


def _task_id(turn: RecordedTurn, short_ids: _ShortIds, sanitiser: Sanitiser) -> str:
    session = short_ids(_ID_UNSAFE.sub("-", sanitiser.text(turn.session_id)).strip("-"))
    if turn.agent_id:
        agent = short_ids(_ID_UNSAFE.sub("-", sanitiser.text(turn.agent_id)).strip("-"))
        return f"{session}-{agent}-t{turn.index}"
    return f"{session}-t{turn.index}"


def _given_catalog(source: str, options: IngestOptions) -> tuple[list[ToolDefinition], list[str]]:
    """The catalog given on the command line: the curated file (when given, chosen, or for session files,
    which never record one) with the live dumps."""
    if _catalog_source(source, options) == "live-dump":
        live: list[ToolDefinition] = []
        for dump in options.catalog_dumps:
            live.extend(load_tool_dump(dump))
        return merge_live([], live), [display_path(d) for d in options.catalog_dumps]
    return load_curated_catalog(options)


def _catalog_gap_problem(gaps: list[tuple[RecordedTurn, str]]) -> Problem:
    """One problem for every turn whose catalog cannot be known (the first named, the rest counted)."""
    turn, task_id = gaps[0]
    more = f" (and {len(gaps) - 1} more turns)" if len(gaps) > 1 else ""
    return Problem(
        file=turn.file,
        line=turn.line,
        field="gen_ai.tool.definitions",
        message=f"the catalog of turn {task_id}{more} cannot be known: {turn.catalog_gap}. Give the "
        "agent's tools with --catalog FILE or --catalog-dump FILE, or choose the curated demo "
        "catalog with --catalog-from curated",
    )


def _task(turn: RecordedTurn, task_id: str, expected: Expected | None, catalog_from: str) -> Task:
    tags = [turn.source] + (["subagent"] if turn.agent_id else []) + [f"catalog:{catalog_from}"]
    return Task(
        id=task_id,
        messages=turn.messages,
        expected=expected,
        tools=turn.tools,
        tool_results=turn.tool_results or None,
        tags=tags,
    )


def _sanitised_tools(expected: Expected, sanitiser: Sanitiser) -> Expected:
    """A label's expected tool names sanitised like the recorded calls' names, so they still match them."""
    calls = expected.calls and [call.model_copy(update={"tool": sanitiser.text(call.tool)}) for call in expected.calls]
    return expected.model_copy(update={"tool": expected.tool and sanitiser.text(expected.tool), "calls": calls})


def _replay_line(task_id: str, turn: RecordedTurn) -> dict[str, Any]:
    step = turn.first_step
    assert step is not None
    return {
        "task_id": task_id,
        "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in step.calls],
        "content": step.text,
    }


def _manifest(
    source: str,
    files: list[str],
    sessions: list[SessionSummary],
    tasks: int,
    labelled: int,
    catalog: list[ToolDefinition],
    catalog_sources: list[str],
    added: list[ToolDefinition],
    sanitiser: Sanitiser,
    warnings: Warnings,
    options: IngestOptions,
) -> dict[str, Any]:
    return {
        "source": source,
        "files": [Path(f).name for f in files],
        "sessions": [
            {
                "session": s.session_id,
                "agent": s.agent_id,
                "file": Path(s.file).name,
                "turns": s.turns,
                "tasks": s.tasks,
                "catalog_sources": dict(sorted(s.catalog_sources.items())),
            }
            for s in sessions
        ],
        "turns": sum(s.turns for s in sessions),
        "tasks": tasks,
        "labelled": labelled,
        "catalog": {
            "catalog_version": catalog_version(catalog),
            "tools": len(catalog),
            "sources": [sanitiser.text(s) for s in catalog_sources],
            "added_for_called_tools": [t.name for t in added],
        },
        "limits": {
            "max_tool_result_bytes": options.max_tool_result_bytes,
            "max_context_chars": options.max_context_chars,
        },
        "redactions": dict(sorted(sanitiser.counts.items())),
        "warnings": {"count": warnings.count, "first": warnings.items},
    }
