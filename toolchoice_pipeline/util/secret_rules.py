"""Our rules for current key formats, and the generic rule for high-entropy values next to secret-like names.

Each key-format rule is ours, written from the format its service documents (a fixed prefix, then a body of a
known alphabet and length); its kind names the service and the credential. A match whose Shannon entropy is
not above :data:`KEY_FORMAT_MIN_ENTROPY` bits/character is kept (``hf_aaaa...`` is a placeholder, not a key).

:data:`GENERIC_API_KEY` redacts a value of 10-150 characters with Shannon entropy above
:data:`GENERIC_MIN_ENTROPY` assigned (``=``, ``:``, ``:=``, ``=>``) to a name containing access, api, auth,
credential, creds, key, password, passwd, pwd, secret or token (``X_API_KEY: ...``, ``"clientAuth": "..."``),
unless the value reads as words or a path, or is called (``deriveKey2(...)``).

:data:`CONTEXT_SECRET` needs no name to assign to: a token of 16+ characters at most 48 characters after a word
that names a credential (key, secret, token, password, credential, auth and their compounds, in identifiers
and prose, a few natural languages too), on the same line. Right after a strong word (only separators, ``is``
or ``was`` between) a token that is not a path, a URL or typed words and numbers is enough; further away, or
after a weak word (``key``, ``auth``), the token must read as generated (:func:`looks_random`); a hexadecimal
value or a UUID (a hash, an id) only right after the word. :data:`BASE64_PRIVATE_KEY` finds PEM private keys
stored base64-encoded (kubeconfig ``client-key-data``).
"""

from __future__ import annotations

import base64
import binascii
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
    secret_if: Callable[[Any], bool] | None = None  # given the match: False keeps it (a rule that needs context)


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
    r"(?::=|=>|=|:)\s*[\"']?([A-Za-z0-9_.=+/~\-!@#$%^&*?]{10,150})(?:[^A-Za-z0-9_.=+/~\-!@#$%^&*?(]|$)"
)
_WORDS = re.compile(r"^[A-Za-z]+(?:[_.\-/][A-Za-z]+)*$")
_PATH = re.compile(r"^(?:\.{0,2}|~)/[^/]+/")


def _not_a_generic_secret(value: str) -> bool:
    """A value that reads as words (few capitals, no digits) or a path, or whose entropy is low."""
    if shannon_entropy(value) <= GENERIC_MIN_ENTROPY or _PATH.match(value):
        return True
    if _WORDS.match(value):
        letters = [c for c in value if c.isalpha()]
        if all(_NATURAL_CASE.fullmatch(part) for part in re.split(r"[_.\-/]", value)):
            return True  # names in naming conventions: ``process.env.STRIPE_SECRET_KEY``
        return sum(c.isupper() for c in letters) <= 0.3 * len(letters) or value.isupper()
    return False


GENERIC_API_KEY = SecretRule("generic_api_key", _GENERIC, _NAME_WORDS, 1, keep_if=_not_a_generic_secret)


# --- the context rule: a random-looking token shortly after a word that names a credential -------------------

