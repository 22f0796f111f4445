"""Lineage: the identity every stored row carries, so a score traces back to the exact catalog that produced it.

Every warehouse row has ``release_id``, ``suite``, ``catalog_version`` (12-hex hash of the tool catalog,
DESIGN §2) and ``run_id`` (the Dagster run id, or a fresh id for a run outside Dagster).
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass

LINEAGE_COLUMNS = ("release_id", "suite", "catalog_version", "run_id")


def new_run_id() -> str:
    """A fresh run id (32 hex digits, the form Dagster run ids take without dashes)."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class Lineage:
    """The four lineage columns of every stored row."""

    release_id: str
    suite: str
    catalog_version: str
    run_id: str

    def columns(self) -> dict[str, str]:
        """``{column: value}`` for the four lineage columns, in :data:`LINEAGE_COLUMNS` order."""
        return asdict(self)
