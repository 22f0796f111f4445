"""Secrets of many kinds, generated at run time, each planted in the forms people write them in.

:func:`planted` draws a random value for every kind (:data:`VENDOR_SHAPES`: a service's documented shape, most
of them named nowhere in the sanitiser; :data:`GENERIC_SHAPES`: values of no vendor, in common alphabets) and
writes it in several forms (:data:`FORMS`: prose, YAML, JSON, env, shell, Python, JavaScript, Go, Ruby, a URL
query, an HTTP header), each naming the credential the way a person would (``OKTA_API_TOKEN=...``, "the Okta
API token is ..."). No value is a literal of this file: prefixes are split and bodies are drawn from a seeded
``random.Random``, so a different seed gives other values of the same shapes.

Used by ``test_sanitise_kinds.py`` and ``benchmarks/ingest/secrets_rates.py``.
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

LOWER, UPPER, DIGITS = string.ascii_lowercase, string.ascii_uppercase, string.digits
HEX = "0123456789abcdef"
ALNUM = LOWER + UPPER + DIGITS
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


@dataclass(frozen=True)
class Planted:
    kind: str  # the shape's name (not a placeholder kind: any redaction counts)
    form: str  # one of FORMS
    text: str  # the text the secret sits in
    value: str  # the secret: no part of it of 8+ characters may survive


def _body(rnd: random.Random, alphabet: str, n: int) -> str:
    return "".join(rnd.choice(alphabet) for _ in range(n))


def _uuid(rnd: random.Random) -> str:
    h = _body(rnd, HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def _pem_b64(rnd: random.Random) -> str:
    block = "-----BEGIN " + "RSA PRIVATE KEY-----\n" + _body(rnd, B64, 64) + "\n-----END RSA PRIVATE KEY-----\n"
    return base64.b64encode(block.encode()).decode()


Shape = tuple[str, str, str, Callable[[random.Random], str]]  # kind, variable name, noun, value maker

# (kind, the variable people name it, the noun people use, a value in the service's shape)
VENDOR_SHAPES: list[Shape] = [
    ("aws_key_pair_secret", "AWS_SECRET_ACCESS_KEY", "AWS secret", lambda r: _body(r, B64, 40)),
    ("okta_ssws", "OKTA_API_TOKEN", "Okta API token", lambda r: "00" + _body(r, B64URL, 40)),
    (
        "new_relic_user_key",
        "NEW_RELIC_API_KEY",
        "New Relic user key",
        lambda r: "NR" + "AK-" + _body(r, UPPER + DIGITS, 27),
    ),
    ("cloudflare_global_key", "CF_API_KEY", "Cloudflare global API key", lambda r: _body(r, HEX, 37)),
    ("cloudflare_api_token", "CLOUDFLARE_API_TOKEN", "Cloudflare API token", lambda r: _body(r, B64URL, 40)),
    (
        "atlassian_token",
        "JIRA_API_TOKEN",
        "Atlassian API token",
        lambda r: "ATA" + "TT3xFfGF0" + _body(r, B64URL, 180) + "=" + _body(r, HEX, 8).upper(),
    ),
    ("azure_storage_key", "AZURE_STORAGE_KEY", "Azure storage account key", lambda r: _body(r, B64, 86) + "=="),
    (
        "azure_client_secret",
        "AZURE_CLIENT_SECRET",
        "Azure client secret",
        lambda r: _body(r, ALNUM, 3) + "8Q~" + _body(r, ALNUM + "_-.~", 34),
    ),
    ("twilio_auth_token", "TWILIO_AUTH_TOKEN", "Twilio auth token", lambda r: _body(r, HEX, 32)),
    ("mailgun_key", "MAILGUN_API_KEY", "Mailgun API key", lambda r: "ke" + "y-" + _body(r, HEX, 32)),
    (
        "mailchimp_key",
        "MAILCHIMP_API_KEY",
        "Mailchimp API key",
        lambda r: _body(r, HEX, 32) + "-us" + str(r.randint(1, 21)),
    ),
    ("datadog_api_key", "DD_API_KEY", "Datadog API key", lambda r: _body(r, HEX, 32)),
    ("datadog_app_key", "DD_APP_KEY", "Datadog application key", lambda r: _body(r, HEX, 40)),
    ("heroku_api_key", "HEROKU_API_KEY", "Heroku API key", _uuid),
    ("postmark_server_token", "POSTMARK_SERVER_TOKEN", "Postmark server token", _uuid),
    ("square_access_token", "SQUARE_ACCESS_TOKEN", "Square access token", lambda r: "EA" + "AA" + _body(r, B64URL, 60)),
    (
        "discord_bot_token",
        "DISCORD_BOT_TOKEN",
        "Discord bot token",
        lambda r: "MT" + _body(r, ALNUM, 24) + "." + _body(r, B64URL, 6) + "." + _body(r, B64URL, 38),
    ),
    (
        "telegram_bot_token",
        "TELEGRAM_BOT_TOKEN",
        "Telegram bot token",
        lambda r: str(r.randint(10**8, 10**10)) + ":AA" + _body(r, B64URL, 33),
    ),
    ("algolia_admin_key", "ALGOLIA_ADMIN_KEY", "Algolia admin API key", lambda r: _body(r, HEX, 32)),
    (
        "asana_pat",
        "ASANA_ACCESS_TOKEN",
        "Asana personal access token",
        lambda r: "2/" + _body(r, DIGITS, 16) + "/" + _body(r, DIGITS, 16) + ":" + _body(r, HEX, 32),
    ),
    ("dropbox_token", "DROPBOX_ACCESS_TOKEN", "Dropbox access token", lambda r: "sl." + _body(r, B64URL, 130)),
    (
        "terraform_cloud_token",
        "TFE_TOKEN",
        "Terraform Cloud token",
        lambda r: _body(r, ALNUM, 14) + ".atlas" + "v1." + _body(r, ALNUM, 67),
    ),
    ("vercel_token", "VERCEL_TOKEN", "Vercel token", lambda r: _body(r, ALNUM, 24)),
    ("supabase_key", "SUPABASE_SERVICE_KEY", "Supabase service key", lambda r: "sb" + "p_" + _body(r, HEX, 40)),
    ("docker_hub_pat", "DOCKERHUB_TOKEN", "Docker Hub access token", lambda r: "dck" + "r_pat_" + _body(r, B64URL, 27)),
    (
        "bitbucket_app_password",
        "BITBUCKET_APP_PASSWORD",
        "Bitbucket app password",
        lambda r: "AT" + "BB" + _body(r, ALNUM, 32),
    ),
    ("groq_key", "GROQ_API_KEY", "Groq API key", lambda r: "gs" + "k_" + _body(r, ALNUM, 52)),
    ("replicate_token", "REPLICATE_API_TOKEN", "Replicate API token", lambda r: "r8" + "_" + _body(r, ALNUM, 37)),
    ("openrouter_key", "OPENROUTER_API_KEY", "OpenRouter key", lambda r: "sk-" + "or-v1-" + _body(r, HEX, 64)),
    ("cohere_key", "COHERE_API_KEY", "Cohere API key", lambda r: _body(r, ALNUM, 40)),
    ("mistral_key", "MISTRAL_API_KEY", "Mistral API key", lambda r: _body(r, ALNUM, 32)),
    (
        "pinecone_key",
        "PINECONE_API_KEY",
        "Pinecone API key",
        lambda r: "pc" + "sk_" + _body(r, ALNUM, 5) + "_" + _body(r, ALNUM, 60),
    ),
    (
        "langsmith_key",
        "LANGSMITH_API_KEY",
        "LangSmith API key",
        lambda r: "lsv2" + "_pt_" + _body(r, HEX, 32) + "_" + _body(r, HEX, 10),
    ),
    ("wandb_key", "WANDB_API_KEY", "Weights & Biases API key", lambda r: _body(r, HEX, 40)),
    ("notion_token", "NOTION_TOKEN", "Notion integration token", lambda r: "nt" + "n_" + _body(r, ALNUM, 46)),
    (
        "airtable_pat",
        "AIRTABLE_TOKEN",
        "Airtable personal access token",
        lambda r: "pat" + _body(r, ALNUM, 14) + "." + _body(r, HEX, 64),
    ),
    ("figma_token", "FIGMA_TOKEN", "Figma personal access token", lambda r: "fig" + "d_" + _body(r, B64URL, 40)),
    (
        "resend_key",
        "RESEND_API_KEY",
        "Resend API key",
        lambda r: "re" + "_" + _body(r, ALNUM, 8) + "_" + _body(r, ALNUM, 24),
    ),
    ("snyk_token", "SNYK_TOKEN", "Snyk token", _uuid),
    ("sonarqube_token", "SONAR_TOKEN", "SonarQube token", lambda r: "sq" + "u_" + _body(r, HEX, 40)),
    ("jfrog_api_key", "ARTIFACTORY_API_KEY", "Artifactory API key", lambda r: "AK" + "Cp" + _body(r, ALNUM, 69)),
    ("gitlab_runner_token", "RUNNER_TOKEN", "GitLab runner token", lambda r: "gl" + "rt-" + _body(r, B64URL, 20)),
    ("buildkite_token", "BUILDKITE_API_TOKEN", "Buildkite API token", lambda r: "bk" + "ua_" + _body(r, HEX, 40)),
    (
        "onepassword_token",
        "OP_SERVICE_ACCOUNT_TOKEN",
        "1Password service account token",
        lambda r: "op" + "s_" + _body(r, B64URL, 120),
    ),
    (
        "tailscale_key",
        "TS_AUTHKEY",
        "Tailscale auth key",
        lambda r: "tskey-" + "auth-" + _body(r, ALNUM, 17) + "-" + _body(r, ALNUM, 33),
    ),
    (
        "ngrok_token",
        "NGROK_AUTHTOKEN",
        "ngrok authtoken",
        lambda r: "2" + _body(r, ALNUM, 26) + "_" + _body(r, ALNUM, 21),
    ),
    ("razorpay_secret", "RAZORPAY_KEY_SECRET", "Razorpay key secret", lambda r: _body(r, ALNUM, 24)),
    (
        "braintree_token",
        "BRAINTREE_ACCESS_TOKEN",
        "Braintree access token",
        lambda r: "access_token$production$" + _body(r, LOWER + DIGITS, 16) + "$" + _body(r, HEX, 32),
    ),
    ("plaid_secret", "PLAID_SECRET", "Plaid secret", lambda r: _body(r, HEX, 30)),
    (
        "firebase_server_key",
        "FCM_SERVER_KEY",
        "Firebase server key",
        lambda r: "AA" + "AA" + _body(r, B64URL, 7) + ":APA91b" + _body(r, B64URL, 134),
    ),
    ("kubeconfig_client_key", "client-key-data", "kubeconfig client key data", _pem_b64),
    ("ssh_passphrase", "SSH_PASSPHRASE", "SSH key passphrase", lambda r: _body(r, ALNUM + "!@#%^&*", 20)),
]

GENERIC_SHAPES: list[Shape] = [
    ("generic_hex32_secret", "APP_SECRET", "app secret", lambda r: _body(r, HEX, 32)),
    ("generic_hex64_key", "SIGNING_KEY", "signing key", lambda r: _body(r, HEX, 64)),
    ("generic_b64_token", "SERVICE_TOKEN", "service token", lambda r: _body(r, B64, 44)),
    ("generic_b64url_token", "REFRESH_TOKEN", "refresh token", lambda r: _body(r, B64URL, 64)),
    ("generic_alnum_password", "DB_PASSWORD", "database password", lambda r: _body(r, ALNUM, 18)),
    ("generic_symbols_password", "ADMIN_PASSWORD", "admin password", lambda r: _body(r, ALNUM + "!#%&*+?", 22)),
    ("generic_credential", "PARTNER_CREDENTIAL", "partner credential", lambda r: _body(r, ALNUM, 36)),
    ("generic_auth_code", "WEBHOOK_AUTH", "webhook auth secret", lambda r: _body(r, B64URL, 32)),
    (
        "generic_license_key",
        "LICENSE_KEY",
        "license key",
        lambda r: "-".join(_body(r, UPPER + DIGITS, 5) for _ in range(5)),
    ),
    ("generic_uuid_token", "API_TOKEN", "API token", _uuid),
    ("generic_passphrase_b64", "ENCRYPTION_PASSPHRASE", "encryption passphrase", lambda r: _body(r, B64, 32) + "="),
    ("generic_private_key_b64", "PRIVATE_KEY", "private key", lambda r: "MII" + _body(r, B64, 120)),
    ("generic_session_cookie", "SESSION_SECRET", "session secret", lambda r: _body(r, ALNUM, 48)),
    ("generic_hmac_key", "HMAC_KEY", "HMAC key", lambda r: _body(r, B64, 43) + "="),
    ("generic_german_password", "PASSWORT", "Passwort", lambda r: _body(r, ALNUM, 20)),
    ("generic_spanish_key", "CLAVE_API", "clave de la API", lambda r: _body(r, ALNUM, 28)),
]


def _snake(name: str) -> str:
    return name.lower().replace("-", "_")


def _camel(name: str) -> str:
    first, *rest = _snake(name).split("_")
    return first + "".join(part.title() for part in rest)


FORMS: dict[str, Callable[[str, str, str], str]] = {
    "prose": lambda name, noun, value: f"Use the {noun} {value} for the staging deploy.",
    "prose_is": lambda name, noun, value: f"fyi the {noun} is {value} until we rotate it",
    "yaml": lambda name, noun, value: f"deploy:\n  {_snake(name)}: {value}\n  region: eu-west-1",
    "json": lambda name, noun, value: f'{{"{_camel(name)}": "{value}", "retries": 3}}',
    "env": lambda name, noun, value: f"{name}={value}",
    "shell": lambda name, noun, value: f"export {name}='{value}' && ./deploy.sh",
    "python": lambda name, noun, value: f'client = Client({_snake(name)}="{value}")',
    "javascript": lambda name, noun, value: f"const {_camel(name)} = '{value}';",
    "go": lambda name, noun, value: f'{_camel(name)} := "{value}"',
    "ruby": lambda name, noun, value: f"config[:{_snake(name)}] = '{value}'",
    "url": lambda name, noun, value: f"curl 'https://api.example.com/v2/items?{_snake(name)}={value}&page=2'",
    "header": lambda name, noun, value: (
        f"curl -H 'X-{name.title().replace('_', '-')}: {value}' https://api.example.com"
    ),
}


def planted(seed: int = 29, forms_per_kind: int = 4) -> list[Planted]:
    """Every kind of :data:`VENDOR_SHAPES` and :data:`GENERIC_SHAPES` in ``forms_per_kind`` forms: always
    prose, then the other forms in turn (so every form is used), each with its own random value."""
    rnd = random.Random(seed)
    others = [form for form in FORMS if form != "prose"]
    out = []
    for number, (kind, name, noun, make) in enumerate(VENDOR_SHAPES + GENERIC_SHAPES):
        chosen = ["prose"] + [others[(number * 3 + i) % len(others)] for i in range(forms_per_kind - 1)]
        for form in chosen:
            value = make(rnd)
            out.append(Planted(kind, form, FORMS[form](name, noun, value), value))
    return out


def surviving_fragment(planted: Planted, out: str, length: int = 8) -> str | None:
    """A piece of the planted value of ``length`` characters found in ``out`` (the sanitised text) that is not
    also in the text around the value (``access_token`` in both the name and a Braintree token), or None."""
    value, around = planted.value, planted.text.replace(planted.value, "\n")
    for start in range(0, max(1, len(value) - length + 1)):
        piece = value[start : start + length]
        if piece in out and piece not in around:
            return piece
    return None
