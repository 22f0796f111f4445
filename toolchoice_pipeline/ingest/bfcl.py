"""BFCL JSON Lines -> a suite in the ``bfcl`` matching profile (DESIGN §3, §4; ``docs/bfcl.md``).

Input (Berkeley Function Calling Leaderboard, ``bfcl_eval/data``; JSON Lines despite the ``.json`` ending):

- a questions file, one entry a line: ``{"id", "question": [[message, ...]], "function": [definition, ...]}``
  (``question`` is a list of turns; single-turn categories have one);
- a possible-answers file paired line by line with it: ``{"id", "ground_truth": [{name: {param: [values]}}]}``.
  Irrelevance categories have none: their tasks expect no call. Relevance categories have none either: any call
  is right (``expected.any_call``).

Output: ``<data_dir>/suites/<suite>/{suite.yaml, catalog.yaml, tasks.jsonl}``. Each task carries its own inline
catalog (``tools``), BFCL's schema dialect mapped to JSON Schema (``dict``->``object``, ``float``->``number``,
``tuple``->``array``, ``any``->no type, recursively; an ``enum`` on an array moves to its ``items``);
``catalog.yaml`` is an empty list. The expected calls
come from the possible answers (:func:`~toolchoice_pipeline.scoring.matching.bfcl.possible_answer_to_argument`); a
parallel task lists all of them in ``expected.calls``. Each task is tagged with its BFCL category.

Entries BFCL ships although they are odd are kept whole, as BFCL scores them, and flagged (:class:`Flag`): an
answer that requires a parameter the function's schema lacks (BFCL's checker can never pass it; tag
:data:`~toolchoice_pipeline.suites.tasks.FLAG_UNPASSABLE`), a question with no functions (tag :data:`~toolchoice_pipeline.suites.tasks.FLAG_NO_TOOLS`). With
``skip_bad`` they are left out instead. An answer parameter the schema lacks but marked optional is dropped: BFCL
passes a call only without it, exactly as the dropped expectation does.

Every task is checked like ``toolchoice validate`` checks it, and the suite appears all at once: it is written
in a hidden directory next to its place, read back, then renamed into it. Every problem with the input raises :class:`InputError` naming file, line and field.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml
from pydantic import ValidationError

from toolchoice_pipeline.scoring.matching.bfcl import OPTIONAL_MARK, possible_answer_to_argument
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.suite import SUITE_FILE, SuiteSpec, load_suite, suite_dir
from toolchoice_pipeline.suites.tasks import FLAG_NO_TOOLS, FLAG_UNPASSABLE, Expected, ExpectedCall, Task, write_tasks
from toolchoice_pipeline.suites.validate import task_problems
from toolchoice_pipeline.util.errors import InputError, Problem, display_path, pydantic_problems
from toolchoice_pipeline.util.json_text import json_objects

MATCH_PROFILE: Final = "bfcl"
CATALOG_FILE = "catalog.yaml"
TASKS_FILE = "tasks.jsonl"

BFCL_TYPES: dict[str, str | None] = {
    "dict": "object",
    "float": "number",
    "tuple": "array",
    "any": None,
    "string": "string",
    "integer": "integer",
    "boolean": "boolean",
    "array": "array",
    "object": "object",
    "number": "number",
}
"""BFCL's parameter types and their JSON Schema types (None: no ``type`` keyword, any value)."""

_SUBSCHEMA_KEYS = ("items", "additionalProperties")
_MESSAGE_ROLES = ("system", "developer", "user", "assistant", "tool")
_CATEGORY = re.compile(r"^(?P<category>.+?)_\d[\d-]*$")


@dataclass(frozen=True)
class Flag:
    """An odd BFCL entry: ``kind`` is ``unpassable``, ``no_tools`` or ``dropped_parameter`` (an optional answer
    parameter the schema lacks, dropped), at ``file``:``line``; ``detail`` says which parameter or function."""

    kind: str
    file: str
    line: int
    detail: str = ""


FLAG_TAGS = {"unpassable": FLAG_UNPASSABLE, "no_tools": FLAG_NO_TOOLS}
"""The flags that mark a task (tag) and that ``skip_bad`` leaves out; ``dropped_parameter`` only informs."""


