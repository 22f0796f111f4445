"""gitleaks' rule set, applied to text the way gitleaks applies it to a file's content.

Source: ``gitleaks.toml`` beside this module, gitleaks' default configuration (``config/gitleaks.toml`` of
https://github.com/gitleaks/gitleaks, MIT licence) vendored unchanged; its header names the commit. gitleaks
maintains about 220 rules for current key formats (Hugging Face, Databricks, DigitalOcean, Vault, Atlassian,
Grafana...), with keywords, entropy thresholds and allowlists; refreshing the file is how the sanitiser stays
current (docs/ingest.md).

The rules are Go ``regexp`` (RE2) patterns, so they run on google-re2 (the same syntax, linear time). What is
honoured, as gitleaks does it: a rule runs only when one of its ``keywords`` is in the lower-cased text; the
secret is the ``secretGroup`` (else the first non-empty group, else the whole match); a secret whose Shannon
entropy is not above the rule's ``entropy`` is kept; the global and per-rule allowlists (``regexes`` against the
secret, the match or the line as ``regexTarget`` says; ``stopwords`` in the lower-cased secret). Rules and
allowlists that depend on a file path (``path``, ``paths`` with ``condition = "AND"``) cannot apply to a
transcript's text and are left out.
"""

from __future__ import annotations

import math
import tomllib
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import re2

RULES_FILE = Path(__file__).with_name("gitleaks.toml")


@dataclass(frozen=True)
class _Allowlist:
    target: str  # "secret", "match" or "line"
    regexes: tuple[Any, ...]
    stopwords: tuple[str, ...]

    def allows(self, secret: str, match: str, line: str) -> bool:
        subject = {"secret": secret, "match": match, "line": line}[self.target]
        if any(pattern.search(subject) for pattern in self.regexes):
            return True
        lower = secret.lower()
        return any(word in lower for word in self.stopwords)


@dataclass(frozen=True)
class GitleaksRule:
    """One gitleaks rule: ``kind`` is its id in snake_case (``huggingface_access_token``)."""

    kind: str
    pattern: Any  # a compiled re2 pattern
    keywords: tuple[str, ...]
    secret_group: int
    entropy: float
    allowlists: tuple[_Allowlist, ...]

    def secrets(self, text: str, lower: str, global_allowlist: _Allowlist) -> Iterator[tuple[int, int]]:
        """``(start, end)`` of each secret this rule finds in ``text`` (``lower`` is ``text.lower()``)."""
        if self.keywords and not any(keyword in lower for keyword in self.keywords):
            return
        for match in self.pattern.finditer(text):
            group = self._group(match)
            start, end = match.span(group)
            secret = text[start:end]
            if not secret or (self.entropy and shannon_entropy(secret) <= self.entropy):
                continue
            whole = match.group(0)
            line_start = text.rfind("\n", 0, match.start()) + 1
            line_end = text.find("\n", match.end())
            line = text[line_start:line_end if line_end >= 0 else len(text)]
            if any(a.allows(secret, whole, line) for a in (global_allowlist, *self.allowlists)):
                continue
            yield start, end

    def _group(self, match: Any) -> int:
        if self.secret_group:
            return self.secret_group
        for index in range(1, (match.re.groups or 0) + 1):
            if match.group(index):
                return index
        return 0


def shannon_entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character (gitleaks' measure)."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _allowlist(raw: dict[str, Any]) -> _Allowlist | None:
    if raw.get("paths") and raw.get("condition", "OR").upper() == "AND":
        return None  # needs a file path to match as well
    if not raw.get("regexes") and not raw.get("stopwords"):
        return None  # path- or commit-only
    return _Allowlist(raw.get("regexTarget", "secret"), tuple(re2.compile(r) for r in raw.get("regexes", ())),
                      tuple(word.lower() for word in raw.get("stopwords", ())))


@lru_cache(maxsize=1)
def gitleaks_rules() -> tuple[tuple[GitleaksRule, ...], _Allowlist]:
    """The rules of :data:`RULES_FILE` that apply to text without a file path, and the global allowlist."""
    with RULES_FILE.open("rb") as handle:
        config = tomllib.load(handle)
    rules = []
    for raw in config["rules"]:
        if "regex" not in raw or "path" in raw:
            continue
        allowlists = tuple(a for a in (_allowlist(x) for x in raw.get("allowlists", ())) if a is not None)
        rules.append(GitleaksRule(
            kind=raw["id"].replace("-", "_"), pattern=re2.compile(raw["regex"]),
            keywords=tuple(k.lower() for k in raw.get("keywords", ())), secret_group=raw.get("secretGroup", 0),
            entropy=float(raw.get("entropy", 0.0)), allowlists=allowlists))
    global_allowlist = _allowlist(config.get("allowlist", {})) or _Allowlist("secret", (), ())
    return tuple(rules), global_allowlist
