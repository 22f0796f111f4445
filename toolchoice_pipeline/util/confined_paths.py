"""Paths named in input files stay inside the directory they are relative to, unless the user allows otherwise.

A suite's ``catalog:``, ``tasks:`` and ``live_catalogs:`` are relative to the suite directory, and the run
configuration's ``cache.path`` to the data directory. A path that leaves its directory (``../../x``, an absolute
path) is refused, so a suite or configuration someone else wrote cannot make a run read or write files
elsewhere. The opt-in is the environment, not the file: ``TOOLCHOICE_ALLOW_OUTSIDE_PATHS=1`` (the person running
the command decides; a hostile file cannot allow itself). The check is lexical (``..`` and absolute paths);
symbolic links inside the directory are followed as placed there.
"""

from __future__ import annotations

from pathlib import PurePath

ALLOW_VARIABLE = "TOOLCHOICE_ALLOW_OUTSIDE_PATHS"


def outside_paths_allowed() -> bool:
    from toolchoice_pipeline.util.environment import flag

    return flag(ALLOW_VARIABLE)


def leaves_directory(relative: str) -> bool:
    """True when ``relative`` is absolute or climbs out of the directory it is relative to."""
    path = PurePath(relative)
    if path.is_absolute() or path.drive:
        return True
    depth = 0
    for part in path.parts:
        depth += -1 if part == ".." else (0 if part in (".", "") else 1)
        if depth < 0:
            return True
    return False


def confinement_problem(relative: str, directory_name: str) -> str | None:
    """Why ``relative`` may not be used (it leaves ``directory_name``, and outside paths are not allowed), or None."""
    if not leaves_directory(relative) or outside_paths_allowed():
        return None
    return (
        f"'{relative}' points outside the {directory_name}; paths are relative to it and stay inside it "
        f"(set {ALLOW_VARIABLE}=1 in the environment to allow this one)"
    )
