"""What a tool definition's own schema gets wrong beyond being valid JSON Schema (used by :mod:`.validate`).

Each finding is ``(path inside the tool definition, message, is_error)``:

- a ``required`` entry naming no property of its object (at any depth): an **error** when the object allows no
  other property (``additionalProperties: false``), since then no call is valid; else a warning (a model reading
  the schema never learns to send it, so documented calls are all invalid);
- no description: a warning (the model chooses tools by their descriptions);
- a name OpenAI and Anthropic refuse (``^[a-zA-Z0-9_-]{1,64}$``): a warning, since the run sends it under a
  provider-safe name and maps replies back (:mod:`toolchoice_pipeline.execution.tool_names`), so the model sees
  a name other than the catalog's.
"""

from __future__ import annotations

import re
from typing import Any

from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.schema_safety import walk_subschemas

PROVIDER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}\Z")

Finding = tuple[tuple, str, bool]


MAX_REMEMBERED = 20_000
_REMEMBERED: dict[int, tuple[ToolDefinition, list[Finding]]] = {}


def tool_findings(tool: ToolDefinition) -> list[Finding]:
    """The findings of one tool definition (see the module docstring), in path order. Remembered per definition
    object for the process (a definition is frozen; a loaded catalog keeps its objects), since every stage of a
    run loads the suite again."""
    entry = _REMEMBERED.get(id(tool))
    if entry is not None and entry[0] is tool:
        return list(entry[1])
    findings = _tool_findings(tool)
    if len(_REMEMBERED) >= MAX_REMEMBERED:
        _REMEMBERED.pop(next(iter(_REMEMBERED)))
    _REMEMBERED[id(tool)] = (tool, findings)
    return list(findings)


def _tool_findings(tool: ToolDefinition) -> list[Finding]:
    findings: list[Finding] = []
    if not PROVIDER_NAME.match(tool.name):
        findings.append(
            (
                ("name",),
                f"OpenAI and Anthropic refuse the tool name {tool.name!r} (they take ^[a-zA-Z0-9_-]{{1,64}}$): "
                "runs send it under a provider-safe name, so models see a different name",
                False,
            )
        )
    if not tool.description.strip():
        findings.append(
            (("description",), "the tool has no description: models choose tools by their descriptions", False)
        )
    findings.extend(
        (("parameters", *path), message, error) for path, message, error in required_findings(tool.parameters)
    )
    return findings


def required_findings(schema: dict[str, Any]) -> list[Finding]:
    """``required`` entries that name no property of their object, at any depth of ``schema``."""
    mentions = repr(schema).count("'required'")  # the schema's text, built in C: most need no walk
    if not mentions:
        return []
    top_only = mentions == 1 and "required" in schema
    findings: list[Finding] = []
    for path, sub in [((), schema)] if top_only else walk_subschemas(schema):
        required, properties = sub.get("required"), sub.get("properties")
        # Only an object that lists its properties: a required list in an allOf/anyOf branch names the parent's.
        if not isinstance(required, list) or not isinstance(properties, dict) or sub.get("patternProperties"):
            continue
        names = set(properties)
        closed = sub.get("additionalProperties") is False or sub.get("unevaluatedProperties") is False
        for index, name in enumerate(required):
            if isinstance(name, str) and name not in names:
                consequence = (
                    "and additionalProperties is false, so no call can be valid"
                    if closed
                    else "so a call that follows the schema always misses it"
                )
                findings.append(
                    (
                        (*path, "required", index),
                        f"required names '{name}', which is not a property, {consequence}",
                        closed,
                    )
                )
    return findings