# Words that name a credential, in identifiers (``GH_TOKEN``, ``clientSecret``, ``x-api-key``) and prose, a few
# natural languages included. *Strong* words name a secret whatever follows; after a *weak* one (``key``,
# ``auth``: a primary key, an auth mode) only a token that is not hexadecimal or a UUID counts.
_STRONG_WORDS = (
    r"api[ _.\-]?keys?|apikeys?|access[ _.\-]?keys?|secret[ _.\-]?keys?|private[ _.\-]?keys?|signing[ _.\-]?keys?"
    r"|licen[cs]e[ _.\-]?keys?|account[ _.\-]?keys?|master[ _.\-]?keys?|session[ _.\-]?keys?|user[ _.\-]?keys?"
    r"|secrets?|tokens?|passw(?:or)?ds?|pwd|passphrases?|pass|credentials?|creds|bearer|authori[sz]ation|ssws"
    r"|sas|sig(?:nature)?|cookie|webhook(?:[ _.\-]?url)?|passwort|kennwort|schl(?:ü|ue)ssel|contrase(?:ñ|n)a|clave|mot de passe|jeton"
    r"|senha|chiave|parola d'ordine|has(?:ł|l)o|wachtwoord|пароль|токен|ключ|密码|密钥|令牌|秘密|パスワード|トークン|鍵"
    r"|psk|(?:ş|s)ifre|l(?:ö|o)senord|passord|adgangskode|salasana|heslo|jelsz(?:ó|o)|κωδικ(?:ός|ος|ό|ο)"
    r"|συνθηματικό|كلمة المرور|كلمة السر|סיסמה|पासवर्ड|mật khẩu|kata sandi|รหัสผ่าน|비밀번호|암호|口令|暗証番号"
)
_WEAK_WORDS = r"keys?|auth|license|dsn"
# A word counts when it starts a word or an identifier part (after a non-letter or at a camelCase hump) and ends
# one (``keyboard``, ``tokenizer``, ``authored`` do not count).
# A word counts when it starts a word or an identifier part (after a non-letter or at a camelCase hump), or ends
# a compound (``authtoken``, ``apisecret``; not ``key``: ``hotkey``), and ends a word (``keyboard``,
# ``tokenizer``, ``authored`` do not count).
_COMPOUND_ENDS = r"tokens?|secrets?|passw(?:or)?ds?|credentials?"
_WORD = (
    rf"(?:(?:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z]))(?:(?P<strong>(?i:{_STRONG_WORDS}))|(?P<weak>(?i:{_WEAK_WORDS})))"
    rf"|(?<=[a-z])(?P<compound>{_COMPOUND_ENDS}))(?![a-z])"
)
# The token: the body may hold the symbols passwords use and a provider's own separators (``$``, ``:``), but it
# starts after a character that cannot be part of it (a space, a quote, ``=``, ``:``).
_TOKEN_START = r"(?<![A-Za-z0-9+/_.~\-!@#$%^&*?:])"
_TOKEN = r"[A-Za-z0-9+/_.~\-!@#$%^&*?][A-Za-z0-9+/_.~\-!@#$%^&*?:]{15,}={0,2}(?![A-Za-z0-9+/=_.~\-])"
# then, on the same line, at most 48 characters before the token itself
_CONTEXT = re.compile(rf"{_WORD}(?P<gap>[^\n]{{0,48}}?){_TOKEN_START}(?!REDACTED:)(?P<token>{_TOKEN})")
_ANY_WORD = re.compile(_WORD)
CONTEXT_HINTS = (
    "key", "passw", "credential", "webhook", "secret", "token", "pass", "pwd", "cred", "auth", "bearer", "ssws", "sas", "sig", "cookie", "dsn",
    "licen", "kennwort", "schl", "contrase", "clave", "mot de passe", "jeton", "senha", "chiave", "parola",
    "has", "wachtwoord", "пароль", "токен", "ключ", "密", "令牌", "パスワード", "トークン", "鍵",
    "psk", "ifre", "senord", "passord", "adgangskode", "salasana", "heslo", "jelsz", "κωδικ", "συνθηματικό",
    "كلمة", "סיסמה", "पासवर्ड", "mật khẩu", "kata sandi", "รหัสผ่าน", "비밀번호", "암호", "口令", "暗証番号",
)  # fmt: skip
_HEX_OR_UUID = re.compile(r"^(?:[0-9a-fA-F]+|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12})$")
_SHORT_GAP = re.compile(r"^[\s\"'`:=>(\[{\]}),]*(?:(?:is|was|=|:)[\s\"'`]*)?$", re.IGNORECASE)
_VOWELS = re.compile(r"[aeiouAEIOU]")
_PASSWORD_SYMBOLS = re.compile(r"[!@#$%^&*?]")
_IDENTIFIER_PARTS = re.compile(r"[_.\-/+~!@#$%^&*?:]+")
CONTEXT_MIN_ENTROPY = 3.0


# How people case words and identifiers: lower, UPPER, Title, camelCase, PascalCase, an acronym then a word.
_NATURAL_CASE = re.compile(r"[a-z]+(?:[A-Z]{1,8}[a-z]{2,})*[A-Z]{0,3}|[A-Z]+|(?:[A-Z]{1,8}[a-z]{2,})+[A-Z]{0,3}")
# Share of neighbouring characters that switch between capital, small letter and digit: ~0.6 in random
# base62, 0.25-0.35 in identifiers and model names (``getServiceStatus``, ``Llama38BInstruct9``).
RANDOM_SWITCH_SHARE = 0.4
_WORD_AND_NUMBER = re.compile(r"[A-Za-z]+\d{1,4}|\d{1,4}[A-Za-z]+|[A-Za-z]+\d{1,4}[A-Za-z]+")


