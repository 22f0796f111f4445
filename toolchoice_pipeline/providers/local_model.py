"""The shape of a ``local/<name>`` model: ``(messages, tools, params) -> assistant message``, OpenAI chat format."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

LocalModel = Callable[[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]], dict[str, Any]]
