"""Regular expressions from users (argument matchers, schema ``pattern``s) on a linear-time engine.

A suite's ``{"regex": ...}`` matcher and a tool schema's ``pattern`` / ``patternProperties`` are run with
google-re2 (RE2): matching takes time linear in the text, so a pattern such as ``(a+)+$`` cannot hang a run
the way a backtracking engine (Python's ``re``) does. RE2's syntax is Python's minus what needs backtracking:
no lookaround (``(?=``, ``(?<=``...), no backreferences (``\\1``), ``\\z`` rather than ``\\Z``; ``\\w``, ``\\d``
and ``\\b`` are ASCII (use ``\\pL`` / ``\\p{N}`` for other scripts). A pattern RE2 cannot compile is refused by
``toolchoice validate`` with RE2's reason (:class:`UserRegexError`).
"""

from __future__ import annotations

import json
import unicodedata
from functools import lru_cache
from typing import Any

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print its own error line on stderr; ours is raised instead
# Compiled programs are bounded (RE2's default is 8 MiB per pattern): a huge counted repetition is refused.
MAX_PATTERN_CHARS = 10_000


class UserRegexError(ValueError):
    """A user regex that RE2 cannot run (the message names the pattern and RE2's reason)."""


@lru_cache(maxsize=4096)
def compile_user_regex(pattern: str) -> Any:
    """``pattern`` (NFC-normalised) compiled by RE2. Raises :class:`UserRegexError` when it cannot be."""
    shown = json.dumps(pattern if len(pattern) <= 60 else pattern[:57] + "...", ensure_ascii=False)
    if len(pattern) > MAX_PATTERN_CHARS:
        raise UserRegexError(f"regex {shown} is longer than {MAX_PATTERN_CHARS} characters")
    try:
        return re2.compile(unicodedata.normalize("NFC", pattern), _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        hint = (
            " (RE2, the linear-time engine user regexes run on, has no lookaround or backreferences; "
            "write \\z for the end of text)"
            if "perl operator" in reason or "escape" in reason
            else ""
        )
        raise UserRegexError(f"regex {shown} does not compile: {reason}{hint}") from None


def user_regex_search(pattern: str, text: str) -> bool:
    """True when ``pattern`` is found in ``text`` (RE2 search). Raises :class:`UserRegexError`."""
    return compile_user_regex(pattern).search(text) is not None
