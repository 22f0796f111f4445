"""The sanitiser: every kind of secret is redacted with its typed placeholder, ordinary text is kept, and no
planted secret survives an ingest (in any file it wrote, or in the CLI's output).

The planted secrets are built at run time from pieces, so no credential-shaped literal sits in the source.
:func:`planted_secrets` and :func:`write_transcript_with_secrets` are meant for reuse: a pipeline test can
plant the same secrets, run the release, and check Parquet, DuckDB and the Dagster event log with
:func:`assert_no_secret_in_tree` / :func:`assert_no_secret_in_text`.
"""

from __future__ import annotations

import base64
import json
import random
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from toolchoice_pipeline.cli import main
from toolchoice_pipeline.util.sanitise import KINDS, Sanitiser, detect_secrets_plugins, sanitise, truncate_text
from toolchoice_pipeline.util.secret_rules import GENERIC_API_KEY, KEY_FORMATS
from toolchoice_pipeline.util.split_secrets import joined_view
from toolchoice_pipeline_tests.conftest import CASES


@dataclass(frozen=True)
class PlantedSecret:
    kind: str  # the placeholder kind the sanitiser must use
    text: str  # how the secret appears in a transcript
    needle: str  # a part of the secret that must appear nowhere after sanitising


def planted_secrets() -> list[PlantedSecret]:
    """One planted secret of each kind (50 entries, 49 kinds), each inside the text it would appear in."""
    letters = "AbCdEfGhIjKlMnOpQrStUvWxYz"
    digits = "0123456789"
    aws_id = "AKIA" + "Q7" + "ZX" * 7
    aws_secret = ("wJalrXUtnFEMI" + "K7MDENG" + "bPxRfiCY" + "PLANTEDKEY1234").ljust(40, "Q")[:40]
    github = "gh" + "p_" + (letters + digits)[:36]
    anthropic = "sk-" + "ant-api03-" + letters + digits + "_plantedAnthropic"
    openai = "sk-" + "proj-" + digits + letters + "plantedOpenAIkey"
    slack = "xo" + "xb-" + "112233445566-778899001122-" + "plantedslacktoken0000000"
    google = "AI" + "za" + "Sy" + (letters + digits)[:33]
    stripe = "sk_" + "live_" + "plantedStripe" + digits + "abcd"
    jwt_header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
    jwt_body = base64.urlsafe_b64encode(b'{"sub":"planted-user-42","name":"Planted"}').rstrip(b"=").decode()
    jwt = f"{jwt_header}.{jwt_body}.plantedSignature_{digits}"
    bearer = "plantedBearer" + digits + "xyzXYZ"
    basic = base64.b64encode(b"planted-admin:planted-pw-9731").decode()
    key_body = "MIIEplantedPrivateKeyBodyLine" + letters
    sendgrid = "SG." + ("planted" + letters)[:22] + "." + ("plantedSendGrid" + letters + digits + letters)[:43]
    return [
        PlantedSecret("aws_access_key_id", f"export AWS_ACCESS_KEY_ID={aws_id}", aws_id),
        PlantedSecret("aws_secret_access_key", f'aws_secret_access_key = "{aws_secret}"', aws_secret),
        PlantedSecret("github_token", f"git clone https://x-access:{github}@github.com/org/repo", github),
        PlantedSecret("anthropic_api_key", f"ANTHROPIC_KEY is {anthropic}", anthropic),
        PlantedSecret("openai_api_key", f"client = OpenAI(api_key='{openai}')", openai),
        PlantedSecret("slack_token", f"SLACK_TOKEN={slack}", slack),
        PlantedSecret("google_api_key", f"https://maps.example.com/api?key={google}", google),
        PlantedSecret("stripe_key", f"stripe.api_key = {stripe}", stripe),
        PlantedSecret("jwt", f"cookie: session={jwt}", jwt_body),
        PlantedSecret("bearer_token", f"curl -H 'Authorization: Bearer {bearer}' https://api.example.com", bearer),
        PlantedSecret("basic_auth", f"Authorization: Basic {basic}", basic),
        PlantedSecret("url_password", "postgres://app:plantedDbPassw0rd@db.internal:5432/app", "plantedDbPassw0rd"),
        PlantedSecret(
            "private_key", f"-----BEGIN RSA PRIVATE KEY-----\n{key_body}\nAAAA\n-----END RSA PRIVATE KEY-----", key_body
        ),
        PlantedSecret("generic_secret", "DB_PASSWORD=plantedHunter2pw", "plantedHunter2pw"),
        PlantedSecret("email", "send the report to planted.person@corp-example.com", "planted.person@corp-example.com"),
        PlantedSecret("user_name", "cd /home/plantedalice/projects/app", "plantedalice"),
        PlantedSecret("user_name", r"C:\Users\plantedbob\repo", "plantedbob"),
        PlantedSecret("sendgrid_api_key", f"SENDGRID={sendgrid}", sendgrid),
        *newer_planted_secrets(),
    ]


