"""A held-out set of secrets: kinds and forms that neither the sanitiser's rules nor ``secret_kinds.py`` name.

Written by someone who did not write the sanitiser, to check it on material it was not built on. Each
:data:`HELD_OUT_SHAPES` entry is a service's documented token shape or a credential file's layout (a SendGrid
key, a Discord bot token, a Telegram bot token, an Azure connection string, a Docker ``config.json`` auth, an
``.npmrc`` auth token, a Kubernetes ``Secret`` manifest...), each written in its own natural form; the
:data:`PROSE_FORMS` add the same secret in prose in other languages, base64-wrapped, and split across lines.
No value is a literal of this file: prefixes are split and bodies drawn from a seeded ``random.Random``.

Used by ``test_heldout_secrets.py`` (planted in Claude Code, Codex and OTel recordings, then ingested).
"""

from __future__ import annotations

import base64
import random
from collections.abc import Callable
from dataclasses import dataclass

from toolchoice_pipeline_tests.secret_kinds import ALNUM, B64, B64URL, DIGITS, HEX
from toolchoice_pipeline_tests.secret_kinds import _body as _b


@dataclass(frozen=True)
class HeldOut:
    kind: str
    text: str  # the text the secret sits in
    values: tuple[str, ...]  # what must not survive (no piece of 8+ characters of any)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


Maker = Callable[[random.Random], HeldOut]


def _sendgrid(r: random.Random) -> HeldOut:
    v = "S" + "G." + _b(r, B64URL, 22) + "." + _b(r, B64URL, 43)
    return HeldOut("sendgrid", f"sg = sendgrid.SendGridAPIClient('{v}')", (v[3:],))


def _discord_bot(r: random.Random) -> HeldOut:
    v = "M" + _b(r, ALNUM, 23) + "." + _b(r, B64URL, 6) + "." + _b(r, B64URL, 38)
    return HeldOut("discord_bot_token", f"client.run('{v}')", (v,))


def _discord_webhook(r: random.Random) -> HeldOut:
    secret = _b(r, B64URL, 68)
    url = "https://discord.com/api/web" + f"hooks/{_b(r, DIGITS, 18)}/{secret}"
    return HeldOut("discord_webhook", f"post the build status to {url} when done", (secret,))


def _telegram(r: random.Random) -> HeldOut:
    v = _b(r, DIGITS, 10) + ":" + "AA" + _b(r, B64URL, 33)
    return HeldOut("telegram_bot_token", f'bot = telebot.TeleBot("{v}")', (v.split(":")[1],))


def _azure_conn(r: random.Random) -> HeldOut:
    key = _b(r, B64, 86) + "=="
    text = "DefaultEndpointsProtocol=https;AccountName=stprod01;AccountKey=" + key + ";EndpointSuffix=core.windows.net"
    return HeldOut("azure_storage_connection_string", text, (key,))


def _azure_sas(r: random.Random) -> HeldOut:
    sig = _b(r, B64, 43) + "%3D"
    url = f"https://stprod01.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r&se=2027-01-01&sig={sig}"
    return HeldOut("azure_sas_url", f"download {url}", (sig[:-3],))


def _azure_sb(r: random.Random) -> HeldOut:
    key = _b(r, B64, 43) + "="
    text = f"Endpoint=sb://orders.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={key}"
    return HeldOut("azure_service_bus", text, (key,))


def _twilio_api_key(r: random.Random) -> HeldOut:
    sid, secret = "S" + "K" + _b(r, HEX, 32), _b(r, ALNUM, 32)
    return HeldOut("twilio_api_key", f"Client('{sid}', '{secret}', account_sid)", (sid[2:], secret))


def _mailgun_new(r: random.Random) -> HeldOut:
    v = _b(r, HEX, 32) + "-" + _b(r, HEX, 8) + "-" + _b(r, HEX, 8)
    return HeldOut("mailgun_private_key", f'requests.post(url, auth=("api", "{v}"))', (v,))


def _databricks_cfg(r: random.Random) -> HeldOut:
    v = "dap" + "i" + _b(r, HEX, 32) + "-2"
    text = f"[DEFAULT]\nhost = https://adb-123.azuredatabricks.net\ntoken = {v}\n"
    return HeldOut("databrickscfg", text, (v[4:],))


def _vault_batch(r: random.Random) -> HeldOut:
    v = "hv" + "b." + _b(r, B64URL, 120)
    return HeldOut("vault_batch_token", f"vault login {v}", (v[4:],))