@dataclass
class ImportResult:
    """What :func:`import_bfcl` wrote: the suite, its directory, the number of tasks per BFCL category, the odd
    entries (kept or, with ``skip_bad``, skipped) and whether they were skipped."""

    suite: str
    directory: Path
    tasks: int
    categories: dict[str, int] = field(default_factory=dict)
    flags: list[Flag] = field(default_factory=list)
    skipped: bool = False

    def summary(self) -> str | None:
        """One line counting the odd entries by kind, each with its file and lines; None when there are none."""
        if not self.flags:
            return None
        parts = []
        for kind, words in (
            ("unpassable", "whose answer requires a parameter the schema lacks (BFCL can never pass them)"),
            ("no_tools", "offering no tools"),
            ("dropped_parameter", "with an optional answer parameter the schema lacks (dropped from the expectation)"),
        ):
            flags = [f for f in self.flags if f.kind == kind]
            if flags:
                verb = (
                    "skipped"
                    if self.skipped and kind in FLAG_TAGS
                    else ("kept" if kind == "dropped_parameter" else f"kept, tagged {FLAG_TAGS[kind]}")
                )
                files: dict[str, list[str]] = {}
                for flag in flags:
                    files.setdefault(flag.file, []).append(str(flag.line))
                where = "; ".join(
                    f"{file} line{'s' if len(lines) > 1 else ''} {', '.join(lines)}" for file, lines in files.items()
                )
                parts.append(f"{len(flags)} {'entry' if len(flags) == 1 else 'entries'} {words}, {verb}: {where}")
        return "; ".join(parts)


@dataclass(frozen=True)
class _Line:
    file: str
    line: int
    data: dict[str, Any]

    def problem(self, message: str, field: str | None = None) -> Problem:
        return Problem(file=self.file, line=self.line, field=field, message=message)


