"""Canonical JSON and the short hashes built on it (DESIGN §2).

Canonical JSON here is ``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``
encoded as UTF-8: sorted keys, no whitespace, non-ASCII characters written as themselves (as RFC 8785 and
JavaScript's ``JSON.stringify`` do). A short hash is the first 12 hex digits of its SHA-256.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Canonical JSON text of ``value`` (sorted keys, no whitespace, UTF-8 characters unescaped)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def short_hash(value: Any) -> str:
    """First 12 hex digits of the SHA-256 of ``value``'s canonical JSON (``str`` values are hashed as JSON too)."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()[:12]