def newer_planted_secrets() -> list[PlantedSecret]:
    """Secrets of current key formats (our key-format rules), with random bodies of each format's alphabet
    drawn at run time from a fixed seed; each sits in prose, so the kind names the format and not a
    ``name = value`` assignment."""
    rnd = random.Random(13)
    lower, upper, digits, hexa = (
        "abcdefghijklmnopqrstuvwxyz",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "0123456789",
        "0123456789abcdef",
    )
    alnum = lower + upper + digits

    def body(alphabet: str, n: int) -> str:
        return "".join(rnd.choice(alphabet) for _ in range(n))

    formats = [  # (kind, prefix, alphabet, length, suffix)
        ("huggingface_access_token", "hf" + "_", lower + upper, 34, ""),
        ("huggingface_organization_api_token", "api" + "_org_", lower + upper, 34, ""),
        ("google_oauth_client_secret", "GOC" + "SPX-", alnum + "_-", 28, ""),
        ("databricks_api_token", "da" + "pi", hexa, 32, ""),
        ("digitalocean_pat", "dop" + "_v1_", hexa, 64, ""),
        ("vault_service_token", "hv" + "s.", alnum, 95, ""),
        ("atlassian_api_token", "ATA" + "TT3", alnum, 186, ""),
        ("grafana_service_account_token", "gl" + "sa_", alnum, 32, "_" + body(hexa, 8)),
        ("npm_access_token", "np" + "m_", lower + digits, 36, ""),
        ("pypi_upload_token", "py" + "pi-AgEIcHlwaS5vcmc", alnum + "_-", 70, ""),
        ("shopify_access_token", "sh" + "pat_", hexa, 32, ""),
        ("linear_api_key", "lin" + "_api_", lower + digits, 40, ""),
        ("doppler_api_token", "dp" + ".pt.", lower + digits, 43, ""),
        ("pulumi_api_token", "pu" + "l-", hexa, 40, ""),
        ("postman_api_token", "PM" + "AK-", hexa, 24, "-" + body(hexa, 34)),
        ("age_secret_key", "AGE-" + "SECRET-KEY-1", "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58, ""),
        ("sentry_user_token", "snt" + "ryu_", hexa, 64, ""),
        ("perplexity_api_key", "pp" + "lx-", alnum, 48, ""),
        ("planetscale_password", "psc" + "ale_pw_", alnum, 40, ""),
        ("rubygems_api_token", "rubyg" + "ems_", hexa, 48, ""),
        ("prefect_api_token", "pn" + "u_", alnum, 36, ""),
        ("readme_api_token", "rd" + "me_", lower + digits, 70, ""),
        ("sendinblue_api_token", "xkey" + "sib-", hexa, 64, "-" + body(lower + digits, 16)),
        ("openshift_user_token", "sha" + "256~", alnum + "_-", 43, ""),
        ("heroku_api_key_v2", "HR" + "KU-AA", alnum, 58, ""),
        ("clojars_api_token", "CLO" + "JARS_", lower + digits, 60, ""),
        ("dynatrace_api_token", "dt0" + "c01.", upper + digits, 24, "." + body(upper + digits, 64)),
        ("duffel_api_token", "duf" + "fel_live_", alnum, 43, ""),
    ]
    planted = []
    for kind, prefix, alphabet, length, suffix in formats:
        secret = prefix + body(alphabet, length) + suffix
        planted.append(PlantedSecret(kind, f"the new one is {secret} (rotated)", secret))
    url_token = body(alnum, 20) + "7" + body(alnum, 19)
    mysql_pw, netrc_pw, key_id = body(alnum, 14), body(alnum, 16), body(hexa, 40)
    return planted + [
        PlantedSecret("url_password", f"git clone https://{url_token}@github.com/org/repo", url_token),
        PlantedSecret("cli_password", f"mysql -u app -p{mysql_pw} -h db.internal app", mysql_pw),
        PlantedSecret("netrc_password", f"machine api.example.com login bot password {netrc_pw}", netrc_pw),
        PlantedSecret("generic_secret", f'"private_key_id": "{key_id}",', key_id),
    ]


def write_transcript_with_secrets(path: Path) -> list[str]:
    """A Claude Code session with every planted secret in a prompt, a tool input, a tool result (string and
    block list), assistant text and ``cwd``; returns the needles that must not survive. Two prompts, so the
    first turn's tool results are part of the second turn's stored context."""
    secrets = planted_secrets()
    half = len(secrets) // 2
    prompt_0 = "Please fix deploy. Notes:\n" + "\n".join(s.text for s in secrets[:half])
    tool_input = "\n".join(s.text for s in secrets[half:])
    result_text = "\n".join(s.text for s in secrets)
    cwd = "/home/plantedalice/projects/app"
    base = {"sessionId": "5ec2e7a1-0000-4000-8000-000000000001", "cwd": cwd, "version": "2.1.0"}
    lines = [
        {"type": "summary", "summary": "Deploy fixes", "leafUuid": "a1"},
        {**base, "type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": prompt_0}},
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"I will use {secrets[0].text} carefully."},
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": tool_input}},
                ],
            },
        },
        {
            **base,
            "type": "user",
            "uuid": "u2",
            "parentUuid": "a1",
            "toolUseResult": {"stdout": result_text},
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": result_text}],
            },
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a2",
            "parentUuid": "u2",
            "message": {
                "id": "msg_2",
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {"file_path": f"{cwd}/.env"}}
                ],
            },
        },
        {
            **base,
            "type": "user",
            "uuid": "u3",
            "parentUuid": "a2",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": [{"type": "text", "text": result_text}],
                    }
                ],
            },
        },
        {
            **base,
            "type": "user",
            "uuid": "u4",
            "parentUuid": "u3",
            "message": {"role": "user", "content": "Now rotate " + secrets[-1].text},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a3",
            "parentUuid": "u4",
            "message": {
                "id": "msg_3",
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_3",
                        "name": "Bash",
                        "input": {"command": "echo " + secrets[3].text},
                    }
                ],
            },
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return [s.needle for s in secrets]


