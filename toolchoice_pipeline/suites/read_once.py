"""Reading a command's inputs once: while :func:`inputs_read_once` is active (``toolchoice run`` holds it for the
whole command), a suite (:func:`~.suite.load_suite`) and the run configuration (:func:`~.config.load_run_config`)
are parsed once and handed out again as long as the files they were read from are unchanged (same size,
modification time and inode). Outside it, every call reads the files, as before.

In one ``toolchoice run`` the suite is needed by the command (to refuse bad input before any run), by the
observation of the suite files and by the release's snapshot, and the configuration by the command and the
snapshot: each is parsed once now, as is a release document the run reads (its baseline's ``scores.json``,
:meth:`~toolchoice_pipeline.releases.store.ReleaseStore.read_scores`). :func:`forget_inputs` drops the suites
once the snapshot is pinned (the later stages work from the pin, so the tasks are not held for the rest of the run).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: ``(kind, key) → (files' signatures, value, extra)`` while a scope is active; None outside any.
_held: dict[tuple[str, str], tuple[tuple, Any, Any]] | None = None
_lock = threading.Lock()


@contextmanager
def inputs_read_once() -> Iterator[None]:
    """Parse each suite and run configuration once while the block runs (nested blocks share the outer one)."""
    global _held
    with _lock:
        outer = _held is not None
        if not outer:
            _held = {}
    try:
        yield
    finally:
        if not outer:
            with _lock:
                _held = None


def forget_inputs(*kinds: str) -> None:
    """Drop what the active scope holds of ``kinds`` (``suite``, ``run_config``, ...; none named: everything);
    the next load reads the files again."""
    with _lock:
        if _held is not None:
            for key in [key for key in _held if not kinds or key[0] in kinds]:
                del _held[key]


def signature(paths: Sequence[Path]) -> tuple:
    """``(path, size, mtime_ns, inode)`` of each file (None for one that cannot be read)."""
    found: list[tuple] = []
    for path in paths:
        try:
            info = path.stat()
        except OSError:
            found.append((str(path), None))
            continue
        found.append((str(path), info.st_size, info.st_mtime_ns, info.st_ino))
    return tuple(found)


def held(kind: str, key: str, accept: Callable[[Any], bool] = lambda extra: True) -> Any | None:
    """The value held for ``(kind, key)`` when its files are unchanged and ``accept(extra)``; else None."""
    with _lock:
        entry = _held.get((kind, key)) if _held is not None else None
    if entry is None:
        return None
    files, value, extra = entry
    if not accept(extra) or signature([Path(name) for name, *_ in files]) != files:
        return None
    return value


def hold(kind: str, key: str, files: tuple, value: T, extra: Any = None) -> T:
    """Hold ``value`` for ``(kind, key)`` while a scope is active; ``files``: the :func:`signature` of the files it
    was read from, taken *before* reading them (a file changed meanwhile then differs at the next lookup).
    Returns ``value``."""
    with _lock:
        if _held is not None:
            _held[(kind, key)] = (files, value, extra)
    return value


def active() -> bool:
    """Whether a scope is active."""
    return _held is not None