def _vault_legacy(r: random.Random) -> HeldOut:
    v = "s." + _b(r, ALNUM, 24)
    return HeldOut("vault_legacy_token", f"VAULT_TOKEN={v} vault kv get secret/app", (v[2:],))


def _npmrc(r: random.Random) -> HeldOut:
    h = _b(r, HEX, 32)
    v = f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"
    return HeldOut("npmrc_auth_token", f"//registry.npmjs.org/:_authToken={v}\nalways-auth=true", (v,))


def _shopify_shared(r: random.Random) -> HeldOut:
    v = "shp" + "ss_" + _b(r, HEX, 32)
    return HeldOut("shopify_shared_secret", f"webhook verification uses {v}", (v[6:],))


def _shopify_custom(r: random.Random) -> HeldOut:
    v = "shp" + "ca_" + _b(r, HEX, 32)
    return HeldOut("shopify_custom_app_token", f"headers={{'X-Shopify-Access-Token': '{v}'}}", (v[6:],))


def _pgp(r: random.Random) -> HeldOut:
    body = "\n".join(_b(r, B64, 64) for _ in range(4))
    text = (
        "-----BEGIN PGP "
        + "PRIVATE KEY BLOCK-----\n\n"
        + body
        + "\n="
        + _b(r, B64, 4)
        + "\n-----END PGP PRIVATE KEY BLOCK-----"
    )
    return HeldOut("pgp_private_key", text, tuple(body.split("\n")))


def _openssh_escaped(r: random.Random) -> HeldOut:
    lines = [_b(r, B64, 70) for _ in range(3)]
    text = (
        '{"ssh_key": "-----BEGIN OPENSSH '
        + "PRIVATE KEY-----\\n"
        + "\\n".join(lines)
        + '\\n-----END OPENSSH PRIVATE KEY-----"}'
    )
    return HeldOut("openssh_key_json_escaped", text, tuple(lines))


def _jwt_hs(r: random.Random) -> HeldOut:
    head = _b64('{"alg":"HS256","typ":"JWT"}').rstrip("=").replace("+", "-").replace("/", "_")
    claims = _b64('{"sub":"' + _b(r, DIGITS, 10) + '","role":"service_role"}').rstrip("=")
    sig = _b(r, B64URL, 43)
    return HeldOut("jwt_in_cookie", f"Cookie: session={head}.{claims}.{sig}; Path=/", (sig,))


def _basic_url(r: random.Random) -> HeldOut:
    pw = _b(r, ALNUM, 16)
    return HeldOut("basic_auth_url_amqp", f"BROKER_URL=amqp://orders:{pw}@rabbit.internal:5672/prod", (pw,))


def _redis_url(r: random.Random) -> HeldOut:
    pw = _b(r, ALNUM, 20)
    return HeldOut("redis_url_password_only", f"redis.from_url('rediss://:{pw}@cache.internal:6380/0')", (pw,))


def _netrc_inline(r: random.Random) -> HeldOut:
    pw = _b(r, ALNUM, 18)
    return HeldOut("netrc_one_line", f"machine api.heroku.com login dev@example.com password {pw}", (pw,))


def _docker_auth(r: random.Random) -> HeldOut:
    pw = _b(r, ALNUM, 20)
    auth = _b64(f"deploybot:{pw}")
    text = '{"auths": {"registry.example.com": {"auth": "' + auth + '"}}}'
    return HeldOut("docker_config_auth", text, (auth, pw))


def _k8s_secret(r: random.Random) -> HeldOut:
    pw = _b(r, ALNUM, 18)
    enc = _b64(pw)
    text = f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: {enc}\n  username: YWRtaW4="
    return HeldOut("k8s_secret_data", text, (enc, pw))


def _env_secret(r: random.Random) -> HeldOut:
    v = _b(r, ALNUM, 30)
    return HeldOut("env_foo_secret", f"ORDERS_SIGNING_SECRET={v}\nLOG_LEVEL=debug", (v,))


def _pass_flag(r: random.Random) -> HeldOut:
    pw = _b(r, ALNUM, 16)
    return HeldOut("cli_password_flag", f"psql --host db --username app --password={pw} -c 'select 1'", (pw,))


def _pgpass(r: random.Random) -> HeldOut:
    pw = _b(r, ALNUM, 18)
    return HeldOut("pgpass_line", f"echo 'db.internal:5432:orders:app:{pw}' >> ~/.pgpass", (pw,))