def assert_no_secret_in_text(text: str, needles: list[str], where: str) -> None:
    found = [needle for needle in needles if needle in text]
    assert not found, f"planted secrets survive in {where}: {found}"


def assert_no_secret_in_tree(root: Path, needles: list[str]) -> int:
    """Check every file under ``root`` (as bytes, so binary files count too); returns how many were read."""
    files = [p for p in root.rglob("*") if p.is_file()]
    for path in files:
        data = path.read_bytes()
        found = [needle for needle in needles if needle.encode() in data]
        assert not found, f"planted secrets survive in {path}: {found}"
    return len(files)


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


# --- each kind --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("secret", planted_secrets(), ids=lambda s: f"{s.kind}:{s.text[:18]}")
def test_each_planted_secret_is_replaced_by_its_typed_placeholder(secret):
    sanitiser = Sanitiser()
    out = sanitiser.text(secret.text)
    assert secret.needle not in out
    assert f"[REDACTED:{secret.kind}]" in out
    assert sanitiser.counts[secret.kind] >= 1


def test_sanitising_twice_changes_nothing_more():
    sanitiser = Sanitiser()
    once = sanitiser.text("\n".join(s.text for s in planted_secrets()))
    counts = dict(sanitiser.counts)
    assert sanitiser.text(once) == once
    assert dict(sanitiser.counts) == counts


def test_at_least_forty_kinds_are_planted_and_each_kind_is_ours_or_detect_secrets():
    kinds = {s.kind for s in planted_secrets()}
    assert len(kinds) >= 40
    ours = set(KINDS) | {rule.kind for rule in KEY_FORMATS} | {GENERIC_API_KEY.kind}
    known = ours | {kind for kind, _ in detect_secrets_plugins()}
    assert kinds <= known


def test_the_surrounding_text_is_kept():
    out = sanitise("postgres://app:hunter2pw@db.internal:5432/app and mail ops@example.net")
    assert out == "postgres://app:[REDACTED:url_password]@db.internal:5432/app and mail [REDACTED:email]"


