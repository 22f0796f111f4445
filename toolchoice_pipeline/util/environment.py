"""Environment variables read as yes/no flags: one meaning for every spelling, and an error for the rest.

``TOOLCHOICE_DEBUG=0`` must mean off, not "set, so on". :func:`flag` reads ``1``/``true``/``yes``/``on`` as on and
unset, empty, ``0``/``false``/``no``/``off`` as off (any case, spaces ignored); anything else raises
:class:`~.errors.InputError` naming the variable, so a typo is never silently taken either way.
"""

from __future__ import annotations

import os

from toolchoice_pipeline.util.errors import InputError, Problem

ON = frozenset({"1", "true", "yes", "on"})
OFF = frozenset({"", "0", "false", "no", "off"})


def flag(name: str) -> bool:
    """Whether the flag variable ``name`` is on (see the module doc); raises :class:`InputError` otherwise."""
    value = os.environ.get(name, "").strip().lower()
    if value in ON:
        return True
    if value in OFF:
        return False
    raise InputError(
        Problem(
            file="<environment>",
            field=name,
            message=f"{os.environ[name]!r} is not a yes/no value: set 1 (on) or 0 (off), or unset it",
        )
    )
