"""One process at a time per release: a lock file that names its holder.

``toolchoice run`` holds ``<data-dir>/locks/<release_id>.lock`` from before it creates its Dagster run until it
exits. The lock is an advisory ``flock`` on the file, which the kernel releases when the holding process ends
however it ends (SIGKILL, a crash): a dead holder's lock is taken over by the next run, with no pid check and no
age to guess. The file's content, ``{"pid", "host", "since"}`` (``since`` in ISO 8601 UTC), only names the
holder for the refusal message; it is rewritten by each new holder and never removed (removing it would let a
third process lock a new file while the second still holds the old one).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from toolchoice_pipeline.util.errors import InputError, Problem, display_path


def lock_path(data_dir: Path, release_id: str) -> Path:
    """``<data-dir>/locks/<release_id>.lock`` (``release_id`` already checked: a file name)."""
    return data_dir / "locks" / f"{release_id}.lock"


def _holder(fd: int) -> str:
    """``pid 123 on host h since 2026-12-02T04:50:01Z`` from the lock file's content, or what is known of it."""
    try:
        data = json.loads(os.pread(fd, 4096, 0).decode("utf-8", "replace") or "{}")
        return f"pid {int(data['pid'])} on host {data['host']} since {data['since']}"
    except (ValueError, TypeError, KeyError, OSError):
        return "a process that has not yet written its name"


@contextlib.contextmanager
def release_lock(data_dir: Path, release_id: str) -> Iterator[None]:
    """Hold the release's lock while the block runs; raise :class:`InputError` at once (never wait) when another
    process holds it, naming that process (pid, host, since) and the lock file."""
    path = lock_path(data_dir, release_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(
                Problem(
                    file="<command line>",
                    field="--release",
                    message=f"release '{release_id}' is already running ({_holder(fd)}; lock "
                    f"{display_path(path)}): wait for it to finish, or stop that process and run again to resume",
                )
            ) from None
        since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        text = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": since}).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, text, 0)
        yield
    finally:
        os.close(fd)  # releases the flock
