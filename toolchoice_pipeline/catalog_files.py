"""Reading tool catalogs from files: the curated ``catalog.yaml`` and live catalog dumps.

The curated catalog is a YAML (or JSON) list of tool definitions with exactly the fields
``name``, ``description``, ``parameters``. A live dump is JSON in any of the shapes agents and servers report:

- a list of tool definitions (``{name, description, parameters}``);
- OpenAI ``tools`` (``{"type": "function", "function": {...}}``);
- MCP ``tools/list`` results (``{"tools": [{name, description, inputSchema, ...}]}``, or the bare list).

Every problem names the file, the line and the field (``[3].parameters``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import ValidationError

from .catalog import ToolDefinition
from .errors import InputError, Problem, display_path, pydantic_problems
from .yaml_lines import Lines, line_of, load_yaml


def schema_problem(parameters: Any) -> str | None:
    """Why ``parameters`` is not a JSON Schema object, or None when it is one.

    Checked against the JSON Schema 2020-12 meta-schema; the top level must also declare ``"type": "object"``.
    """
    if not isinstance(parameters, dict):
        return "parameters must be a JSON Schema object"
    try:
        Draft202012Validator.check_schema(parameters)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        return f"not a valid JSON Schema ({exc.message}{' at ' + where if where else ''})"
    if parameters.get("type") != "object":
        return 'parameters must be a JSON Schema object ("type": "object")'
    return None


def check_catalog(tools: list[ToolDefinition], file: str, lines: Lines | None = None,
                  prefix: tuple = ()) -> list[Problem]:
    """Problems with a parsed catalog: duplicate names, parameters that are not a JSON Schema object."""
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for index, tool in enumerate(tools):
        line = line_of(lines, (*prefix, index)) if lines is not None else None
        if tool.name in seen:
            problems.append(Problem(file=file, line=line, field=_field(prefix, index, "name"),
                                    message=f"duplicate tool name '{tool.name}' (also at [{seen[tool.name]}])"))
        else:
            seen[tool.name] = index
        reason = schema_problem(tool.parameters)
        if reason:
            pline = line_of(lines, (*prefix, index, "parameters")) if lines is not None else None
            problems.append(Problem(file=file, line=pline, field=_field(prefix, index, "parameters"), message=reason))
    return problems


def _field(prefix: tuple, index: int, name: str) -> str:
    head = ".".join(str(p) for p in prefix)
    return f"{head}[{index}].{name}" if head else f"[{index}].{name}"


def load_catalog_file(path: Path) -> list[ToolDefinition]:
    """Load and check a curated catalog (YAML list of tool definitions). Raises :class:`InputError`."""
    shown = display_path(path)
    data, lines = load_yaml(path)
    if not isinstance(data, list):
        raise InputError(Problem(file=shown, line=1, message="a catalog must be a list of tool definitions"))
    tools: list[ToolDefinition] = []
    problems: list[Problem] = []
    for index, item in enumerate(data):
        try:
            tools.append(ToolDefinition.model_validate(item))
        except ValidationError as exc:
            for problem in pydantic_problems(exc, file=shown):
                field_path = (index, *(problem.field or "").split(".")) if problem.field else (index,)
                problems.append(Problem(file=shown, line=line_of(lines, field_path),
                                        field=f"[{index}]" + (f".{problem.field}" if problem.field else ""),
                                        message=problem.message))
    if not problems:
        problems.extend(check_catalog(tools, shown, lines))
    if problems:
        raise InputError(problems)
    return tools


def parse_tool_dump(data: Any, file: str) -> list[ToolDefinition]:
    """Tool definitions from a live dump in any supported shape (see module doc). Raises :class:`InputError`."""
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        data = data["tools"]
    if not isinstance(data, list):
        raise InputError(Problem(file=file, message="a live catalog dump must be a JSON list of tools "
                                                    "(or an object with a 'tools' list)"))
    tools: list[ToolDefinition] = []
    problems: list[Problem] = []
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            problems.append(Problem(file=file, field=f"[{index}]", message="a tool must be a JSON object"))
            continue
        if item.get("type") == "function" and isinstance(item.get("function"), dict):
            item = item["function"]
        name = item.get("name")
        if not isinstance(name, str) or not name:
            problems.append(Problem(file=file, field=f"[{index}].name", message="required field is missing"))
            continue
        parameters = item.get("parameters", item.get("inputSchema", item.get("input_schema")))
        if parameters is None:
            parameters = {"type": "object", "properties": {}}
        description = item.get("description") or ""
        if not isinstance(description, str):
            problems.append(Problem(file=file, field=f"[{index}].description", message="must be a string"))
            continue
        tools.append(ToolDefinition(name=name, description=description, parameters=parameters))
    problems.extend(check_catalog(tools, file))
    if problems:
        raise InputError(problems)
    return tools


def load_tool_dump(path: Path) -> list[ToolDefinition]:
    """Load a live catalog dump (JSON). Raises :class:`InputError` naming the file (and line for bad JSON)."""
    shown = display_path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(Problem(file=shown, message="file not found")) from None
    except json.JSONDecodeError as exc:
        raise InputError(Problem(file=shown, line=exc.lineno, message=f"bad JSON: {exc.msg}")) from None
    return parse_tool_dump(data, shown)


def write_catalog_file(path: Path, tools: list[ToolDefinition]) -> None:
    """Write a curated catalog as YAML (block style, key order name, description, parameters)."""
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        yaml.safe_dump([t.as_dict() for t in tools], sort_keys=False, allow_unicode=True, width=110),
        encoding="utf-8",
    )