def _gcp_sa(r: random.Random) -> HeldOut:
    lines = [_b(r, B64, 64) for _ in range(3)]
    text = (
        '{"type": "service_account", "project_id": "p", "private_key": "-----BEGIN '
        + "PRIVATE KEY-----\\n"
        + "\\n".join(lines)
        + '\\n-----END PRIVATE KEY-----\\n", "client_email": "x@p.iam.gserviceaccount.com"}'
    )
    return HeldOut("gcp_service_account_json", text, tuple(lines))


def _airtable(r: random.Random) -> HeldOut:
    v = "pat" + _b(r, ALNUM, 14) + "." + _b(r, HEX, 64)
    return HeldOut("airtable_pat", f"Airtable(api_key='{v}')", (v[3:],))


def _hubspot(r: random.Random) -> HeldOut:
    h = _b(r, HEX, 32)
    v = "pat-" + "na1-" + f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    return HeldOut("hubspot_pat", f'hubspot.Client.create(access_token="{v}")', (v[8:],))


def _langsmith(r: random.Random) -> HeldOut:
    v = "lsv2" + "_pt_" + _b(r, HEX, 32) + "_" + _b(r, HEX, 10)
    return HeldOut("langsmith_key", f"LANGCHAIN_API_KEY={v}", (v[8:],))


def _tavily(r: random.Random) -> HeldOut:
    v = "tvl" + "y-" + _b(r, ALNUM, 32)
    return HeldOut("tavily_key", f'TavilyClient("{v}")', (v[5:],))


def _pinecone(r: random.Random) -> HeldOut:
    v = "pcs" + "k_" + _b(r, ALNUM, 5) + "_" + _b(r, ALNUM, 64)
    return HeldOut("pinecone_key", f'Pinecone(api_key="{v}")', (v[5:],))


def _xai(r: random.Random) -> HeldOut:
    v = "xa" + "i-" + _b(r, ALNUM, 80)
    return HeldOut("xai_key", f"client = OpenAI(base_url='https://api.x.ai/v1', api_key='{v}')", (v[4:],))


def _alibaba(r: random.Random) -> HeldOut:
    kid, sec = "LTA" + "I" + _b(r, ALNUM, 20), _b(r, ALNUM, 30)
    return HeldOut("alibaba_access_key", f"AcsClient('{kid}', '{sec}', 'cn-hangzhou')", (kid[4:], sec))


def _tencent(r: random.Random) -> HeldOut:
    kid, sec = "AKI" + "D" + _b(r, ALNUM, 32), _b(r, ALNUM, 32)
    return HeldOut("tencent_secret", f'credential.Credential("{kid}", "{sec}")', (kid[4:], sec))


def _terraform(r: random.Random) -> HeldOut:
    v = _b(r, ALNUM, 14) + ".atlas" + "v1." + _b(r, ALNUM, 67)
    return HeldOut("terraform_cloud_token", 'credentials "app.terraform.io" {\n  token = "' + v + '"\n}', (v,))


def _fly(r: random.Random) -> HeldOut:
    v = "fo" + "1_" + _b(r, B64URL, 43)
    return HeldOut("flyio_token", f"flyctl deploy --access-token {v}", (v[3:],))


def _bitbucket(r: random.Random) -> HeldOut:
    v = "ATB" + "B" + _b(r, ALNUM, 32)
    return HeldOut("bitbucket_app_password", f"git clone https://dev:{v}@bitbucket.org/acme/api.git", (v,))


def _asana(r: random.Random) -> HeldOut:
    v = "1/" + _b(r, DIGITS, 16) + ":" + _b(r, HEX, 32)
    return HeldOut("asana_pat", f"asana.Client.access_token('{v}')", (v[2:],))


def _mapbox(r: random.Random) -> HeldOut:
    v = "s" + "k.eyJ" + _b(r, B64URL, 60) + "." + _b(r, B64URL, 22)
    return HeldOut("mapbox_secret_token", f"MAPBOX_DOWNLOADS_TOKEN={v}", (v[5:],))


def _contentful(r: random.Random) -> HeldOut:
    v = "CFPA" + "T-" + _b(r, B64URL, 43)
    return HeldOut("contentful_pat", f"contentful-management token {v}", (v[6:],))


def _age_in_file(r: random.Random) -> HeldOut:
    v = _b(r, ALNUM, 24)
    return HeldOut("wifi_psk", f'network={{\n  ssid="office"\n  psk="{v}"\n}}', (v,))


def _ini_secret(r: random.Random) -> HeldOut:
    v = _b(r, ALNUM, 32)
    return HeldOut("ini_client_secret", f"[oauth]\nclient_id = web-app\nclient_secret = {v}\n", (v,))


