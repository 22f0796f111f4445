"""The shape of a ``local/<name>`` model: ``(messages, tools, params) -> assistant message``, OpenAI chat format."""

from __future__ import annotations

from typing import Any, Callable

LocalModel = Callable[[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]], dict[str, Any]]
