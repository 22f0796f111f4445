"""Provider-safe tool names, mapped reversibly.

OpenAI and Anthropic accept tool names matching ``^[a-zA-Z0-9_-]{1,64}$``; BFCL keeps dotted names such as
``spotify.play``. Names that are already safe are kept; others get ``.`` → ``_`` (and any other character
→ ``_``), with a numeric suffix where that would collide. The mapping is per catalog, so replies are
translated back exactly.
"""

from __future__ import annotations

import re

_SAFE = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")


def safe_tool_names(names: list[str]) -> dict[str, str]:
    """``{original: provider_safe}`` for every name; unique, identity for names already safe."""
    mapping: dict[str, str] = {}
    taken = {name for name in names if _SAFE.match(name)}
    for name in names:
        if name in mapping:
            continue
        if _SAFE.match(name):
            mapping[name] = name
            continue
        base = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:60] or "tool"
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base[:58]}_{n}"
        taken.add(candidate)
        mapping[name] = candidate
    return mapping


def reverse(mapping: dict[str, str]) -> dict[str, str]:
    """``{provider_safe: original}`` for translating the names in a reply back."""
    return {safe: original for original, safe in mapping.items()}