def test_ordinary_code_prose_and_identifiers_are_not_redacted():
    texts = [
        "const csrfToken = document.querySelector(\"meta[name='csrf-token']\")",
        "max_tokens: 1000, token_count = 55, password = getpass()",
        "The bearer authentication scheme uses basic functionality",
        "commit 3f2a9c1b0d4e5f60718293a4b5c6d7e8f9a0b1c2, id 7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f",
        "git@github.com:org/repo.git",
        "token: ${{ secrets.GITHUB_TOKEN }}",
        "api_key = os.environ['OPENAI_API_KEY']",
    ]
    sanitiser = Sanitiser()
    assert [sanitiser.text(t) for t in texts] == texts
    assert not sanitiser.counts


def test_a_private_key_cut_off_before_its_end_line_is_redacted_to_the_end():
    out = sanitise("key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAA")
    assert out == "key:\n[REDACTED:private_key]"


def test_user_names_learnt_from_a_cwd_are_redacted_everywhere_but_generic_ones_are_not():
    sanitiser = Sanitiser()
    sanitiser.learn_path("/Users/plantedcarol/work")
    sanitiser.learn_path("/home/dev/project")
    assert sanitiser.text("whoami -> plantedcarol; ls /home/dev") == (
        "whoami -> [REDACTED:user_name]; ls /home/[REDACTED:user_name]"
    )
    assert sanitiser.text("a dev server") == "a dev server"


def test_a_text_seen_again_is_judged_with_what_the_sanitiser_knows_then():
    """Clean texts are remembered (the same keys and values come back on every record): a user name learnt later
    still redacts one, and a text with a secret is counted each time it comes."""
    sanitiser = Sanitiser()
    assert sanitiser.text("ask plantedcarol") == "ask plantedcarol" == sanitiser.text("ask plantedcarol")
    sanitiser.learn_path("/Users/plantedcarol/work")
    assert sanitiser.text("ask plantedcarol") == "ask [REDACTED:user_name]"
    assert sanitiser.text("mail planted.bob@corp.example") == sanitiser.text("mail planted.bob@corp.example")
    assert sanitiser.counts == {"user_name": 1, "email": 2}


def test_values_under_secret_keys_are_redacted_whole_and_other_values_walked():
    value = Sanitiser().value(
        {
            "password": "plain words here",
            "max_tokens": 5,
            "token": "${TOKEN}",
            "cmd": ["ls /home/plantedalice"],
            "nested": {"api_key": "abc123xyz"},
        }
    )
    assert value == {
        "password": "[REDACTED:generic_secret]",
        "max_tokens": 5,
        "token": "${TOKEN}",
        "cmd": ["ls /home/[REDACTED:user_name]"],
        "nested": {"api_key": "[REDACTED:generic_secret]"},
    }


def test_truncation_keeps_head_and_tail_around_a_marker_and_never_splits_a_character():
    text = "é" * 3000  # 6000 bytes
    out = truncate_text(text, 1000)
    head, marker, tail = out.split("\n")
    assert marker.startswith("[TRUNCATED: ") and marker.endswith(" bytes]")
    assert set(head) == {"é"} and set(tail) == {"é"}
    assert len(head.encode()) <= 750 and len(tail.encode()) <= 250
    assert int(marker.split()[1]) == 6000 - len(head.encode()) - len(tail.encode())
    assert truncate_text("short", 1000) == "short"


def test_a_tool_result_is_redacted_before_it_is_truncated():
    secret = planted_secrets()[0]
    sanitiser = Sanitiser(max_tool_result_bytes=100)
    out = sanitiser.tool_result("x" * 70 + secret.text + "y" * 500)
    assert secret.needle not in out and "[TRUNCATED:" in out


# --- end to end: nothing planted survives an ingest --------------------------------------------------------


