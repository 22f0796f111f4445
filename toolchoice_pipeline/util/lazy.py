"""Lazy re-exports for package ``__init__`` modules: a package names what it re-exports and from which module,
and the module is imported on first use of the name (PEP 562 module ``__getattr__``). Importing a package (or
one light module inside it) then costs only what it uses: ``toolchoice --help`` never imports LiteLLM, Dagster or
DuckDB because ``toolchoice_pipeline.execution`` no longer imports the runner when ``execution.offline`` is read.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return ``(__getattr__, __dir__)`` for ``package``: ``exports`` maps an attribute name to the submodule
    (relative to ``package``, e.g. ``".runner"``) that defines it. An unknown name raises ``AttributeError`` as
    a plain module would."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        globals_of_package = importlib.import_module(package).__dict__
        globals_of_package[name] = value  # later reads skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(importlib.import_module(package).__dict__) | set(exports))

    return __getattr__, __dir__
