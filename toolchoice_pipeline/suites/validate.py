"""Semantic checks of a loaded suite: what a schema alone cannot see.

Each problem names the tasks file, the task's line and the field. Checked: an empty suite; inline catalogs
(duplicate names, parameters that are not a JSON Schema object); an expected tool missing from the task's
catalog; a key argument that is not a parameter of the expected tool; matchers that are malformed or whose
regex does not compile; matcher objects with unknown or misspelt keys ("did you mean"); an object or array
expected for a parameter whose schema type is scalar; arguments expected where no call is expected;
``expected.calls`` disagreeing with ``expected.tool``; ``any_call`` beside a tool; canned ``tool_results`` for tools the task's catalog lacks. A task
tagged :data:`~.tasks.FLAG_NO_TOOLS` may have an empty inline catalog, one tagged :data:`~.tasks.FLAG_UNPASSABLE`
expected arguments its tool's schema lacks (the flag says the source wrote it so).

Beyond the task format (issue 29), with :func:`suite_problems` (errors) and :func:`suite_warnings`: every expected
value against its parameter's schema in the suite's matching profile (:mod:`.expectation_checks`; a task tagged
:data:`~.tasks.FLAG_UNPASSABLE` is taken as its source wrote it); the catalog's and inline catalogs' own schemas
(:mod:`.catalog_checks`); the conversation (:func:`conversation_problems`: it must end with the user's message or
a tool result, and no user message may be empty).
"""

from __future__ import annotations

import difflib
import json

from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.catalog_checks import tool_findings
from toolchoice_pipeline.suites.catalog_files import check_catalog
from toolchoice_pipeline.suites.expectation_checks import expectation_findings
from toolchoice_pipeline.suites.matchers import MatcherError, matcher_key_problem, parse_matcher
from toolchoice_pipeline.suites.model import EMPTY_SUITE, Suite
from toolchoice_pipeline.suites.tasks import FLAG_NO_TOOLS, FLAG_UNPASSABLE, ExpectedCall, Task
from toolchoice_pipeline.util.errors import Problem, display_path, field_path
from toolchoice_pipeline.util.yaml_lines import line_of, load_yaml


def suite_problems(suite: Suite, *, catalog_loaded: bool = True) -> list[Problem]:
    """Every semantic problem of ``suite``, in task order (empty when the suite is sound).

    ``catalog_loaded=False`` says the suite's catalog could not be read (its problems are reported
    elsewhere): checks that need it are skipped for tasks without an inline catalog, the rest still run.
    """
    return _suite_findings(suite, catalog_loaded)[0]


def suite_warnings(suite: Suite) -> list[Problem]:
    """What ``toolchoice validate`` prints as warnings about a suite that loaded: findings that do not make a
    task unmatchable nor a request refused (a tool without a description, an any_of alternative no valid call
    can hold, a value breaking only a ``format``...), each with file, line and field."""
    return _suite_findings(suite, True)[1]


def _suite_findings(suite: Suite, catalog_loaded: bool) -> tuple[list[Problem], list[Problem]]:
    tasks_file = display_path(suite.tasks_file)
    if not suite.tasks:
        return [Problem(file=tasks_file, message=EMPTY_SUITE)], []
    problems: list[Problem] = []
    warnings: list[Problem] = []
    if catalog_loaded and not suite.catalog and any(t.tools is None for t in suite.tasks):
        problems.append(
            Problem(
                file=display_path(suite.directory / suite.spec.catalog),
                message="the catalog has no tools: list at least one tool definition "
                "(or give every task an inline 'tools' catalog)",
            )
        )
        catalog_loaded = False  # reported once here, not again for every task
    if catalog_loaded:
        _curated_findings(suite, problems, warnings)
    profile = suite.match_profile
    seen_inline: set[str] = set()
    for task in suite.tasks:
        line = suite.task_lines.get(task.id)
        catalog = suite.task_catalog(task) if task.tools is not None or catalog_loaded else None
        problems.extend(task_problems(task, catalog, tasks_file, line, profile=profile, warnings=warnings))
        problems.extend(conversation_problems(task, tasks_file, line))
        for index, tool in enumerate(task.tools or ()):
            findings = tool_findings(tool)
            if not findings:
                continue
            # BFCL's names and schemas are kept as BFCL wrote them; each inline tool is warned about once
            warn = profile != "bfcl" and tool.definition_hash not in seen_inline
            seen_inline.add(tool.definition_hash)
            for path, message, error in findings:
                if error or warn:
                    found = Problem(
                        file=tasks_file, line=line, field=field_path(("tools", index, *path)), message=message
                    )
                    (problems if error else warnings).append(found)
    return problems, warnings