def test_no_planted_secret_survives_an_ingest_in_any_file_or_the_cli_output(tmp_path, capsys):
    transcript = tmp_path / "session.jsonl"
    needles = write_transcript_with_secrets(transcript)
    data_dir = tmp_path / "data"
    code, out, err = run_cli(
        [
            "ingest",
            "claude-code",
            str(transcript),
            "--suite",
            "planted",
            "--catalog",
            str(CASES / "catalog.json"),
            "--data-dir",
            str(data_dir),
        ],
        capsys,
    )
    assert code == 0, err
    assert assert_no_secret_in_tree(data_dir, needles) == 5
    assert_no_secret_in_text(out + err, needles, "the CLI output")
    tasks = (data_dir / "suites" / "planted" / "tasks.jsonl").read_text(encoding="utf-8")
    assert tasks.count("\n") == 2
    # The context of the second task holds both tool results (string and block list), redacted.
    assert tasks.count("[REDACTED:private_key]") >= 3
    manifest = json.loads((data_dir / "suites" / "planted" / "ingest.json").read_text(encoding="utf-8"))
    assert {s.kind for s in planted_secrets()} <= set(manifest["redactions"])
    assert "redacted:" in out and "anthropic_api_key x" in out


def test_a_token_as_the_userinfo_of_a_url_is_redacted_once_with_the_host_kept():
    token = "ghp" + "_" + "Zq9" * 12
    assert sanitise(f"git clone https://{token}@github.com/org/repo") == (
        "git clone https://[REDACTED:github_token]@github.com/org/repo"
    )
    assert (
        sanitise(f"https://x-access:{token}@github.com/o/r")
        == "https://x-access:[REDACTED:github_token]@github.com/o/r"
    )
    opaque = "Tk7" * 10
    assert sanitise(f"https://{opaque}@git.example.com/r") == "https://[REDACTED:url_password]@git.example.com/r"


def test_key_format_and_generic_rules_keep_low_entropy_and_placeholder_values():
    sanitiser = Sanitiser()
    texts = ["the api_key_name: example_placeholder_value", "hf_" + "a" * 34, "token: ${{ secrets.HF_TOKEN }}"]
    assert [sanitiser.text(t) for t in texts] == texts


def test_a_high_entropy_value_next_to_a_secret_like_name_is_redacted_as_generic_api_key():
    value = "Zq7" + "xK9pL2" + "mW4vR8tY"  # no known prefix, Shannon entropy > 3.5
    for text in [f"x-auth-header: {value}", f'{{"clientAuth": "{value}"}}', f"deployKeyId := '{value}'"]:
        sanitiser = Sanitiser()
        out = sanitiser.text(text)
        assert value not in out and "[REDACTED:generic_api_key]" in out, text
        assert sanitiser.counts["generic_api_key"] == 1


def test_the_generic_rule_keeps_words_paths_low_entropy_values_and_names_that_only_contain_a_secret_word():
    texts = [
        "tokenizer: meta-llama/Llama3-8B-Instruct9",
        "api_version: 2024-10-21",
        "auth_mode: interactive_browser_login",
        "api_root: /usr/local/lib/python3.11/site-packages",
        "keyboard = xK9pL2mW4vR8tYZq7",
    ]
    sanitiser = Sanitiser()
    assert [sanitiser.text(t) for t in texts] == texts
    assert not sanitiser.counts


# --- secrets split across lines and string literals ------------------------------------------------------------


def _split_value(seed: int) -> str:
    """A password-like value drawn at run time: letters, digits and a symbol, no known prefix."""
    rnd = random.Random(seed)
    alnum = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    return (
        "".join(rnd.choice(alnum) for _ in range(10))
        + str(rnd.randint(10, 99))
        + rnd.choice("!#%*+")
        + ("".join(rnd.choice(alnum) for _ in range(17)))
    )


