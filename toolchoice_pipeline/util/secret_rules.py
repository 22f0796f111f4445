"""Our rules for current key formats, and the generic rule for high-entropy values next to secret-like names.

Each key-format rule is ours, written from the format its service documents (a fixed prefix, then a body of a
known alphabet and length); its kind names the service and the credential. A match whose Shannon entropy is
not above :data:`KEY_FORMAT_MIN_ENTROPY` bits/character is kept (``hf_aaaa...`` is a placeholder, not a key).

:data:`GENERIC_API_KEY` redacts a value of 10-150 characters with Shannon entropy above
:data:`GENERIC_MIN_ENTROPY` assigned (``=``, ``:``, ``:=``, ``=>``) to a name containing access, api, auth,
credential, creds, key, password, passwd, pwd, secret or token (``X_API_KEY: ...``, ``"clientAuth": "..."``),
unless the value reads as words or a path.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import re2

KEY_FORMAT_MIN_ENTROPY = 3.0
GENERIC_MIN_ENTROPY = 3.5


@dataclass(frozen=True)
class SecretRule:
    kind: str
    pattern: Any  # a compiled pattern (``re`` or ``re2``)
    hints: tuple[str, ...]  # lower-case substrings one of which must be present for the rule to run
    group: int | str = 0  # the group holding the secret ("a|b": whichever matched); the rest is kept
    keep_if: Callable[[str], bool] | None = None  # a value for which this returns True is not redacted


def shannon_entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character (0.0 for an empty text)."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _low_entropy(value: str) -> bool:
    return shannon_entropy(value) <= KEY_FORMAT_MIN_ENTROPY


_B64URL = "A-Za-z0-9_\\-"


def _key_format(kind: str, prefix: str, body: str) -> SecretRule:
    """A rule for the literal ``prefix`` followed by ``body`` (a regex), not inside a longer word."""
    literal = re.escape(prefix)
    # The literal first lets the regex engine search for it directly (a pattern that starts with the
    # look-behind tries every position: ~15 times slower); the look-behind then checks the character before.
    pattern = re.compile(rf"{literal}(?<![A-Za-z0-9_]{literal}){body}(?![A-Za-z0-9_])")
    return SecretRule(kind, pattern, (prefix.lower(),), keep_if=_low_entropy)


KEY_FORMATS = (
    _key_format("huggingface_access_token", "hf_", "[A-Za-z0-9]{34}"),
    _key_format("huggingface_organization_api_token", "api_org_", "[A-Za-z0-9]{34}"),
    _key_format("databricks_api_token", "dapi", "[0-9a-f]{32}(?:-[0-9])?"),
    _key_format("digitalocean_pat", "dop_v1_", "[0-9a-f]{64}"),
    _key_format("vault_service_token", "hvs.", f"[{_B64URL}]{{90,120}}"),
    _key_format("atlassian_api_token", "ATATT3", f"[{_B64URL}=]{{150,250}}"),
    _key_format("grafana_service_account_token", "glsa_", "[A-Za-z0-9]{32}_[0-9a-fA-F]{8}"),
    _key_format("npm_access_token", "npm_", "[A-Za-z0-9]{36}"),
    # pypi.org and test.pypi.org macaroons: the prefix is the base64 of the issuer's location.
    _key_format("pypi_upload_token", "pypi-AgE", f"(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[{_B64URL}]{{50,}}"),
    _key_format("shopify_access_token", "shpat_", "[0-9a-fA-F]{32}"),
    _key_format("linear_api_key", "lin_api_", "[A-Za-z0-9]{40}"),
    _key_format("doppler_api_token", "dp.", "(?:pt|st|ct|sa|scim|audit)\\.[A-Za-z0-9]{40,44}"),
    _key_format("pulumi_api_token", "pul-", "[0-9a-f]{40}"),
    _key_format("postman_api_token", "PMAK-", "[0-9a-fA-F]{24}-[0-9a-fA-F]{34}"),
    _key_format("age_secret_key", "AGE-SECRET-KEY-1", "[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    _key_format("sentry_user_token", "sntryu_", "[0-9a-f]{64}"),
    _key_format("perplexity_api_key", "pplx-", "[A-Za-z0-9]{48}"),
    _key_format("planetscale_password", "pscale_pw_", "[A-Za-z0-9_.\\-]{32,64}"),
    _key_format("rubygems_api_token", "rubygems_", "[0-9a-f]{48}"),
    _key_format("prefect_api_token", "pnu_", "[A-Za-z0-9]{36}"),
    _key_format("readme_api_token", "rdme_", "[a-z0-9]{70}"),
    _key_format("sendinblue_api_token", "xkeysib-", "[0-9a-f]{64}-[A-Za-z0-9]{16}"),
    _key_format("openshift_user_token", "sha256~", f"[{_B64URL}]{{43}}"),
    _key_format("heroku_api_key_v2", "HRKU-AA", f"[{_B64URL}]{{58}}"),
    _key_format("clojars_api_token", "CLOJARS_", "[a-z0-9]{60}"),
    _key_format("dynatrace_api_token", "dt0c01.", "[A-Z0-9]{24}\\.[A-Z0-9]{64}"),
    _key_format("duffel_api_token", "duffel_", f"(?:live|test)_[{_B64URL}]{{43}}"),
)

_NAME_WORDS = ("access", "api", "auth", "credential", "creds", "key", "passwd", "password", "pwd", "secret", "token")
# The word, then at most three more name parts, each after a separator or in camelCase (``_ID``, ``Id``): so
# ``tokenizer`` or ``keyboard`` are not secret-like names. The value (group 1) ends at a character that cannot be
# part of it, or at the end. RE2: these words occur in most texts, and RE2 runs the rule ~8 times faster than re.
_GENERIC = re2.compile(
    r"(?i:" + "|".join(_NAME_WORDS) + r")(?:[_.\-][A-Za-z0-9]{1,16}|[A-Z][a-z0-9]{0,16}){0,3}[\"']?\s*"
    r"(?::=|=>|=|:)\s*[\"']?([A-Za-z0-9_.=+/~\-]{10,150})(?:[^A-Za-z0-9_.=+/~\-]|$)"
)
_WORDS = re.compile(r"^[A-Za-z]+(?:[_.\-/][A-Za-z]+)*$")
_PATH = re.compile(r"^(?:\.{0,2}|~)/[^/]+/")


def _not_a_generic_secret(value: str) -> bool:
    """A value that reads as words (few capitals, no digits) or a path, or whose entropy is low."""
    if shannon_entropy(value) <= GENERIC_MIN_ENTROPY or _PATH.match(value):
        return True
    if _WORDS.match(value):
        letters = [c for c in value if c.isalpha()]
        return sum(c.isupper() for c in letters) <= 0.3 * len(letters) or value.isupper()
    return False


GENERIC_API_KEY = SecretRule("generic_api_key", _GENERIC, _NAME_WORDS, 1, keep_if=_not_a_generic_secret)
