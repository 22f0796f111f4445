"""The sanitiser: secrets, e-mail addresses and user names out of every text before it is stored or judged.

Every string an ingest keeps (prompts, assistant text, tool-call arguments, tool results, tool descriptions
from traces, file names in messages) goes through :meth:`Sanitiser.text` first. A match is replaced by a
typed placeholder, ``[REDACTED:<kind>]``. Three rule sources run in order, each on what the one before left:

1. our patterns (:data:`KINDS`): whole private-key blocks, ``Authorization`` headers, passwords and tokens in
   URLs, ``mysql -p``, ``.netrc``, ``password=``-style assignments, e-mail addresses, home-directory user names,
   and a few key formats typed more precisely than the sets below;
2. our rules for current key formats (:data:`.secret_rules.KEY_FORMATS`: Hugging Face, Databricks,
   DigitalOcean, Vault, Atlassian, Grafana, npm, PyPI...), each kind named by the service, then the generic
   rule for a high-entropy value assigned to a secret-like name (:data:`.secret_rules.GENERIC_API_KEY`);
3. the regex plugins of `detect-secrets <https://github.com/Yelp/detect-secrets>`_, read from the installed
   package at run time (see :func:`detect_secrets_plugins`). Its keyword and high-entropy detectors are left
   out: they flag identifiers, hashes and UUIDs that an evaluation needs to keep.

Before them, a secret split across lines or string literals (``"abc\\`` newline ``def"``, ``"abc" "def"``,
``"abc" +`` newline ``"def"``, base64 wrapped at a fixed width) is looked for in the text's joined view, and every
piece of one found there is replaced (:mod:`.split_secrets`).

Tool results (and any long text) are truncated to ``max_tool_result_bytes`` (UTF-8 bytes, default 4096)
after redaction, keeping the head and the tail around a ``[TRUNCATED: N bytes]`` marker, so a secret can
never be split by the cut into a part the patterns no longer recognise.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from toolchoice_pipeline.util.secret_rules import (
    BASE64_PRIVATE_KEY,
    CONTEXT_SECRET,
    GENERIC_API_KEY,
    KEY_FORMATS,
    base64_texts,
    loose_tokens,
)
from toolchoice_pipeline.util.secret_rules import SecretRule as _Rule
from toolchoice_pipeline.util.split_secrets import split_spans

DEFAULT_MAX_TOOL_RESULT_BYTES = 4096

# Our own kinds, in the order they are applied (a later pattern never sees what an earlier one replaced).
KINDS = (
    "private_key",
    "anthropic_api_key",
    "openai_api_key",
    "aws_access_key_id",
    "aws_secret_access_key",
    "github_token",
    "gitlab_token",
    "slack_webhook",
    "slack_token",
    "google_api_key",
    "stripe_key",
    "jwt",
    "google_oauth_client_secret",
    "url_password",
    "cli_password",
    "netrc_password",
    "pgpass_password",
    "basic_auth",
    "bearer_token",
    "generic_secret",
    "email",
    "user_name",
)

_PLACEHOLDER = "[REDACTED:{}]"
_SECRET_NAMES = (
    r"(?:passw(?:or)?d|pwd|secret|api[_-]?key|apikey|access[_-]?key|access[_-]?token|auth[_-]?token"
    r"|refresh[_-]?token|token|private[_-]?key(?:[_-]?id)?|client[_-]?secret|credentials?)"
)
# Values that name a secret rather than hold one: variables, templates, placeholders, empty-ish literals, and code
# (an attribute chain such as ``document.querySelector``, or a call such as ``getpass(``).
_NOT_A_VALUE = re.compile(
    r"^(?:\$|\{|<|%|\[REDACTED|None$|null$|true$|false$|\*+$|x+$|\.\.\."
    r"|[A-Za-z_][\w.$]*[(\[]|(?:self|this|cls|os|env|process|document|window|config|settings"
    r"|request|req|args|options|opts|params|props|ctx|context)\.[\w.$]+$)",
    re.IGNORECASE,
)
# A variable named in a naming convention, two words at least (``csrfToken``, ``api_key_value``): the value
# names a secret rather than holds one.
_IDENTIFIER = re.compile(r"[a-z]+(?:[A-Z][a-z]{2,})+|[a-z]{2,}(?:_[a-z]{2,})+")
_HOME_DIRECTORY = re.compile(r"(?:/home/|/Users/|[A-Za-z]:[\\/]+Users[\\/]+)(?P<secret>[^/\\\s\"'`:;,)\]}]+)")
_SHORTEST_SPLIT = 9  # the shortest text a secret split in two can be written in (8 characters and a join)
_SHORTEST_LOOSE = 16  # the shortest run :func:`.secret_rules.loose_tokens` or :func:`.base64_texts` looks at
# A secret's placeholder right before more characters of a token's alphabet: the rule stopped short of the token.
#: Texts :meth:`Sanitiser.text` found clean are remembered up to this length and this many per sanitiser: the same
#: short strings (JSON keys, roles, tool names, paths) come back on every record of a transcript or trace.
_CLEAN_TEXT_MAX_LENGTH = 256
_CLEAN_TEXTS_MAX = 20_000
_CUT_SHORT = re.compile(r"(\[REDACTED:(?!email\]|user_name\])[a-z0-9_]+\])[A-Za-z0-9_\-]+={0,2}")
_ALREADY_REDACTED = re.compile(r"\[REDACTED:[a-z0-9_]+\]")
_GENERIC_USER_NAMES = frozenset(
    {
        "root",
        "user",
        "users",
        "admin",
        "home",
        "shared",
        "public",
        "default",
        "runner",
        "ubuntu",
        "guest",
        "dev",
        "app",
        "work",
        "workspace",
        "me",
    }
)
# A learned user name this long is also redacted as a part of a snake_case identifier (``alice_notes``,
# ``mcp__alice_vault__put``); shorter ones (``max``, ``sam``) are common parts of identifiers (``max_tokens``)
# and are redacted as whole words only.
_IDENTIFIER_PART_MIN_LENGTH = 5


def _rules() -> tuple[_Rule, ...]:
    return (
        _Rule(
            "private_key",
            re.compile(
                r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY"
                r"(?: BLOCK)?-----|\Z)",
                re.DOTALL,
            ),
            ("private key",),
        ),
        _Rule(
            "private_key", re.compile(r"PuTTY-User-Key-File-\d.*?(?:Private-MAC: *[0-9a-f]+|\Z)", re.DOTALL), ("putty",)
        ),
        _Rule("anthropic_api_key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}"), ("sk-ant-",)),
        _Rule("openai_api_key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}"), ("sk-",)),
        _Rule(
            "aws_access_key_id",
            re.compile(r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"),
            ("a3t", "akia", "asia", "abia", "acca"),
        ),
        _Rule(
            "aws_secret_access_key",
            re.compile(
                r"(?i:aws_?secret_?access_?key|aws_?secret_?key|secret_?access_?key)[\"']?\s*(?:=|:|=>)?\s*[\"']?"
                r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
            ),
            ("secret",),
            "secret",
        ),
        _Rule(
            "github_token",
            re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
            ("gh", "github_pat_"),
        ),
        _Rule("gitlab_token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"), ("glpat-",)),
        _Rule(
            "slack_webhook",
            re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/]+"),
            ("hooks.slack.com",),
        ),
        _Rule(
            "slack_token",
            re.compile(r"\bxox[abposre]-[A-Za-z0-9\-]{10,}|\bxapp-\d-[A-Za-z0-9\-]{10,}"),
            ("xox", "xapp-"),
        ),
        _Rule("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), ("aiza",)),
        _Rule("stripe_key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"), ("_live_", "_test_")),
        _Rule("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-+/=]{8,}"), ("eyj",)),
        _Rule("google_oauth_client_secret", re.compile(r"\bGOCSPX-[A-Za-z0-9_\-]{20,}"), ("gocspx-",)),
        # The user part never starts inside a placeholder an earlier rule wrote (``https://[REDACTED:x]@host``).
        _Rule(
            "url_password",
            re.compile(
                r"\b[a-z][a-z0-9+.\-]*://(?!\[REDACTED:)[^\s:/@\"'<>]+:"
                r"(?P<secret>[^\s@/\"'<>]+)@",
                re.IGNORECASE,
            ),
            ("://",),
            "secret",
        ),
        # A token as the whole userinfo (``https://<token>@github.com``): long, with letters and digits.
        _Rule(
            "url_password",
            re.compile(
                r"\b[a-z][a-z0-9+.\-]*://(?P<secret>(?=[^\s:/@\"'<>\[]*\d)"
                r"(?=[^\s:/@\"'<>\[]*[A-Za-z])[^\s:/@\"'<>\[]{16,})@",
                re.IGNORECASE,
            ),
            ("://",),
            "secret",
        ),
        # mysql -p<password> / -p'<password>' / --password=<password> (and the other MySQL/MariaDB clients).
        _Rule(
            "cli_password",
            re.compile(
                r"\b(?:mysql\w*|mariadb\w*)\b[^\n]*?\s(?:-p|--password=)(?P<secret>'[^'\n]+'|\"[^\"\n]+\"|[^\s'\"]+)"
            ),
            ("mysql", "mariadb"),
            "secret",
            keep_if=lambda value: bool(_NOT_A_VALUE.match(value.strip("'\""))),
        ),
        # .pgpass (libpq): ``host:port:database:user:password``, the port a number or ``*``.
        _Rule(
            "pgpass_password",
            re.compile(r"(?<![\w.:/-])[A-Za-z*][\w.*-]*:(?:\d{2,5}|\*):[\w*.-]+:[\w*.@-]+:(?P<secret>[^\s:'\"`]{6,})"),
            (":",),
            "secret",
            keep_if=lambda value: bool(_NOT_A_VALUE.match(value)),
        ),
        # .netrc: ``machine <host> [login <user>] password <pw>``, on one line or a line of its own.
        _Rule(
            "netrc_password",
            re.compile(
                r"(?:\bmachine\s+\S+(?:\s+login\s+\S+)?\s+|(?m:^)[ \t]*)password[ \t]+"
                r"(?P<secret>[^\s]+)(?=[ \t]*(?:$|\n|\s+(?:machine|login|account)\b))"
            ),
            ("password",),
            "secret",
            keep_if=lambda value: bool(_NOT_A_VALUE.match(value)),
        ),
        _Rule(
            "basic_auth",
            re.compile(r"\bbasic\s+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})", re.IGNORECASE),
            ("basic",),
            "secret",
            keep_if=lambda value: not _is_basic_credentials(value),
        ),
        _Rule(
            "basic_auth",
            re.compile(r"(?:\s|^)(?:-u|--user)\s+[\"']?[^\s:\"']+:(?P<secret>[^\s\"']+)"),
            ("-u", "--user"),
            "secret",
        ),
        _Rule(
            "bearer_token",
            re.compile(r"\bbearer\s+(?P<secret>[A-Za-z0-9._~+/\-]{12,}=*)", re.IGNORECASE),
            ("bearer",),
            "secret",
            keep_if=str.isalpha,
        ),
        _Rule(
            "bearer_token",
            re.compile(
                r"(?i:authorization)[\"']?\s*[:=]\s*[\"']?(?i:token|bot)\s+"
                r"(?P<secret>[A-Za-z0-9._~+/\-]{12,}=*)"
            ),
            ("authorization",),
            "secret",
        ),
        # password=..., "api_key": "...", PGPASSWORD=... (quoted or bare values).
        _Rule(
            "generic_secret",
            re.compile(
                r"(?i:" + _SECRET_NAMES + r")[\"']?\s*(?:=|:|=>)\s*(?:(?P<q>[\"'])(?P<quoted>[^\"'\n]{4,}?)(?P=q)"
                r"|(?P<bare>[^\s\"',;&)\]}]{4,}))"
            ),
            ("pass", "pwd", "secret", "key", "token", "credential"),
            "quoted|bare",
            keep_if=lambda value: bool(_NOT_A_VALUE.match(value.strip()) or _IDENTIFIER.fullmatch(value.strip())),
        ),
        _Rule(
            "email",
            re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b"),
            ("@",),
            0,
            keep_if=lambda value: value.lower().startswith("git@"),
        ),
        _Rule(
            "user_name",
            _HOME_DIRECTORY,
            ("/home/", "/users/", "users\\"),
            "secret",
            keep_if=lambda value: value.startswith("[REDACTED"),
        ),
    )


# Ours first, then the key formats and the generic rule (a later rule never sees what an earlier one replaced).
_OUR_RULES = (BASE64_PRIVATE_KEY, *_rules(), *KEY_FORMATS, GENERIC_API_KEY, CONTEXT_SECRET)
PERSONAL_KINDS = frozenset({"email", "user_name"})
_SECRET_RULES = tuple(rule for rule in _OUR_RULES if rule.kind not in PERSONAL_KINDS)
_ALL_HINTS = tuple(sorted({hint for rule in _OUR_RULES for hint in rule.hints}))


# detect-secrets plugins we do not run: ours cover the kind first (and better typed), or, for the keyword-gated
# Cloudant / IBM / SoftLayer patterns, they cost several times all the other rules together on code-heavy text
# and our generic_secret rule already covers a secret assigned to a key-like name.
_SKIPPED_PLUGINS = frozenset(
    {
        "KeywordDetector",
        "IPPublicDetector",
        "AWSKeyDetector",
        "BasicAuthDetector",
        "GitHubTokenDetector",
        "JwtTokenDetector",
        "OpenAIDetector",
        "PrivateKeyDetector",
        "SlackDetector",
        "StripeDetector",
        "CloudantDetector",
        "IbmCloudIamDetector",
        "IbmCosHmacDetector",
        "SoftlayerDetector",
    }
)


@lru_cache(maxsize=1)
def detect_secrets_plugins() -> tuple[tuple[str, Any], ...]:
    """``(kind, plugin)`` for each detect-secrets regex plugin we run (see ``_SKIPPED_PLUGINS`` for the others)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    plugins = []
    mapping: dict[str, type] = get_mapping_from_secret_type_to_class()
    for secret_type, plugin_class in sorted(mapping.items()):
        if plugin_class.__name__ in _SKIPPED_PLUGINS or not issubclass(plugin_class, RegexBasedDetector):
            continue
        plugins.append((_slug(secret_type), plugin_class()))
    return tuple(plugins)