# (shape, text maker from the value's three pieces): every way a transcript writes one value in pieces.
SPLIT_SHAPES = {
    "shell continuation in a double-quoted value": lambda a, b, c: f'export API_TOKEN="{a}\\\n{b}{c}"',
    "shell continuation with indentation": lambda a, b, c: f'curl -H "Authorization: Bearer {a}\\\n    {b}{c}" x',
    "python continuation inside a string": lambda a, b, c: f'password = "{a}\\\n{b}{c}"',
    "python implicit concatenation in parentheses": lambda a, b, c: f'API_KEY = (\n    "{a}"\n    "{b}"\n    "{c}"\n)',
    "python single quotes on two lines": lambda a, b, c: f"token = ('{a}'\n         '{b}{c}')",
    "python f-strings side by side": lambda a, b, c: f'secret = f"{a}" f"{b}{c}"',
    "javascript + at line ends": lambda a, b, c: f'const apiKey = "{a}" +\n  "{b}" +\n  "{c}";',
    "+ on one line and at a line start": lambda a, b, c: f'DB_PASSWORD = ("{a}" + "{b}"\n + "{c}")',
    "shell quotes of both kinds side by side": lambda a, b, c: f"export SECRET='{a}'\"{b}{c}\"",
    "JSON-escaped implicit concatenation": lambda a, b, c: (
        f'{{"code": "API_KEY = (\\n    \\"{a}\\"\\n    \\"{b}{c}\\"\\n)"}}'
    ),
    "JSON-escaped shell continuation": lambda a, b, c: f'{{"cmd": "export TOKEN=\\"{a}\\\\\\n{b}{c}\\""}}',
}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("shape", sorted(SPLIT_SHAPES))
def test_every_piece_of_a_secret_split_across_lines_or_literals_is_redacted(shape, seed):
    value = _split_value(seed)
    pieces = value[:11], value[11:20], value[20:]
    text = SPLIT_SHAPES[shape](*pieces)
    sanitiser = Sanitiser()
    out = sanitiser.text(text)
    assert not [p for p in pieces if p in out], out
    assert "[REDACTED:" in out and sum(sanitiser.counts.values()) >= 1
    assert sanitiser.text(out) == out  # idempotent


@pytest.mark.parametrize("width", [40, 64, 76])
@pytest.mark.parametrize("seed", [0, 1])
def test_a_value_wrapped_at_a_fixed_width_is_redacted_on_every_line(width, seed):
    rnd = random.Random(seed)
    raw = bytes(rnd.randrange(256) for _ in range(width * 2))
    value = base64.b64encode(raw).decode()[: width * 2 + width // 2]  # two whole lines and a shorter last one
    lines = [value[i : i + width] for i in range(0, len(value), width)]
    for text in ["client_secret: |\n  " + "\n  ".join(lines), "signing key:\n" + "\n".join(lines) + "\nok"]:
        out = Sanitiser().text(text)
        assert not [line for line in lines if line in out], out


def test_a_split_secret_is_counted_once_and_its_pieces_are_replaced_in_place():
    value = _split_value(5)
    sanitiser = Sanitiser()
    out = sanitiser.text(f'API_KEY = (\n    "{value[:14]}"\n    "{value[14:]}"\n)\nprint(API_KEY)')
    assert out.count("[REDACTED:") == 2  # one placeholder per piece: the code's shape is kept
    assert out.endswith('"\n)\nprint(API_KEY)') and out.startswith('API_KEY = (\n    "[REDACTED:')
    assert sum(sanitiser.counts.values()) == 1


def test_the_joined_view_maps_every_character_back_to_the_text():
    text = 'x = "ab" \\\n  "cd" +\n "ef"'
    view, origin = joined_view(text)
    assert view == 'x = "abcdef"'
    assert "".join(text[i] for i in origin) == view
    assert joined_view("no joins here") == ("no joins here", [])


def test_text_split_across_lines_that_holds_no_secret_is_kept():
    texts = [
        'msg = ("The quick brown fox "\n       "jumps over the lazy dog")',
        'print("hello" "world")',
        'x = "a" + "b"',
        'echo "line one \\\n  line two"',
        'path = "/usr/local/lib/python3.12/" "site-packages/toolchoice_pipeline/util"',
        'name = "isVisibleInTranscript" "OnlyDraft202012Validator"',
        'commit = ("3f786850e387550fdab8"\n          "36ed7e6dc881de23001b")',
        'run_id = "123e4567-e89b-12d3-" "a456-426614174000"',
        'args = {"command": "GITHUB_TOKEN=gh" + "p_" + "".join(chars)}',  # builds a fake token: no value
        "description: >\n  Fetches the weather for a city\n  and returns it in the requested unit.\n",
        "toolchoice_pipeline\nsuites_and_scoring\ndone",  # lines of words, not a wrapped value
        "\n".join(
            "toolu_01" + "".join(random.Random(i).choices("ABCDEFGHJKabcdefghjk123456789", k=22)) for i in range(4)
        ),
        "\n".join(str(uuid.UUID(int=random.Random(i).getrandbits(128))) for i in range(4)),
        'cmd = "docker run --rm \\\n  -v /work:/work \\\n  python:3.12 pytest -x"',
    ]
    sanitiser = Sanitiser()
    assert [sanitiser.text(t) for t in texts] == texts
    assert not sanitiser.counts