def _plain(part: str) -> bool:
    """A path or name segment as people write them: few capitals, few digits (``Llama3``, ``src``, ``v2``)."""
    letters = [c for c in part if c.isalpha()]
    upper = sum(c.isupper() for c in letters)
    digits = sum(c.isdigit() for c in part)
    return upper <= max(1, 0.3 * len(letters)) and digits <= max(2, 0.3 * len(part))


def looks_random(token: str) -> bool:
    """True when ``token`` reads as generated: letters and digits mixed (or letters with capitals in random
    places), Shannon entropy above :data:`CONTEXT_MIN_ENTROPY`, and not words, a path, a dotted name, a number,
    a version or a date."""
    core = token.rstrip("=")
    if len(core) < 16 or shannon_entropy(core) <= CONTEXT_MIN_ENTROPY or core.isdigit():
        return False
    letters = [c for c in core if c.isalpha()]
    if not letters:
        return False
    parts = [p for p in _IDENTIFIER_PARTS.split(core) if p]
    if _path_like(core, parts):
        return False
    if "+" in core or "/" in core:  # base64: its separators cut it anywhere, so judge it whole
        parts = [*parts, "".join(parts)]
    return any(map(_random_part, parts)) or _random_groups(parts) or any(map(_switches_often, parts))


def _path_like(core: str, parts: list[str]) -> bool:
    """A path, a URL or a URL's path: slashes between segments as people write them (a URL holding a generated
    part of 20+ characters, as webhook URLs do, is not)."""
    if "://" in core:
        return not any(len(part) >= 20 and _random_part(part) for part in parts)
    return "/" in core and "+" not in core and all(map(_plain, parts))


def _typed(part: str) -> bool:
    """A part someone typed: a number, a word or identifier in a naming convention, or one with a number at an
    end (``Llama3``, ``v2``, ``8B``)."""
    if part.isdigit() or _NATURAL_CASE.fullmatch(part):
        return True
    match = re.fullmatch(r"(\d{1,4})?([A-Za-z]+)(\d{1,4})?", part)
    return match is not None and bool(_NATURAL_CASE.fullmatch(match.group(2)))


def not_typed(token: str) -> bool:
    """True when ``token`` is 16+ characters with entropy above :data:`CONTEXT_MIN_ENTROPY` and some part of it
    no one would type (see :func:`_typed`), and it is not a path or URL: enough right after a word that names a
    secret (``password: ...``, ``the API key is ...``)."""
    core = token.rstrip("=")
    if len(core) < 16 or shannon_entropy(core) <= CONTEXT_MIN_ENTROPY:
        return False
    parts = [p for p in _IDENTIFIER_PARTS.split(core) if p]
    if _path_like(core, parts):
        return False
    if _PASSWORD_SYMBOLS.search(core) and any(c.isalpha() for c in core):
        return True  # no identifier, word or number holds these
    return not all(map(_typed, parts)) or _random_groups(parts) or any(map(_unpronounceable, parts))


def _unpronounceable(part: str) -> bool:
    """A part of 12+ letters with a syllable of 3+ letters and no vowel (``fwMhrSTFocq``): not a word."""
    return len(part) >= 12 and any(
        len(syllable) >= 3 and not _VOWELS.search(syllable) for syllable in re.findall(r"[A-Z]*[a-z]+|[A-Z]+", part)
    )


def _switches_often(text: str) -> bool:
    """16+ characters that switch often between capitals, small letters and digits (see RANDOM_SWITCH_SHARE)."""
    classes = ["u" if c.isupper() else "l" if c.islower() else "d" if c.isdigit() else "o" for c in text]
    if len(text) < 16 or len(set(classes) - {"o"}) < 2:
        return False
    switches = sum(a != b for a, b in zip(classes, classes[1:]))
    return switches >= RANDOM_SWITCH_SHARE * (len(text) - 1)


def _random_part(part: str) -> bool:
    """A part of 10+ characters that no one would type: letters and digits mixed (not a word with a number on
    one end, ``Instruct9``, ``v2024``), or letters cased against every naming convention."""
    if len(part) < 10 or part.isdigit():
        return False
    if any(c.isdigit() for c in part):
        if not any(c.isalpha() for c in part):
            return False
        if _WORD_AND_NUMBER.fullmatch(part):  # a word with a number: random unless the words read naturally
            return not all(_NATURAL_CASE.fullmatch(w) for w in re.findall(r"[A-Za-z]+", part))
        return True
    return not _NATURAL_CASE.fullmatch(part)


