"""The sanitiser without a vendor list: secrets of 68 kinds generated at run time (most named nowhere in the
sanitiser) in 12 forms are redacted; the older fixtures still are; real recorded text, hashes, UUIDs, paths,
model names, identifiers and base64 image data survive. Figures: ``benchmarks/ingest/secrets_rates.py``."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import pytest

from toolchoice_pipeline.util.sanitise import Sanitiser, sanitise
from toolchoice_pipeline_tests.secret_kinds import FORMS, GENERIC_SHAPES, VENDOR_SHAPES, planted, surviving_fragment
from toolchoice_pipeline_tests.test_sanitise import planted_secrets

DATA = Path(__file__).resolve().parent / "data"
SEEDS = (0, 1, 2, 3, 4)


def test_more_than_sixty_kinds_in_every_form_are_generated():
    items = [item for seed in SEEDS for item in planted(seed)]
    assert len({item.kind for item in items}) >= 60  # 68: 52 shapes of vendors, 16 of no vendor
    assert {item.form for item in items} == set(FORMS)
    assert len({item.value for item in items}) == len(items)  # a fresh random value every time


@pytest.mark.parametrize("seed", SEEDS)
def test_no_generated_secret_survives_in_any_form(seed):
    leaked = []
    for item in planted(seed):
        out = Sanitiser().text(item.text)
        if surviving_fragment(item, out) or "[REDACTED:" not in out:
            leaked.append(f"{item.kind} ({item.form}): {out[:120]}")
    assert not leaked, leaked


def test_each_kind_is_redacted_in_prose_by_its_context_word_alone():
    rnd = random.Random(7)
    for kind, _name, noun, make in VENDOR_SHAPES + GENERIC_SHAPES:
        value = make(rnd)
        out = sanitise(f"Here you go: {noun} {value} (valid for 90 days)")
        assert value[-10:] not in out and out.endswith("(valid for 90 days)"), (kind, out)


def test_the_aws_key_pair_pasted_in_a_prompt_is_masked_both():
    rnd = random.Random()
    key_id = "AK" + "IA" + "".join(rnd.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
    secret = "".join(rnd.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+") for _ in range(40))
    out = sanitise(f"Use AWS key {key_id} with secret {secret} to upload the build.")
    assert key_id not in out and secret[:12] not in out and secret[-12:] not in out
    assert out.startswith("Use AWS key [REDACTED:") and out.endswith(" to upload the build.")


def test_a_kubeconfig_client_key_is_masked_and_the_certificate_kept():
    key = base64.b64encode(b"-----BEGIN " + b"EC PRIVATE KEY-----\nMHcCAQEEI" + b"x" * 40 + b"\n-----END").decode()
    cert = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIC" + b"y" * 40 + b"\n-----END").decode()
    kubeconfig = f"users:\n- name: admin\n  user:\n    client-certificate-data: {cert}\n    client-key-data: {key}\n"
    out = sanitise(kubeconfig)
    assert key[20:60] not in out and "client-key-data: [REDACTED:private_key]" in out
    assert cert in out


@pytest.mark.parametrize("secret", planted_secrets(), ids=lambda s: f"{s.kind}:{s.text[:18]}")
def test_the_older_fixtures_still_mask_with_their_kind(secret):
    out = Sanitiser().text(secret.text)
    assert secret.needle not in out and f"[REDACTED:{secret.kind}]" in out


def test_hashes_uuids_paths_model_names_identifiers_and_images_survive():
    image = base64.b64encode(bytes(random.Random(3).randrange(256) for _ in range(300))).decode()
    texts = [
        "commit 3f2a9c1b0d4e5f60718293a4b5c6d7e8f9a0b1c2 fixes the token refresh",
        "request 7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f failed; see /var/log/app/auth_service.log",
        "max_tokens for gpt-4o-mini-2024-07-18 is 16384; tokenizer: meta-llama/Llama-3.1-8B-Instruct",
        "the primary key is (tenant_id, created_at); keyboard layout: us-international",
        "secret_name: projects/acme-prod/secrets/db-password/versions/latest",
        "auth_mode: interactive_browser_login, token_url: https://login.example.com/oauth2/v2.0/token",
        'const apiKey = process.env.STRIPE_SECRET_KEY; const token = getTokenFromVault("payments")',
        f'{{"type": "image", "source": {{"type": "base64", "media_type": "image/png", "data": "{image}"}}}}',
        f"![chart](data:image/png;base64,{image})",
        "password = getpass.getpass(); key = deriveKeyFromPassphrase2(password, saltValue)",
    ]
    sanitiser = Sanitiser()
    assert [sanitiser.text(text) for text in texts] == texts
    assert not sanitiser.counts


def _real_strings() -> list[str]:
    files = sorted((DATA / "transcripts").rglob("*.jsonl")) + sorted(
        p for p in (DATA / "otel").rglob("*.jsonl") if "-no-content" not in p.parent.name
    )

    def walk(value):
        if isinstance(value, dict):
            for key, item in value.items():
                yield key
                yield from walk(item)
        elif isinstance(value, list):
            for item in value:
                yield from walk(item)
        elif isinstance(value, str):
            try:
                yield from walk(json.loads(value)) if value.lstrip().startswith(("{", "[")) else [value]
            except ValueError:
                yield value

    return [text for path in files for line in path.read_text().splitlines() if line for text in walk(json.loads(line))]


def test_the_context_rule_redacts_nothing_in_the_real_recorded_sessions_and_traces():
    texts = _real_strings()
    assert sum(len(t) for t in texts) > 500_000
    sanitiser = Sanitiser()
    for text in texts:
        sanitiser.text(text)
    assert sanitiser.counts["secret_in_context"] == 0, sanitiser.counts
    assert sanitiser.counts["private_key"] == 0