def _xml_password(r: random.Random) -> HeldOut:
    v = _b(r, ALNUM, 20)
    return HeldOut(
        "maven_settings_password",
        f"<server><id>nexus</id><username>ci</username><password>{v}</password></server>",
        (v,),
    )


def _connection_string(r: random.Random) -> HeldOut:
    v = _b(r, ALNUM, 18)
    return HeldOut(
        "sqlserver_connection_string", f"Server=tcp:db.example.com,1433;Database=orders;User Id=app;Password={v};", (v,)
    )


HELD_OUT_SHAPES: tuple[Maker, ...] = (
    _sendgrid,
    _discord_bot,
    _discord_webhook,
    _telegram,
    _azure_conn,
    _azure_sas,
    _azure_sb,
    _twilio_api_key,
    _mailgun_new,
    _databricks_cfg,
    _vault_batch,
    _vault_legacy,
    _npmrc,
    _shopify_shared,
    _shopify_custom,
    _pgp,
    _openssh_escaped,
    _jwt_hs,
    _basic_url,
    _redis_url,
    _netrc_inline,
    _docker_auth,
    _k8s_secret,
    _env_secret,
    _pass_flag,
    _pgpass,
    _gcp_sa,
    _airtable,
    _hubspot,
    _langsmith,
    _tavily,
    _pinecone,
    _xai,
    _alibaba,
    _tencent,
    _terraform,
    _fly,
    _bitbucket,
    _asana,
    _mapbox,
    _contentful,
    _age_in_file,
    _ini_secret,
    _xml_password,
    _connection_string,
)

# Prose in other languages, a base64-wrapped secret, and one split across lines: (kind, text maker).
PROSE_FORMS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("prose_french", lambda v: f"Le mot de passe du serveur est {v}, ne le partage pas."),
    ("prose_polish", lambda v: f"Hasło do bazy: {v}"),
    ("prose_russian", lambda v: f"Пароль от базы данных: {v}"),
    ("prose_japanese", lambda v: f"本番のパスワードは {v} です。"),
    ("prose_chinese", lambda v: f"数据库密码是 {v} ，请保密。"),
    ("prose_korean", lambda v: f"관리자 비밀번호: {v}"),
    ("prose_turkish", lambda v: f"Sunucu şifresi {v} olarak ayarlandı."),
    ("prose_swedish", lambda v: f"Lösenordet till kontot är {v}"),
    ("prose_arabic", lambda v: f"كلمة المرور هي {v}"),
    ("prose_greek", lambda v: f"Ο κωδικός πρόσβασης είναι {v}"),
    ("prose_no_keyword", lambda v: f"log in as admin with {v} on the staging box"),
    ("base64_wrapped_env", lambda v: "echo " + _b64(f"DB_PASSWORD={v}\n") + " | base64 -d > .env"),
)
# A secret split across lines (each piece too short to be judged alone): counted like the others.
SPLIT_FORMS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("split_shell_continuation", lambda v: f'export API_TOKEN="{v[:12]}\\\n{v[12:]}"'),
    ("split_python_concat", lambda v: f'API_KEY = (\n    "{v[:14]}"\n    "{v[14:]}"\n)'),
)


def held_out(seed: int = 7) -> list[HeldOut]:
    """One secret of every :data:`HELD_OUT_SHAPES` kind and every :data:`PROSE_FORMS` and :data:`SPLIT_FORMS`
    form (values drawn afresh from ``seed``)."""
    rnd = random.Random(seed)
    out = [make(rnd) for make in HELD_OUT_SHAPES]
    for kind, form in PROSE_FORMS + SPLIT_FORMS:
        value = _b(rnd, ALNUM, 10) + _b(rnd, DIGITS, 2) + _b(rnd, "!#%*+", 1) + _b(rnd, ALNUM, 9)
        text = form(value)
        values: tuple[str, ...] = (value,)
        if kind.startswith("split"):
            values = (value[:12], value[12:])
        elif kind.startswith("base64"):
            values = (text.split()[1],)  # the wrapped value is what a reader decodes
        out.append(HeldOut(kind, text, values))
    return out


def survivor(item: HeldOut, out: str, length: int = 8) -> str | None:
    """A piece of ``length`` characters of one of ``item``'s values found in ``out``, not also in the text
    around the values, or None."""
    around = item.text
    for value in item.values:
        around = around.replace(value, "\n")
    for value in item.values:
        for start in range(0, max(1, len(value) - length + 1)):
            piece = value[start : start + length]
            if piece in out and piece not in around:
                return piece
    return None