def _random_groups(parts: list[str]) -> bool:
    """Three or more groups of one length (4+), letters and digits mixed in one at least: a licence key."""
    return (
        len(parts) >= 3
        and len(set(map(len, parts))) == 1
        and len(parts[0]) >= 4
        and any(any(c.isdigit() for c in p) and any(c.isalpha() for c in p) for p in parts)
    )


def context_secret_value(match: re.Match[str]) -> bool:
    """True when the token of a :data:`CONTEXT_SECRET` match is a secret: right after a strong word (or a
    compound such as ``authtoken``; only separators, ``is`` or ``was`` between), a token no one would type
    (:func:`not_typed`); further away or after a weak word, a token that reads as generated
    (:func:`looks_random`), and never a hash or UUID (those only right after the word)."""
    token = match.group("token")
    text = match.string
    if text[match.end() : match.end() + 1] == "(":
        return False  # a call: ``key = deriveKeyFromPassphrase2(...)``
    opened = text.rfind("[REDACTED:", 0, match.start())
    if opened >= 0 and "]" not in text[opened : match.start()]:
        return False  # the word is a placeholder's kind (``[REDACTED:url_password]@host``)
    gap = match.group("gap")
    last = next(reversed(list(_ANY_WORD.finditer(gap))), None)
    adjacent = bool(_SHORT_GAP.match(gap[last.end() :] if last else gap))
    strong = match.group("weak") is None if last is None else last.group("weak") is None
    if _HEX_OR_UUID.match(token.rstrip("=")):
        return adjacent and shannon_entropy(token) > CONTEXT_MIN_ENTROPY
    if adjacent and strong:
        return not_typed(token)
    return looks_random(token)


def _not_a_private_key(value: str) -> bool:
    """False when ``value`` is base64 of a PEM private key block (kubeconfig ``client-key-data``...)."""
    head = value[: len(value) // 4 * 4][:80]
    try:
        decoded = base64.b64decode(head, validate=True).decode("ascii", errors="replace")
    except (binascii.Error, ValueError):
        return True
    return "PRIVATE KEY" not in decoded


CONTEXT_SECRET = SecretRule("secret_in_context", _CONTEXT, CONTEXT_HINTS, "token", secret_if=context_secret_value)
# "-----BEGIN" in base64 is "LS0tLS1CRUdJTi": a PEM private key stored base64-encoded (kubeconfig, Helm values).
BASE64_PRIVATE_KEY = SecretRule(
    "private_key",
    re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,}={0,2}"),
    ("ls0tls1crudjti",),
    keep_if=_not_a_private_key,
)


# --- a token no one would type, with no word or vendor prefix near it -------------------------------------------

# Runs of the alphabets generated secrets use: base62 and base64url (``_``, ``-``), and base64 (``+``, ``/``, ``=``
# padding); a run starts and ends where a character of none of them stands.
_LOOSE_RUN = re.compile(r"(?<![A-Za-z0-9+/_\-=~.\\%])[A-Za-z0-9+/_\-.]{20,}={0,2}(?![A-Za-z0-9+/_\-=~\\%])")
# A run with a password's symbols: shorter ones count when letters of both cases, digits and a symbol are mixed.
_SYMBOL_RUN = re.compile(r"(?<![^\s\"'`=:,(\[{<>])[A-Za-z0-9!#%*+?@$^&_\-]{16,40}(?=[\s\"'`,;)\]}<>]|$)")
LOOSE_MIN_LENGTH = 20
# Share of the most entropy a run of its length can have: random base62 of 20+ characters has ~0.9 of it (0.8 is rare);
# identifiers, words and file names far less.
LOOSE_ENTROPY_SHARE = 0.8
# ...up to this many bits a character: a random run of 40+ characters of a 64-letter alphabet has ~5.0-5.4.
LOOSE_MAX_ENTROPY = 4.5


def _classes(text: str) -> int:
    return sum((any(c.isupper() for c in text), any(c.islower() for c in text), any(c.isdigit() for c in text)))


# Object ids the recorded producers write (Anthropic: ``toolu_01…``, ``msg_01…``, ``req_011C…``; OpenAI:
# ``call_…``, ``chatcmpl-…``, ``resp_…``; Stripe-style ``cus_…``): generated, but an id an evaluation keeps.
_OBJECT_ID = re.compile(
    r"^(?:srvtoolu|toolu|msg|msgbatch|req|call|chatcmpl|resp|fc|rs|ctc|asst|thread|run|step|file|vs|batch|ftjob"
    r"|evt|cus|ch|pi|in|sub|prod|price|txn|sess|span|trace)[_-][0-9A-Za-z]{16,40}$"
)


