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
from functools import lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from pydantic import ValidationError

from toolchoice_pipeline.suites.catalog import ToolDefinition, printable_tool_name
from toolchoice_pipeline.suites.schema_safety import schema_safety_problems
from toolchoice_pipeline.util.errors import InputError, Problem, display_path, field_path, validation_errors
from toolchoice_pipeline.util.json_text import load_json
from toolchoice_pipeline.util.text_files import read_utf8
from toolchoice_pipeline.util.yaml_lines import Lines, line_of, load_yaml, node_lines

JSON_SCHEMA_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")


def schema_problem(parameters: Any) -> str | None:
    """Why ``parameters`` is not a JSON Schema object, or None when it is one.

    Checked against the JSON Schema 2020-12 meta-schema; the top level must also declare ``"type": "object"``.
    """
    found = schema_problems(parameters)
    if not found:
        return None
    where, message = found[0]
    return f"{message} at {'.'.join(map(str, where))}" if where else message


def schema_problems(parameters: Any) -> list[tuple[tuple, str]]:
    """Every reason ``parameters`` is not a JSON Schema object, as ``(path inside parameters, message)``.

    The path is empty for the top level. Rules: a JSON object, valid under the JSON Schema 2020-12 meta-schema
    (each violation reported), with ``"type": "object"`` at the top level (tools take named arguments), every
    regex runnable by RE2 and every ``$ref`` resolving inside the schema without a loop (:mod:`.schema_safety`).
    Results are remembered per schema (by its ``repr``) for the process: the meta-schema check costs about a
    millisecond, and every step of a release loads (and checks) the same suite again.
    """
    if not isinstance(parameters, dict):
        return [((), f"parameters must be a JSON Schema object, not {_kind(parameters)}")]
    key = repr(parameters)
    found = _CHECKED_SCHEMAS.get(key)
    if found is None:
        if len(_CHECKED_SCHEMAS) >= MAX_CHECKED_SCHEMAS:
            _CHECKED_SCHEMAS.pop(next(iter(_CHECKED_SCHEMAS)))
        found = _CHECKED_SCHEMAS[key] = tuple(_meta_schema_problems(parameters))
    return list(found)


MAX_CHECKED_SCHEMAS = 4096
_CHECKED_SCHEMAS: dict[str, tuple[tuple[tuple, str], ...]] = {}
_META_SCHEMA = Draft202012Validator(Draft202012Validator.META_SCHEMA)


@lru_cache(maxsize=1)
def _fast_meta_schema() -> Any:
    """The 2020-12 meta-schema compiled by jsonschema-rs (Rust): about 100× faster than walking it in Python, so
    a 10,000-tool catalog checks in well under a second. It only says valid or not; the problems of an invalid
    schema are worded by the ``jsonschema`` library, as before."""
    import jsonschema_rs

    return jsonschema_rs.validator_for(Draft202012Validator.META_SCHEMA)


def _meta_schema_problems(parameters: dict[str, Any]) -> list[tuple[tuple, str]]:
    problems: list[tuple[tuple, str]] = []
    valid = _fast_meta_schema().is_valid(parameters)
    errors = [] if valid else _META_SCHEMA.iter_errors(parameters)
    for error in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        where = tuple(error.absolute_path)
        if where and where[-1] == "type" and isinstance(error.instance, str):
            message = f"'{error.instance}' is not a JSON Schema type (use one of {', '.join(JSON_SCHEMA_TYPES)})"
        else:
            message = error.message
        problems.append((where, f"not a valid JSON Schema: {message}"))
    if not problems:
        problems.extend(schema_safety_problems(parameters))
    kind = parameters.get("type")
    if kind != "object" and not any(where == ("type",) for where, _ in problems):
        found = "it is missing" if kind is None else f"found {json.dumps(kind)}"
        problems.append(
            (
                ("type",) if kind is not None else (),
                f'the top level of parameters must be a JSON Schema object with "type": "object" ({found})',
            )
        )
    return problems


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return "null" if value is None else type(value).__name__


def check_catalog(
    tools: list[ToolDefinition], file: str, lines: Lines | None = None, prefix: tuple = ()
) -> list[Problem]:
    """Problems with a parsed catalog: duplicate names, parameters that are not a JSON Schema object."""
    return _check_indexed(list(enumerate(tools)), file, lines, prefix)


def _check_indexed(
    indexed: list[tuple[int, ToolDefinition]], file: str, lines: Lines | None, prefix: tuple
) -> list[Problem]:
    problems: list[Problem] = []
    seen: dict[str, int] = {}

    def line(*path) -> int | None:
        return line_of(lines, (*prefix, *path)) if lines is not None else None

    for index, tool in indexed:
        if tool.name in seen:
            first = seen[tool.name]
            also = field_path((*prefix, first)) + (f", line {line(first)}" if line(first) else "")
            problems.append(
                Problem(
                    file=file,
                    line=line(index, "name"),
                    field=field_path((*prefix, index, "name")),
                    message=f"duplicate tool name '{tool.name}' (also at {also})",
                )
            )
        else:
            seen[tool.name] = index
        for where, reason in schema_problems(tool.parameters):
            path = (index, "parameters", *where)
            problems.append(Problem(file=file, line=line(*path), field=field_path((*prefix, *path)), message=reason))
    return problems