def _curated_findings(suite: Suite, problems: list[Problem], warnings: list[Problem]) -> None:
    """The curated catalog's tool findings, on the catalog file's lines (read again only when there are some)."""
    found = [(index, *finding) for index, tool in enumerate(suite.curated) for finding in tool_findings(tool)]
    if not found:
        return
    path = suite.directory / suite.spec.catalog
    lines = load_yaml(path)[1]
    shown = display_path(path)
    for index, where, message, error in found:
        problem = Problem(
            file=shown, line=line_of(lines, (index, *where)), field=field_path((index, *where)), message=message
        )
        (problems if error else warnings).append(problem)


_ANSWERED_ROLES = ("user", "tool")


def conversation_problems(task: Task, file: str, line: int | None) -> list[Problem]:
    """The conversation's faults: a last message that is neither the user's nor a tool result (the agent would be
    answering nothing), and a user message with no content (providers refuse it)."""
    problems: list[Problem] = []
    for index, message in enumerate(task.messages):
        if message.role == "user" and _empty(message.content):
            problems.append(
                Problem(
                    file=file,
                    line=line,
                    field=f"messages[{index}].content",
                    message="empty user message: providers refuse it (Anthropic: text content blocks must be "
                    "non-empty); write the request or remove the message",
                )
            )
    last = len(task.messages) - 1
    role = task.messages[last].role
    if role not in _ANSWERED_ROLES:
        problems.append(
            Problem(
                file=file,
                line=line,
                field=f"messages[{last}].role",
                message=f"the conversation ends with a message of role '{role}': the last message must be the "
                "user's or a tool result, which the agent answers",
            )
        )
    return problems


def _empty(content) -> bool:
    if content is None:
        return True
    if isinstance(content, str):
        return not content.strip()
    if isinstance(content, list):
        return all(
            isinstance(part, dict) and part.get("type") == "text" and not str(part.get("text") or "").strip()
            for part in content
        )
    return False


def task_problems(
    task: Task,
    catalog: list[ToolDefinition] | None,
    file: str,
    line: int | None,
    *,
    profile: str | None = None,
    warnings: list[Problem] | None = None,
) -> list[Problem]:
    """Problems of one task against the catalog it runs with (None: unknown, only catalog-free checks run).

    With ``profile`` (the suite's matching profile) every expected value is also checked against its parameter's
    schema (:mod:`.expectation_checks`); findings that are only warnings go to ``warnings`` when given."""
    problems: list[Problem] = []

    def add(field: str, message: str, error: bool = True) -> None:
        problem = Problem(file=file, line=line, field=field, message=message)
        if error:
            problems.append(problem)
        elif warnings is not None:
            warnings.append(problem)

    values_profile = None if FLAG_UNPASSABLE in task.tags else profile

    if task.tools is not None:
        for problem in check_catalog(task.tools, file, prefix=("tools",)):
            add(problem.field or "tools", problem.message)
        if not task.tools and FLAG_NO_TOOLS not in task.tags:
            add("tools", "an inline catalog must list at least one tool (use null for the suite's catalog)")
    by_name = None if catalog is None else {tool.name: tool for tool in catalog}
    expected = task.expected
    unknown_arguments_ok = FLAG_UNPASSABLE in task.tags
    if expected is not None:
        if expected.any_call and expected.tool is not None:
            add("expected.any_call", "any_call says any call is right: set expected.tool to null")
        if FLAG_NO_TOOLS in task.tags and (expected.tool is not None or expected.any_call):
            add("tags", f"a task tagged {FLAG_NO_TOOLS} offers no tools, so it must expect no call")
        if expected.tool is None:
            if expected.arguments:
                add(
                    "expected.arguments",
                    "arguments are given but no call is expected (expected.tool is null): "
                    "name the tool or remove the arguments",
                )
            if expected.calls:
                add("expected.calls", "calls are given but no call is expected (expected.tool is null)")
        else:
            _check_call(
                ExpectedCall(tool=expected.tool, arguments=expected.arguments),
                "expected",
                by_name,
                add,
                unknown_arguments_ok,
                values_profile,
            )
            if expected.calls is not None:
                if not expected.calls:
                    add("expected.calls", "must list at least one call when given")
                elif (expected.calls[0].tool, expected.calls[0].arguments) != (expected.tool, expected.arguments):
                    add("expected.calls", "the first expected call must repeat expected.tool and expected.arguments")
                for index, call in enumerate(expected.calls[1:], start=1):
                    _check_call(call, f"expected.calls[{index}]", by_name, add, unknown_arguments_ok, values_profile)
    if by_name is not None:
        for name in task.tool_results or {}:
            if name not in by_name:
                add(
                    f"tool_results.{name}",
                    f"canned result for tool '{name}', which is not in the task's catalog "
                    f"({_names(by_name)}){_did_you_mean(name, by_name)}",
                )
    return problems


