"""Semantic checks of a loaded suite: what a schema alone cannot see.

Each problem names the tasks file, the task's line and the field. Checked: an empty suite; inline catalogs
(duplicate names, parameters that are not a JSON Schema object); an expected tool missing from the task's
catalog; a key argument that is not a parameter of the expected tool; matchers that are malformed or whose
regex does not compile; arguments expected where no call is expected; ``expected.calls`` disagreeing with
``expected.tool``; canned ``tool_results`` for tools the task's catalog lacks.
"""

from __future__ import annotations

from .catalog import ToolDefinition
from .catalog_files import check_catalog
from .errors import Problem, display_path
from .matchers import MatcherError, parse_matcher
from .suite import Suite
from .tasks import ExpectedCall, Task


def suite_problems(suite: Suite) -> list[Problem]:
    """Every semantic problem of ``suite``, in task order (empty when the suite is sound)."""
    tasks_file = display_path(suite.tasks_file)
    if not suite.tasks:
        return [Problem(file=tasks_file, message="the suite has no tasks")]
    problems: list[Problem] = []
    if not suite.catalog and all(t.tools is None for t in suite.tasks):
        problems.append(Problem(file=display_path(suite.directory / suite.spec.catalog),
                                message="the catalog has no tools"))
    for task in suite.tasks:
        line = suite.task_lines.get(task.id)
        problems.extend(task_problems(task, suite.task_catalog(task), tasks_file, line))
    return problems


def task_problems(task: Task, catalog: list[ToolDefinition], file: str, line: int | None) -> list[Problem]:
    """Problems of one task against the catalog it runs with."""
    problems: list[Problem] = []

    def add(field: str, message: str) -> None:
        problems.append(Problem(file=file, line=line, field=field, message=message))

    if task.tools is not None:
        for problem in check_catalog(task.tools, file, prefix=("tools",)):
            add(problem.field or "tools", problem.message)
        if not task.tools:
            add("tools", "an inline catalog must list at least one tool (use null for the suite's catalog)")
    by_name = {tool.name: tool for tool in catalog}
    expected = task.expected
    if expected is not None:
        if expected.tool is None:
            if expected.arguments:
                add("expected.arguments", "arguments are given but no call is expected (expected.tool is null)")
            if expected.calls:
                add("expected.calls", "calls are given but no call is expected (expected.tool is null)")
        else:
            _check_call(ExpectedCall(tool=expected.tool, arguments=expected.arguments), "expected", by_name, add)
            if expected.calls is not None:
                if not expected.calls:
                    add("expected.calls", "must list at least one call when given")
                elif (expected.calls[0].tool, expected.calls[0].arguments) != (expected.tool, expected.arguments):
                    add("expected.calls", "the first expected call must repeat expected.tool and expected.arguments")
                for index, call in enumerate(expected.calls[1:], start=1):
                    _check_call(call, f"expected.calls[{index}]", by_name, add)
    for name in task.tool_results or {}:
        if name not in by_name:
            add(f"tool_results.{name}", f"canned result for tool '{name}', which is not in the task's catalog")
    return problems


def _check_call(call: ExpectedCall, where: str, by_name: dict[str, ToolDefinition], add) -> None:
    tool = by_name.get(call.tool)
    if tool is None:
        add(f"{where}.tool", f"tool '{call.tool}' is not in the task's catalog ({_names(by_name)})")
        return
    properties = tool.parameters.get("properties") or {}
    for name, matcher in call.arguments.items():
        if name not in properties:
            add(f"{where}.arguments.{name}", f"key argument '{name}' is not a parameter of tool '{call.tool}'")
            continue
        try:
            parse_matcher(matcher)
        except MatcherError as exc:
            add(f"{where}.arguments.{name}", str(exc))


def _names(by_name: dict[str, ToolDefinition]) -> str:
    names = sorted(by_name)
    shown = ", ".join(names[:12])
    return f"catalog: {shown}{', ...' if len(names) > 12 else ''}" if names else "the catalog is empty"
