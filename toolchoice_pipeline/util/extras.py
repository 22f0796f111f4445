"""Optional dependencies (``[project.optional-dependencies]`` in ``pyproject.toml``) that only some commands need.

:func:`require` refuses such a command before it does any work, naming the extra that installs the package:
a :class:`MissingExtra` is an :class:`~toolchoice_pipeline.util.errors.InputError`, so the CLI exits 2 with it.
"""

from __future__ import annotations

import importlib.util

from toolchoice_pipeline.util.errors import InputError, Problem

#: Extra name -> (the module it provides, the distribution pip installs for it).
EXTRAS = {
    "charts": ("matplotlib", "matplotlib"),
}


class MissingExtra(InputError):
    """A command needs a package of an extra that is not installed."""

    def __init__(self, extra: str, needed_for: str):
        module, package = EXTRAS[extra]
        super().__init__(
            Problem(
                file="<command line>",
                message=f"{needed_for} needs {package} (module '{module}'), which is not installed: install the "
                f"{extra} extra with `pip install -e '.[{extra}]'` or `uv sync --locked --inexact --extra {extra}`",
            )
        )
        self.extra = extra


def installed(extra: str) -> bool:
    """Whether the module of ``extra`` (a key of :data:`EXTRAS`) can be imported; looks it up without importing it."""
    module, _ = EXTRAS[extra]
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module set to None in sys.modules
        return False


def require(extra: str, needed_for: str) -> None:
    """Raise :class:`MissingExtra` unless the module of ``extra`` (a key of :data:`EXTRAS`) can be imported.
    ``needed_for`` names what needs it (``"toolchoice run --chart"``)."""
    if not installed(extra):
        raise MissingExtra(extra, needed_for)


def missing_note(extra: str, left_out: str) -> str:
    """One line saying what was left out for want of ``extra`` and how to install it."""
    module, package = EXTRAS[extra]
    return (
        f"{left_out} left out: {package} (module '{module}') is not installed; install the {extra} extra with "
        f"`pip install -e '.[{extra}]'` or `uv sync --locked --inexact --extra {extra}`"
    )