def _check_call(
    call: ExpectedCall,
    where: str,
    by_name: dict[str, ToolDefinition] | None,
    add,
    unknown_arguments_ok: bool = False,
    profile: str | None = None,
) -> None:
    tool = None if by_name is None else by_name.get(call.tool)
    if by_name is not None and tool is None:
        add(
            f"{where}.tool",
            f"tool '{call.tool}' is not in the task's catalog ({_names(by_name)}){_did_you_mean(call.tool, by_name)}",
        )
    properties = (tool.parameters.get("properties") or {}) if tool is not None else None
    for name, matcher in call.arguments.items():
        if properties is not None and name not in properties and not unknown_arguments_ok:
            known = ", ".join(properties) or "none"
            add(
                f"{where}.arguments.{name}",
                f"key argument '{name}' is not a parameter of tool '{call.tool}' "
                f"(parameters: {known}){_did_you_mean(name, properties)}",
            )
            continue
        try:
            parsed = parse_matcher(matcher)
        except MatcherError as exc:
            add(f"{where}.arguments.{name}", str(exc))
            continue
        schema = properties.get(name) if properties is not None else None
        schema = schema if isinstance(schema, dict) else None
        problem = None if _is_object_value(matcher, schema) else matcher_key_problem(matcher)
        if problem is None and schema is not None:
            problem = _scalar_problem(parsed.values, schema)
        if problem is not None:
            add(f"{where}.arguments.{name}", problem)
        elif profile is not None and tool is not None:
            for field, message, error in expectation_findings(
                f"{where}.arguments.{name}", name, parsed, tool.parameters, profile
            ):
                add(field, message, error)


_SCALAR_TYPES = {"string", "number", "integer", "boolean", "null"}


def _is_object_value(matcher, schema: dict | None) -> bool:
    """True when ``matcher`` is a plain object the parameter's schema describes (its keys are properties)."""
    properties = (schema or {}).get("properties")
    return isinstance(matcher, dict) and isinstance(properties, dict) and set(matcher) <= set(properties)


def _scalar_problem(values: tuple, schema: dict) -> str | None:
    """An object or array expected for a parameter whose schema type is only scalar (it can never match a valid
    call); None otherwise."""
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else declared
    if not isinstance(types, list) or not types or not set(types) <= _SCALAR_TYPES:
        return None
    for value in values:
        if isinstance(value, (dict, list)):
            kind = "an object" if isinstance(value, dict) else "an array"
            return (
                f"expects {kind} ({json.dumps(value, ensure_ascii=False)[:60]}) for a parameter of type "
                f"{' or '.join(types)}; a valid call can never match it"
            )
    return None


def _did_you_mean(name: str, known) -> str:
    lowered = {k.lower(): k for k in known}
    if name.lower() in lowered:
        return f"; did you mean '{lowered[name.lower()]}'? Names are case-sensitive"
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.7)
    return f"; did you mean '{close[0]}'?" if close else ""


def _names(by_name: dict[str, ToolDefinition]) -> str:
    names = sorted(by_name)
    shown = ", ".join(names[:12])
    return f"catalog: {shown}{', ...' if len(names) > 12 else ''}" if names else "the catalog is empty"
