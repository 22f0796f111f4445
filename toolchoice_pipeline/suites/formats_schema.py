"""JSON Schemas of our file formats, generated from the pydantic models (for editors and CI linting)."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.config import RunConfig
from toolchoice_pipeline.suites.suite import SuiteSpec
from toolchoice_pipeline.suites.tasks import Task


def format_schemas() -> dict[str, dict[str, Any]]:
    """``{"task": ..., "catalog": ..., "suite": ..., "config": ...}``: JSON Schema (2020-12) of each format."""
    return {
        "task": Task.model_json_schema(),
        "catalog": TypeAdapter(list[ToolDefinition]).json_schema(),
        "suite": SuiteSpec.model_json_schema(),
        "config": RunConfig.model_json_schema(by_alias=True),
    }