def _is_basic_credentials(value: str) -> bool:
    """True when ``value`` is base64 of ``user:password`` (as in an ``Authorization: Basic`` header)."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return ":" in decoded and decoded.isprintable()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def truncate_text(text: str, max_bytes: int) -> str:
    """``text`` cut to about ``max_bytes`` UTF-8 bytes: the head (3/4) and tail (1/4) around a marker.

    Text within the limit is returned as is; cuts never split a character.
    """
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text
    head_bytes = max_bytes * 3 // 4
    tail_bytes = max_bytes - head_bytes
    head = encoded[:head_bytes].decode("utf-8", errors="ignore")
    tail = encoded[len(encoded) - tail_bytes :].decode("utf-8", errors="ignore") if tail_bytes else ""
    omitted = len(encoded) - len(head.encode("utf-8")) - len(tail.encode("utf-8"))
    return f"{head}\n[TRUNCATED: {omitted} bytes]\n{tail}"


@dataclass
class Sanitiser:
    """Redacts secrets, e-mail addresses and home-directory user names; truncates long texts.

    ``counts`` tallies replacements by kind (never the values). User names seen in home-directory paths
    (``/home/<user>``, ``/Users/<user>``, ``C:\\Users\\<user>``) are remembered and redacted wherever they
    appear later as a whole word (or, from 5 characters on, as a part of a snake_case identifier), unless they
    are generic (``root``, ``user``, ``dev``...) or shorter than 3 characters. Call :meth:`learn_path` with
    each record's ``cwd`` before sanitising its content.
    """

    max_tool_result_bytes: int = DEFAULT_MAX_TOOL_RESULT_BYTES
    personal: bool = True  # False: secrets only (e-mail addresses and user names are kept)
    joins: bool = True  # False: the text only as written (no joined view: :mod:`.split_secrets`)
    counts: Counter = field(default_factory=Counter)
    _names: set[str] = field(default_factory=set)
    _names_pattern: re.Pattern[str] | None = None
    # Short texts found clean with the user names known now (cleared when one is learned): each looked at once.
    _clean: set[str] = field(default_factory=set, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_tool_result_bytes < 64:
            raise ValueError("max_tool_result_bytes must be at least 64")

    # --- learning user names ----------------------------------------------------------------------------

    def learn_path(self, path: Any) -> None:
        """Remember the user name of a home-directory path (e.g. a record's ``cwd``)."""
        if isinstance(path, str) and path:
            for match in _HOME_DIRECTORY.finditer(path):
                self._learn(match.group("secret"))

    def _learn(self, name: str) -> None:
        if len(name) < 3 or name.lower() in _GENERIC_USER_NAMES or name in self._names or name.startswith("["):
            return
        self._names.add(name)
        self._clean.clear()  # a text clean before may hold the new name
        by_length = sorted(self._names, key=len, reverse=True)
        long = "|".join(re.escape(n) for n in by_length if len(n) >= _IDENTIFIER_PART_MIN_LENGTH)
        short = "|".join(re.escape(n) for n in by_length if len(n) < _IDENTIFIER_PART_MIN_LENGTH)
        alternatives = [
            f"(?<![A-Za-z0-9])(?:{long})(?![A-Za-z0-9])" if long else None,
            f"(?<![A-Za-z0-9_])(?:{short})(?![A-Za-z0-9_])" if short else None,
        ]
        self._names_pattern = re.compile("|".join(a for a in alternatives if a))

    # --- redaction ----------------------------------------------------------------------------------------

    def text(self, text: str) -> str:
        """``text`` with every secret, e-mail address and user name replaced by ``[REDACTED:<kind>]``."""
        if not text or text in self._clean:
            return text
        counted, names = self.counts.total(), len(self._names)
        redacted = self._redact(text)
        if (
            redacted == text
            and len(text) <= _CLEAN_TEXT_MAX_LENGTH
            and len(self._clean) < _CLEAN_TEXTS_MAX
            and self.counts.total() == counted
            and len(self._names) == names
        ):
            self._clean.add(text)
        return redacted

    def _redact(self, text: str) -> str:
        if self.joins and len(text) > _SHORTEST_SPLIT:
            text = self._split(text)
        lower = text.lower()
        present = {hint for hint in _ALL_HINTS if hint in lower}  # each hint looked for once, not once per rule
        for rule in _OUR_RULES if self.personal else _SECRET_RULES:
            if not present.isdisjoint(rule.hints):
                replaced = rule.pattern.sub(lambda m, r=rule: self._replace(m, r), text)
                if replaced != text:  # a placeholder may add or remove hints: look again
                    text, lower = replaced, replaced.lower()
                    present = {hint for hint in _ALL_HINTS if hint in lower}
        for kind, plugin in detect_secrets_plugins():
            for secret in set(plugin.analyze_string(text)):
                if secret and "[REDACTED:" not in secret and secret in text:
                    self.counts[kind] += text.count(secret)
                    text = text.replace(secret, _PLACEHOLDER.format(kind))
        text = self._loose(text)
        if self._names_pattern is not None:
            text = self._names_pattern.sub(lambda m: self._count("user_name"), text)
        return text

    def _split(self, text: str) -> str:
        """``text`` with every piece of a secret split across lines or string literals redacted (each piece
        replaced by the placeholder, the secret counted once): see :mod:`.split_secrets`."""
        found = split_spans(text, _find_unjoined)  # a Sanitiser is made only for a text that has a join
        if not found:
            return text
        runs: list[tuple[int, int, str]] = []
        for kind, spans in found:
            self.counts[kind] += 1
            runs.extend((start, end, kind) for start, end in spans)
        merged: list[tuple[int, int, str]] = []
        for start, end, kind in sorted(runs):
            if merged and start < merged[-1][1]:  # overlapping pieces of two secrets: one placeholder
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]), merged[-1][2])
            else:
                merged.append((start, end, kind))
        for start, end, kind in reversed(merged):
            text = text[:start] + _PLACEHOLDER.format(kind) + text[end:]
        return text

    def _loose(self, text: str) -> str:
        """``text`` with the tokens that are secrets by their shape alone redacted (no word or prefix needed:
        :func:`.secret_rules.loose_tokens`), and every secret placeholder widened over what a rule left of
        its token (a vendor rule that stopped short of a longer token of the same alphabet)."""
        if len(text) >= _SHORTEST_LOOSE:  # else no run of a generated token's length fits (keys, names, numbers)
            for start, end in reversed(loose_tokens(text)):
                text = text[:start] + self._count("high_entropy_token") + text[end:]
            for start, end, decoded in reversed(base64_texts(text)):
                inner = Sanitiser(personal=False)
                if inner.text(decoded) != decoded or _is_basic_credentials(text[start:end]) and len(decoded) >= 12:
                    text = text[:start] + self._count("base64_wrapped_secret") + text[end:]
        return _CUT_SHORT.sub(lambda m: m.group(1), text) if "[REDACTED:" in text else text

    def _replace(self, match: re.Match[str], rule: _Rule) -> str:
        group = rule.group
        if isinstance(group, str) and "|" in group:
            group = next(name for name in group.split("|") if match.group(name) is not None)
        value = match.group(group)
        if (
            _ALREADY_REDACTED.fullmatch(value)
            or (rule.keep_if is not None and rule.keep_if(value))
            or (rule.secret_if is not None and not rule.secret_if(match))
        ):
            return match.group(0)
        if rule.kind == "user_name":
            self._learn(value)
        start, end = match.span(group)
        offset = match.start(0)
        whole = match.group(0)
        return whole[: start - offset] + self._count(rule.kind) + whole[end - offset :]

    def _count(self, kind: str) -> str:
        self.counts[kind] += 1
        return _PLACEHOLDER.format(kind)

    def value(self, value: Any) -> Any:
        """A JSON value with every string sanitised (object keys included); a string under a key that names a
        secret (``password``, ``api_key``, ``token``...) is redacted whole as ``generic_secret``."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                clean_key = self.text(key) if isinstance(key, str) else key
                if (
                    isinstance(item, str)
                    and item
                    and isinstance(key, str)
                    and _SECRET_KEY.match(key)
                    and not _NOT_A_VALUE.match(item.strip())
                ):
                    out[clean_key] = self._count("generic_secret")
                else:
                    out[clean_key] = self.value(item)
            return out
        return value

    def tool_result(self, text: str) -> str:
        """A tool result sanitised, then truncated to ``max_tool_result_bytes``."""
        return truncate_text(self.text(text), self.max_tool_result_bytes)

    def message_text(self, text: str) -> str:
        """A prompt or assistant text sanitised, then truncated to 4 × ``max_tool_result_bytes``."""
        return truncate_text(self.text(text), 4 * self.max_tool_result_bytes)


def _find_unjoined(text: str) -> str:
    """``text`` with its secrets redacted as written (no joined view), by a fresh secrets-only :class:`Sanitiser`."""
    return Sanitiser(personal=False, joins=False).text(text)


_SECRET_KEY = re.compile(rf"^(?i:[A-Za-z0-9_.\-]*{_SECRET_NAMES})$")


def sanitise(text: str) -> str:
    """``text`` with secrets, e-mail addresses and home-directory user names redacted (a fresh :class:`Sanitiser`)."""
    return Sanitiser().text(text)