def generated_token(token: str) -> bool:
    """True when ``token`` (20+ characters of the base62/base64 alphabets) is a secret whatever stands near it:
    capitals, small letters and digits mixed (or, from 24 characters, capitals and small letters), entropy near
    the most its length allows, and it reads as generated (:func:`looks_random`); never hexadecimal (a hash), a
    UUID, a path, dotted words or an object id of a recorded producer (``toolu_01…``)."""
    core = token.rstrip("=").strip(".")
    if len(core) < LOOSE_MIN_LENGTH or _OBJECT_ID.match(core):
        return False
    cased = any(c.isupper() for c in core) and any(c.islower() for c in core)
    if not (_classes(core) == 3 or (cased and len(core) >= 24)):
        return False  # lower case and digits only: a hash, an id; letters only, short: a word or a name
    if shannon_entropy(core) < min(LOOSE_MAX_ENTROPY, LOOSE_ENTROPY_SHARE * math.log2(len(core))):
        return False
    # the longest piece between separators must itself be generated: ``com.example.AppService2Impl`` is not
    pieces = [p for p in re.split(r"[./_\-]+", core) if p]
    longest = max(pieces, key=len, default="")
    if len(longest) < 10 and not _random_groups(pieces):
        return False
    if _worded(core) or _worded(longest):
        return False  # words run together (``isVisibleInTranscriptOnly``, ``Draft202012Validator.META_SCHEMA``)
    if len(longest) < LOOSE_MIN_LENGTH and not (
        any(c.isupper() for c in longest) and any(c.islower() for c in longest)
    ):
        return False  # a short piece in one case: a constant's name and a number (``DRAFT202012.create``)
    return looks_random(core)


_HUMP = re.compile(r"[A-Z]?[a-z]{2,}")
WORDED_SHARE = 0.7


def _worded(text: str) -> bool:
    """Whether words of two or more small letters (each maybe after one capital) make up most of ``text``: 0.7
    or more of it, where a random base62 or base64 string has a third at most."""
    return sum(len(m.group(0)) for m in _HUMP.finditer(text)) >= WORDED_SHARE * len(text)


def typed_password(token: str) -> bool:
    """True when ``token`` (16-40 characters) mixes capitals, small letters, digits and a password's symbols with
    high entropy: no identifier, number, word or percent-encoded text looks like that."""
    if _classes(token) < 3 or not re.search(r"[!#%*+?@$^&]", token) or re.search(r"%[0-9A-Fa-f]{2}", token):
        return False
    return shannon_entropy(token) >= LOOSE_ENTROPY_SHARE * math.log2(len(token)) and not_typed(token)


_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/_\-=])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/_\-=])")


def base64_texts(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, decoded)`` for each base64 run of ``text`` that decodes to printable text (a wrapped
    ``.env``, a Kubernetes ``Secret``'s value, a Docker ``auth``): the caller looks for secrets inside."""
    found = []
    for match in _BASE64_RUN.finditer(text):
        run = match.group(0)
        if len(run) % 4 or (run.isalpha() and (run.islower() or run.isupper())):
            continue
        try:
            decoded = base64.b64decode(run, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        if decoded.strip() and all(c.isprintable() or c in "\n\r\t" for c in decoded):
            found.append((match.start(), match.end(), decoded))
    return found


def loose_tokens(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` holding a secret by its shape alone (:func:`generated_token`, :func:`typed_password`)."""
    spans = []
    for match in _LOOSE_RUN.finditer(text):
        run = match.group(0)
        if "/" in run and "+" not in run and not run.endswith("="):
            # a path or a URL's path: only its generated segments (a webhook URL's secret), not the names around
            offset = match.start()
            for segment in re.finditer(r"[^/]+", run):
                if generated_token(segment.group(0)):
                    spans.append((offset + segment.start(), offset + segment.end()))
        elif generated_token(run):
            spans.append(match.span())
    spans += [
        m.span()
        for m in _SYMBOL_RUN.finditer(text)
        if typed_password(m.group(0)) and not any(s <= m.start() < e for s, e in spans)
    ]
    return sorted(spans)
