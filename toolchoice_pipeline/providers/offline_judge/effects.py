"""Read requests and tools that change state: rubric rule "a tool that changes or deletes state is incorrect
for a request that only asks to read or look" (used by the offline judge, :mod:`toolchoice_pipeline.providers.offline_judge`). Pure functions.

- A request *only reads* when it has a reading word ("show", "what", "list", "find", "get", "check",
  "explain"...) and no word asking for a change (:data:`CHANGE_WORDS`: "write", "delete", "fix", "add",
  "install", "book", "send"...), compared by Snowball stem.
- A tool *changes state* when its name has a mutation word ("delete_dashboard", "update_user", "Write") or its
  description opens with one ("Create a new local file...", "Change an existing local file..."). A general
  tool that only *can* change state among other things ("Run a shell command") does not count: what it does
  depends on its arguments.
"""

from __future__ import annotations

import re
from typing import Any

from toolchoice_pipeline.providers.offline_judge.fit import MUTATION_VERBS, _stem, words

STATE_WORDS = frozenset(MUTATION_VERBS) | frozenset(
    "set drop purge destroy erase wipe truncate reset clear cancel kill revoke patch put post upload".split()
)
CHANGE_WORDS = STATE_WORDS | frozenset(
    "add fix bump install uninstall commit push deploy book send order buy make build generate stop start "
    "restart upgrade refactor implement migrate apply publish schedule submit register assign transfer pay "
    "play convert rm mv cp mkdir touch format lint".split()
)
READ_WORDS = frozenset(
    "show what whats which where who when why how list find get fetch look open print read display view check "
    "explain summarise summarize tell search count is are does do see inspect describe".split()
)

_CHANGE_STEMS = frozenset(_stem(w) for w in CHANGE_WORDS)
_STATE_STEMS = frozenset(_stem(w) for w in STATE_WORDS)
_READ_STEMS = frozenset(_stem(w) for w in READ_WORDS)


def only_reads(request: str) -> bool:
    """Whether ``request`` asks only to read or look (see the module docstring)."""
    stems = {_stem(w.replace("'", "")) for w in words(request)}
    return bool(stems & _READ_STEMS) and not stems & _CHANGE_STEMS


def changes_state(tool: dict[str, Any]) -> str | None:
    """Why ``tool`` (a catalog entry ``{name, description, parameters}``) changes state: the word of its name
    or the opening of its description that says so; None when it does not."""
    name_words = [w for w in words(re.sub(r"[._-]", " ", str(tool.get("name") or "")))]
    for word in name_words:
        if _stem(word) in _STATE_STEMS:
            return f"its name says {word!r}"
    description = str(tool.get("description") or "").strip()
    opening = words(description[:40])[:1]
    if opening and _stem(opening[0]) in _STATE_STEMS:
        return f"its description opens {description[:60]!r}"
    return None