def load_catalog_file(path: Path) -> list[ToolDefinition]:
    """Load and check a curated catalog (YAML list of tool definitions). Raises :class:`InputError`.

    An empty file is an empty catalog (the suite check reports it when no task brings its own tools). A catalog
    is read once per process while the file is unchanged (same path, size, modification time and inode): every
    stage of a run loads the suite again, and a 10,000-tool catalog costs about a second to read and check.
    """
    try:
        info = path.stat()
        key = (str(path.resolve()), info.st_size, info.st_mtime_ns, info.st_ino)
    except OSError:
        key = None
    if key is not None and key in _LOADED:
        return list(_LOADED[key])
    tools = _load_catalog_file(path)
    if key is not None:
        if len(_LOADED) >= 8:
            _LOADED.pop(next(iter(_LOADED)))
        _LOADED[key] = tuple(tools)
    return tools


_LOADED: dict[tuple, tuple[ToolDefinition, ...]] = {}  # ToolDefinition is frozen: sharing one is safe


def _load_catalog_file(path: Path) -> list[ToolDefinition]:
    shown = display_path(path)
    data, lines = load_yaml(path)
    if data is None:
        return []
    if not isinstance(data, list):
        raise InputError(
            Problem(
                file=shown,
                line=1,
                message="a catalog must be a YAML list of tool definitions "
                "(- name: ..., description: ..., parameters: ...)",
            )
        )
    indexed: list[tuple[int, ToolDefinition]] = []
    problems: list[Problem] = []
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            problems.append(
                Problem(
                    file=shown,
                    line=line_of(lines, (index,)),
                    field=f"[{index}]",
                    message="a tool definition must be a mapping with name, description and "
                    f"parameters, not {_kind(item)}",
                )
            )
            continue
        try:
            indexed.append((index, ToolDefinition.model_validate(item)))
        except ValidationError as exc:
            for loc, message in validation_errors(exc, ToolDefinition):
                problems.append(
                    Problem(
                        file=shown, line=line_of(lines, (index, *loc)), field=field_path((index, *loc)), message=message
                    )
                )
    problems.extend(_check_indexed(indexed, shown, lines, ()))
    if problems:
        problems.sort(key=lambda p: p.line or 0)
        raise InputError(problems)
    return [tool for _, tool in indexed]


def parse_tool_dump(data: Any, file: str, lines: Lines | None = None) -> list[ToolDefinition]:
    """Tool definitions from a live dump in any supported shape (see module doc). Raises :class:`InputError`.

    Problems name the field as it is in the dump (``tools[3].inputSchema.properties.q.type``), and its line
    when ``lines`` (from :func:`toolchoice_pipeline.util.yaml_lines.node_lines`) is given.
    """
    root: tuple = ()
    if isinstance(data, dict) and isinstance(data.get("result"), dict) and "tools" in data["result"]:
        data, root = data["result"], ("result",)  # a whole JSON-RPC response to tools/list
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        data, root = data["tools"], (*root, "tools")
    if not isinstance(data, list):
        raise InputError(
            Problem(
                file=file,
                line=1 if lines else None,
                message="a live catalog dump must be a JSON list of tools "
                "(or an object with a 'tools' list, as MCP tools/list returns)",
            )
        )
    tools: list[ToolDefinition] = []
    found: list[tuple[tuple, str]] = []
    seen: dict[str, tuple] = {}
    for index, item in enumerate(data):
        at: tuple = (*root, index)
        if not isinstance(item, dict):
            found.append((at, f"a tool must be a JSON object, not {_kind(item)}"))
            continue
        if item.get("type") == "function" and isinstance(item.get("function"), dict):
            item, at = item["function"], (*at, "function")
        before = len(found)
        name = item.get("name")
        if name is None:
            found.append(((*at, "name"), "required field is missing"))
        elif not isinstance(name, str) or not name.strip():
            found.append(((*at, "name"), f"must be a non-empty string (got {json.dumps(name)})"))
        elif printable_tool_name(name) != name:
            found.append(
                ((*at, "name"), f"a tool name may not contain control characters (got {json.dumps(name)[:60]})")
            )
        elif name in seen:
            first = seen[name]
            where = field_path(first) + (f", line {line_of(lines, first)}" if lines else "")
            found.append(((*at, "name"), f"duplicate tool name '{name}' (also at {where})"))
        else:
            seen[name] = (*root, index)
        description = item.get("description")
        if description is not None and not isinstance(description, str):
            found.append(((*at, "description"), f"must be a string (got {json.dumps(description)[:40]})"))
        key = next((k for k in ("parameters", "inputSchema", "input_schema") if k in item), "parameters")
        parameters = item.get(key)
        if parameters is None:
            parameters = {"type": "object", "properties": {}}
        for schema_path, reason in schema_problems(parameters):
            found.append(((*at, key, *schema_path), reason))
        if len(found) == before:
            tools.append(ToolDefinition(name=name, description=description or "", parameters=parameters))
    if found:
        raise InputError(
            [
                Problem(
                    file=file, line=line_of(lines, path) if lines else None, field=field_path(path), message=message
                )
                for path, message in found
            ]
        )
    return tools


def load_tool_dump(path: Path) -> list[ToolDefinition]:
    """Load a live catalog dump (JSON). Raises :class:`InputError` naming the file, the line and the field."""
    shown = display_path(path)
    text = read_utf8(path)
    data = load_json(text, shown)
    try:
        return parse_tool_dump(data, shown)
    except InputError:
        return parse_tool_dump(data, shown, lines=node_lines(text))  # again, only to name the lines


def write_catalog_file(path: Path, tools: list[ToolDefinition]) -> None:
    """Write a curated catalog as YAML (block style, key order name, description, parameters)."""
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        yaml.safe_dump([t.as_dict() for t in tools], sort_keys=False, allow_unicode=True, width=110),
        encoding="utf-8",
    )
