"""Tool definitions and catalogs: versioning, diffs and the live-catalog merge (DESIGN §2, §3).

A tool definition is ``{name, description, parameters}`` with ``parameters`` a JSON Schema object.
``catalog_version`` is the first 12 hex digits of SHA-256 over the canonical JSON of the catalog sorted by
name; ``definition_hash`` the same over one definition. Both are lineage: every stored row carries the
catalog version that produced it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolchoice_pipeline.util.canonical import short_hash

_UNPRINTABLE = ("Cc", "Zl", "Zp")


def printable_tool_name(name: str) -> str:
    """``name`` with each control or line-breaking character replaced by U+FFFD: how a name recorded in a
    session (where any text can appear) is kept, since a catalog refuses such characters."""
    return "".join("\ufffd" if unicodedata.category(char) in _UNPRINTABLE else char for char in name)


class ToolDefinition(BaseModel):
    """One tool an agent may call. ``parameters`` is a JSON Schema object (``{"type": "object", ...}``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    @field_validator("name")
    @classmethod
    def _no_control_characters(cls, name: str) -> str:
        """A name with a control or line-breaking character (``\\n``, ``\\0``, U+2028...) would split or end
        lines in reports, JUnit XML and logs, and no provider accepts it."""
        for index, char in enumerate(name):
            if unicodedata.category(char) in _UNPRINTABLE:
                raise ValueError(
                    f"a tool name may not contain control characters (found U+{ord(char):04X} at position {index + 1})"
                )
        return name

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    @property
    def definition_hash(self) -> str:
        """12-hex hash of this definition's canonical JSON."""
        return short_hash(self.as_dict())

    def to_openai_tool(self) -> dict[str, Any]:
        """The definition in OpenAI's ``tools`` format, as LiteLLM takes it."""
        return {"type": "function", "function": self.as_dict()}


def catalog_version(catalog: Iterable[ToolDefinition]) -> str:
    """12-hex version of a catalog: hash of the canonical JSON of its definitions sorted by name (DESIGN §2)."""
    return short_hash([tool.as_dict() for tool in sorted(catalog, key=lambda t: t.name)])


def merge_live(curated: Iterable[ToolDefinition], live: Iterable[ToolDefinition]) -> list[ToolDefinition]:
    """Curated tools plus live-dump tools whose names the curated catalog lacks; the curated one wins a collision.

    Order: curated tools in their order, then new live tools in theirs.
    """
    merged = list(curated)
    names = {tool.name for tool in merged}
    for tool in live:
        if tool.name not in names:
            merged.append(tool)
            names.add(tool.name)
    return merged


class CatalogDiff(BaseModel):
    """What changed from one catalog to another, by tool name (each list sorted)."""

    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    description_changed: list[str] = Field(default_factory=list)
    parameters_changed: list[str] = Field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.description_changed or self.parameters_changed)

    def to_markdown(self) -> str:
        if not self.changed:
            return "No change in the tool catalog."
        rows = ["| change | tools |", "|---|---|"]
        for label, names in (
            ("added", self.added),
            ("removed", self.removed),
            ("description changed", self.description_changed),
            ("parameters changed", self.parameters_changed),
        ):
            if names:
                rows.append(f"| {label} | {', '.join(names)} |")
        return "\n".join(rows)


def diff_catalogs(old: Iterable[ToolDefinition], new: Iterable[ToolDefinition]) -> CatalogDiff:
    """Tools added, removed, with a changed description, and with changed parameters, from ``old`` to ``new``."""
    before = {t.name: t for t in old}
    after = {t.name: t for t in new}
    common = sorted(before.keys() & after.keys())
    return CatalogDiff(
        added=sorted(after.keys() - before.keys()),
        removed=sorted(before.keys() - after.keys()),
        description_changed=[n for n in common if before[n].description != after[n].description],
        parameters_changed=[n for n in common if before[n].parameters != after[n].parameters],
    )