class _Bad(Exception):
    """One problem at a field path inside a line (turned into a :class:`Problem` by the caller)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


def read_json_lines(path: Path) -> list[_Line]:
    """Every non-blank line of a BFCL file as a JSON object (read by :func:`~.json_text.json_objects`);
    raises :class:`InputError` naming file and line for a missing file, a line that is not UTF-8, bad JSON or a
    line that is not an object (all problems at once)."""
    shown = display_path(path)
    if path.is_dir():
        raise InputError(Problem(file=shown, message="is a directory, not a BFCL JSON Lines file"))
    lines: list[_Line] = []
    problems: list[Problem] = []
    for number, data in json_objects(path, problems, "a BFCL line"):
        lines.append(_Line(shown, number, data))
    if problems:
        raise InputError(problems)
    if not lines:
        raise InputError(Problem(file=shown, message="the file holds no BFCL entries"))
    return lines


def bfcl_category(task_id: str) -> str:
    """The BFCL category of an entry id: ``simple_python_12`` -> ``simple_python``, ``live_simple_0-0-0`` ->
    ``live_simple``; the id itself when it has no numeric suffix."""
    match = _CATEGORY.match(task_id)
    return match.group("category") if match else task_id


def to_json_schema(schema: Any, where: str = "parameters") -> dict[str, Any]:
    """A BFCL parameter schema as JSON Schema: types mapped by :data:`BFCL_TYPES` (``any`` drops ``type``), in
    ``properties``, ``items`` and ``additionalProperties`` at every depth; other keywords kept as they are.

    Raises ``_Bad`` (field path, message) for a schema that is not an object or a type BFCL does not define.
    """
    if not isinstance(schema, dict):
        raise _Bad(where, "a parameter schema must be a JSON object")
    converted: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            if not isinstance(value, str) or value not in BFCL_TYPES:
                known = ", ".join(sorted(BFCL_TYPES))
                raise _Bad(
                    f"{where}.type",
                    f"unknown BFCL type {value!r} (known: {known}); only Python categories can be imported",
                )
            if BFCL_TYPES[value] is not None:
                converted["type"] = BFCL_TYPES[value]
        elif key == "properties" and isinstance(value, dict):
            converted["properties"] = {
                name: to_json_schema(sub, f"{where}.properties.{name}") for name, sub in value.items()
            }
        elif key in _SUBSCHEMA_KEYS and isinstance(value, dict):
            converted[key] = to_json_schema(value, f"{where}.{key}")
        else:
            converted[key] = value
    if converted.get("type") == "array" and "enum" in converted:
        # BFCL lists the allowed item values on the array; JSON Schema checks them on the items.
        enum = converted.pop("enum")
        declared = converted.get("items")
        items: dict[str, Any] = declared if isinstance(declared, dict) else {}
        converted["items"] = items if "enum" in items else {**items, "enum": enum}
    return converted


def _tools(entry: _Line) -> list[ToolDefinition]:
    functions = entry.data.get("function")
    if not isinstance(functions, list):
        raise _Bad("function", "must be a list of function definitions")
    tools = []
    for index, function in enumerate(functions):
        where = f"function[{index}]"
        if not isinstance(function, dict):
            raise _Bad(where, "a function definition must be a JSON object")
        name = function.get("name")
        if name is None:
            raise _Bad(f"{where}.name", "required field is missing")
        if not isinstance(name, str) or not name:
            raise _Bad(f"{where}.name", f"must be a non-empty string (got {json.dumps(name)[:40]})")
        description = function.get("description") or ""
        if not isinstance(description, str):
            raise _Bad(f"{where}.description", "must be a string")
        parameters = to_json_schema(
            function.get("parameters", {"type": "dict", "properties": {}}), f"{where}.parameters"
        )
        tools.append(ToolDefinition(name=name, description=description, parameters=parameters))
    return tools


def _messages(entry: _Line) -> list[dict[str, Any]]:
    turns = entry.data.get("question")
    if not isinstance(turns, list) or not turns:
        raise _Bad("question", "must be a non-empty list of turns (each a list of messages)")
    if all(isinstance(message, dict) for message in turns):
        turns = [turns]  # older BFCL versions write a single turn as a bare list of messages
    if len(turns) > 1:
        raise _Bad(
            "question",
            f"has {len(turns)} turns: multi-turn BFCL categories are not supported "
            "(only single-turn categories can be imported)",
        )
    turn = turns[0]
    if not isinstance(turn, list) or not turn:
        raise _Bad("question[0]", "must be a non-empty list of messages")
    messages = []
    for index, message in enumerate(turn):
        where = f"question[0][{index}]"
        if not isinstance(message, dict):
            raise _Bad(where, "a message must be a JSON object")
        if message.get("role") not in _MESSAGE_ROLES:
            raise _Bad(f"{where}.role", f"must be one of {', '.join(_MESSAGE_ROLES)}")
        if not isinstance(message.get("content"), str):
            raise _Bad(f"{where}.content", "must be a string")
        messages.append({"role": message["role"], "content": message["content"]})
    return messages


def _expected(answer: _Line, tools: list[ToolDefinition], flags: list[Flag]) -> Expected:
    ground_truth = answer.data.get("ground_truth")
    if not isinstance(ground_truth, list) or not ground_truth:
        raise _Bad("ground_truth", "must be a non-empty list of expected calls")
    by_name = {tool.name: tool for tool in tools}
    calls = []
    for index, call in enumerate(ground_truth):
        where = f"ground_truth[{index}]"
        if not isinstance(call, dict) or len(call) != 1:
            raise _Bad(where, "an expected call must be an object with exactly one key, the function name")
        ((name, parameters),) = call.items()
        if name not in by_name:
            raise _Bad(where, f"function '{name}' is not among the question's functions ({', '.join(sorted(by_name))})")
        if not isinstance(parameters, dict):
            raise _Bad(f"{where}.{name}", "must map each parameter to its list of acceptable values")
        properties = by_name[name].parameters.get("properties") or {}
        arguments = {}
        for parameter, alternatives in parameters.items():
            if parameter not in properties and isinstance(alternatives, list):
                detail = f"{where}.{name}.{parameter}"
                if OPTIONAL_MARK in alternatives:
                    flags.append(Flag("dropped_parameter", answer.file, answer.line, detail))
                    continue
                flags.append(Flag("unpassable", answer.file, answer.line, detail))
            try:
                arguments[parameter] = possible_answer_to_argument(alternatives, properties.get(parameter))
            except ValueError as exc:
                raise _Bad(f"{where}.{name}.{parameter}", str(exc)) from None
        calls.append(ExpectedCall(tool=name, arguments=arguments))
    first = calls[0]
    return Expected(tool=first.tool, arguments=first.arguments, calls=calls if len(calls) > 1 else None)


def _entry_id(entry: _Line) -> str:
    task_id = entry.data.get("id")
    if not isinstance(task_id, str) or not task_id.strip() or task_id != task_id.strip():
        raise InputError(entry.problem("required: a non-empty id without surrounding spaces", "id"))
    return task_id


def build_task(question: _Line, answer: _Line | None, flags: list[Flag] | None = None) -> Task:
    """One task from a question line and its possible-answer line (None: no call expected, or any call for a
    relevance category). Odd entries are kept and tagged; each oddity is appended to ``flags`` (:class:`Flag`).

    Raises :class:`InputError` naming the question's (or answer's) file, line and field.
    """
    flags = [] if flags is None else flags
    found: list[Flag] = []
    task_id = _entry_id(question)
    category = bfcl_category(task_id)
    try:
        tools = _tools(question)
        messages = _messages(question)
    except _Bad as bad:
        raise InputError(question.problem(bad.message, bad.field)) from None
    if not tools:
        found.append(Flag("no_tools", question.file, question.line, "function"))
    if answer is not None:
        try:
            expected = _expected(answer, tools, found)
        except _Bad as bad:
            raise InputError(answer.problem(bad.message, bad.field)) from None
    else:
        expected = Expected(tool=None, any_call=True if _is_relevance(category) else None)
    tags = [category, *dict.fromkeys(FLAG_TAGS[f.kind] for f in found if f.kind in FLAG_TAGS)]
    try:
        task = Task(id=task_id, messages=messages, expected=expected, tools=tools, tags=tags)
    except ValidationError as exc:
        raise InputError(pydantic_problems(exc, file=question.file, line=question.line)) from None
    problems = []
    for problem in task_problems(task, tools, question.file, question.line):
        source = answer if answer is not None and (problem.field or "").startswith("expected") else question
        problems.append(Problem(file=source.file, line=source.line, field=problem.field, message=problem.message))
    if problems:
        raise InputError(problems)
    flags.extend(found)
    return task


def _is_relevance(category: str) -> bool:
    return "relevance" in category and "irrelevance" not in category


def task_from_bfcl(question: dict[str, Any], answer: dict[str, Any] | None = None) -> Task:
    """One task from a BFCL question entry and its possible-answer entry given as objects (None: no call
    expected). Raises :class:`InputError` (file ``<question>`` / ``<answer>``, line 1)."""
    return build_task(_Line("<question>", 1, question), None if answer is None else _Line("<answer>", 1, answer))


def _category_problem(category: str, with_answers: bool) -> str | None:
    """Why entries of ``category`` cannot be imported (with or without an ANSWERS file), or None."""
    if "multi_turn" in category:
        return f"category '{category}' is multi-turn: multi-turn BFCL categories are not supported"
    if "java" in category:
        return f"category '{category}' is checked with Java/JavaScript type rules: only Python categories are supported"
    without_answers = "irrelevance" in category or _is_relevance(category)
    if not with_answers and not without_answers:
        return (
            f"category '{category}' needs its possible-answer file (ANSWERS); only irrelevance and relevance "
            "categories come without answers"
        )
    if with_answers and without_answers:
        expects = "no call" if "irrelevance" in category else "any call"
        return f"category '{category}' expects {expects}: give no ANSWERS file"
    return None


def _check_categories(questions: list[_Line], answers: list[_Line] | None) -> None:
    """Raise :class:`InputError` on the first question whose category cannot be imported."""
    for entry in questions:
        message = _category_problem(bfcl_category(_entry_id(entry)), answers is not None)
        if message is not None:
            raise InputError(entry.problem(message, "id"))


def _pair(questions: list[_Line], answers: list[_Line]) -> list[tuple[_Line, _Line]]:
    """Questions and answers paired line by line; their ids must agree one for one."""
    problems = []
    for question, answer in zip(questions, answers):
        question_id, answer_id = _entry_id(question), _entry_id(answer)
        if question_id != answer_id:
            problems.append(
                answer.problem(
                    f"answer id '{answer_id}' does not match question id '{question_id}' "
                    f"({question.file}:{question.line}); the files pair line by line",
                    "id",
                )
            )
    if len(answers) < len(questions):
        missing = questions[len(answers)]
        last = answers[-1].line if answers else 0
        problems.append(
            Problem(
                file=answers[0].file,
                line=last + 1,
                message=f"{len(answers)} answers for {len(questions)} questions: no answer for "
                f"'{_entry_id(missing)}' ({missing.file}:{missing.line})",
            )
        )
    elif len(answers) > len(questions):
        extra = answers[len(questions)]
        problems.append(
            extra.problem(
                f"{len(answers)} answers for {len(questions)} questions: answer "
                f"'{_entry_id(extra)}' has no question in {questions[0].file}",
                "id",
            )
        )
    if problems:
        raise InputError(problems)
    return list(zip(questions, answers))


def build_tasks(questions_path: Path, answers_path: Path | None, flags: list[Flag] | None = None) -> list[Task]:
    """The tasks of a BFCL questions file and its possible answers (None for irrelevance and relevance
    categories); every odd entry kept is appended to ``flags``.

    Raises :class:`InputError` listing every problem (per line), each naming file, line and field.
    """
    flags = [] if flags is None else flags
    questions = read_json_lines(questions_path)
    answers = read_json_lines(answers_path) if answers_path is not None else None
    _check_categories(questions, answers)
    pairs = _pair(questions, answers) if answers is not None else [(q, None) for q in questions]
    tasks: list[Task] = []
    problems: list[Problem] = []
    first_line: dict[str, int] = {}
    for question, answer in pairs:
        try:
            task = build_task(question, answer, flags)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        if task.id in first_line:
            problems.append(question.problem(f"duplicate id '{task.id}' (first on line {first_line[task.id]})", "id"))
            continue
        first_line[task.id] = question.line
        tasks.append(task)
    if problems:
        raise InputError(problems)
    return tasks


def _spec(suite: str, questions_path: Path, answers_path: Path | None, tasks: list[Task]) -> SuiteSpec:
    categories = sorted({tag for task in tasks for tag in task.tags})
    source = questions_path.name + (f" with answers {answers_path.name}" if answers_path is not None else "")
    try:
        return SuiteSpec(
            name=suite,
            catalog=CATALOG_FILE,
            tasks=TASKS_FILE,
            match_profile=MATCH_PROFILE,
            description=f"BFCL {', '.join(categories)} (imported from {source}); each task has its own inline catalog",
        )
    except ValidationError:
        raise InputError(
            Problem(
                file="--suite",
                message=f"'{suite}' is not a valid suite name (letters, digits, "
                "'_', '.', '-'; starting with a letter or digit)",
            )
        ) from None


def _write(directory: Path, spec: SuiteSpec, tasks: list[Task]) -> None:
    directory.mkdir(parents=True)
    (directory / SUITE_FILE).write_text(
        yaml.safe_dump(
            spec.model_dump(exclude_defaults=False, exclude={"live_catalogs", "models"}),
            sort_keys=False,
            allow_unicode=True,
            width=110,
        ),
        encoding="utf-8",
    )
    (directory / CATALOG_FILE).write_text(
        "# BFCL suites have no shared catalog: every task carries its own inline catalog (`tools`).\n[]\n",
        encoding="utf-8",
    )
    write_tasks(directory / TASKS_FILE, tasks)


def import_bfcl(
    questions: Path, answers: Path | None, suite: str, data_dir: Path, *, force: bool = False, skip_bad: bool = False
) -> ImportResult:
    """Convert a BFCL questions file (and its possible answers) into the suite ``suite`` under ``data_dir``.

    Odd entries (:class:`Flag`) are kept and tagged, or left out with ``skip_bad``; the result lists them.

    Every task passes the semantic checks of :mod:`toolchoice_pipeline.suites.validate`; the suite is written in a
    hidden directory under ``<data_dir>/suites``, read back with ``load_suite`` and renamed into place, so a
    failed import leaves nothing behind. An existing suite is replaced only with ``force``.
    Raises :class:`InputError` for bad input or an existing suite.
    """
    questions, answers = Path(questions), None if answers is None else Path(answers)
    flags: list[Flag] = []
    tasks = build_tasks(questions, answers, flags)
    if skip_bad:
        tasks = [task for task in tasks if not set(task.tags) & set(FLAG_TAGS.values())]
        if not tasks:
            raise InputError(
                Problem(
                    file=display_path(questions), message="every entry is flagged: --skip-bad leaves no task to import"
                )
            )
    spec = _spec(suite, questions, answers, tasks)
    target = suite_dir(Path(data_dir), suite)
    if target.exists() and not force:
        raise InputError(
            Problem(file=display_path(target), message=f"suite '{suite}' exists; use --force to replace it")
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{suite}.import-", dir=target.parent))
    try:
        _write(staging / "suites" / suite, spec, tasks)
        # build_task already ran validate's checks on every task (naming the BFCL lines); reading the written
        # suite back proves the files say exactly that.
        written = load_suite(staging, suite, check=False)
        if written.tasks != tasks:
            raise RuntimeError(f"suite '{suite}' did not read back as written")
        if target.exists():
            target.rename(staging / "replaced")
        (staging / "suites" / suite).rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    categories: dict[str, int] = {}
    for task in tasks:
        categories[task.tags[0]] = categories.get(task.tags[0], 0) + 1
    return ImportResult(
        suite=suite, directory=target, tasks=len(tasks), categories=categories, flags=flags, skipped=skip_bad
    )
