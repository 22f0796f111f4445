"""Secrets: how many planted kinds leak through the sanitiser, and how often it redacts real text that holds none.

One command from the repo root::

    python benchmarks/ingest/secrets_rates.py [--seeds N]

Planted: :func:`toolchoice_pipeline_tests.secret_kinds.planted` for seeds ``0..N-1`` (68 kinds, each in 4 of 12
forms per seed, a new random value each time), plus the older fixtures of ``test_sanitise.planted_secrets``.
A planted value *leaks* when a piece of 8 characters of it survives :meth:`Sanitiser.text`.

False positives: every string of the real recorded files in ``toolchoice_pipeline_tests/data`` (the Claude Code
and Codex transcripts, the OpenTelemetry producer exports, the hand-written trace, and the BFCL question files:
real users' prompts and function schemas), JSON held inside strings decoded first, as the ingest does. None of
them holds a secret, so every secret redaction is a false positive (e-mail addresses and home-directory user
names are counted apart: those are redacted on purpose). Also counted: git hashes, UUIDs and absolute paths
(other than home directories) in the input that do not survive. A second corpus, held out: the project's own source and docs. Results go to ``benchmarks/results/secrets_rates.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

from toolchoice_pipeline.util.sanitise import Sanitiser  # noqa: E402
from toolchoice_pipeline_tests.secret_kinds import planted, surviving_fragment  # noqa: E402
from toolchoice_pipeline_tests.test_sanitise import planted_secrets  # noqa: E402

DATA = REPO / "toolchoice_pipeline_tests" / "data"
RESULTS = REPO / "benchmarks" / "results" / "secrets_rates.json"
PII_KINDS = {"email", "user_name"}
_HOME = re.compile(r"/(?:home|Users)/")  # a home directory's user name is redacted on purpose
SHAPES = {
    "git_hash": re.compile(r"\b[0-9a-f]{40}\b"),
    "uuid": re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"),
    "path": re.compile(r"(?<![\w:/])/(?:[\w.\-]+/)+[\w.\-]+"),
}


def real_files() -> list[Path]:
    files = sorted((DATA / "transcripts").rglob("*.jsonl"))
    files += sorted(p for p in (DATA / "otel").rglob("*.jsonl") if "-no-content" not in p.parent.name)
    files += [DATA / "ingest" / "otel_genai_traces.jsonl"]
    files += sorted((DATA / "bfcl").glob("BFCL_v4_*.json")) + sorted((DATA / "bfcl" / "more").glob("BFCL_v4_*.json"))
    return files


def strings(value) -> list[str]:
    """Every string leaf of a JSON value, JSON held in a string decoded and walked instead."""
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *strings(v)]]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    if isinstance(value, str):
        if value.lstrip().startswith(("{", "[")):
            try:
                return strings(json.loads(value))
            except ValueError:
                pass
        return [value]
    return []


def false_positives() -> dict:
    per_kind: Counter = Counter()
    pii: Counter = Counter()
    lost: Counter = Counter()
    seen: Counter = Counter()
    samples: list[str] = []
    chars = words = 0
    per_file = {}
    for path in real_files():
        before = sum(per_kind.values())
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            for text in strings(json.loads(line)):
                sanitiser = Sanitiser()
                out = sanitiser.text(text)
                chars += len(text.encode("utf-8"))
                words += len(text.split())
                for kind, count in sanitiser.counts.items():
                    (pii if kind in PII_KINDS else per_kind)[kind] += count
                    if kind not in PII_KINDS and len(samples) < 40:
                        samples.append(f"{path.name}: {kind}: {text[:160]!r}")
                for shape, pattern in SHAPES.items():
                    found = pattern.findall(text)
                    seen[shape] += len(found)
                    lost[shape] += sum(1 for item in found if item not in out and not _HOME.match(item))
        per_file[str(path.relative_to(REPO))] = sum(per_kind.values()) - before
    total = sum(per_kind.values())
    return {
        "files": len(per_file),
        "text_mb": round(chars / 1e6, 3),
        "words": words,
        "secret_redactions": total,
        "per_mb": round(total / (chars / 1e6), 3),
        "per_1000_words": round(total * 1000 / words, 4),
        "by_kind": dict(sorted(per_kind.items())),
        "by_file": {name: n for name, n in per_file.items() if n},
        "pii_redactions": dict(sorted(pii.items())),
        "shapes_seen": dict(seen),
        "shapes_lost": dict(lost),
        "samples": samples,
    }


def own_source() -> dict:
    """A second corpus, held out (never looked at while writing the rules): this project's own code, docs and
    configuration (tests excluded: they plant secrets), each file as one text. Its docs describe secrets
    (``https://user:password@host``, ``password=...``), so some redactions there are intended."""
    files = [
        p
        for p in sorted(REPO.rglob("*"))
        if p.suffix in (".py", ".md", ".yaml", ".toml")
        and not {".git", "toolchoice_pipeline_tests", "work", "results"} & set(p.relative_to(REPO).parts)
    ]
    per_kind: Counter = Counter()
    chars = words = 0
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        sanitiser = Sanitiser()
        sanitiser.text(text)
        chars += len(text.encode("utf-8"))
        words += len(text.split())
        per_kind.update({k: v for k, v in sanitiser.counts.items() if k not in PII_KINDS})
    total = sum(per_kind.values())
    return {
        "files": len(files),
        "text_mb": round(chars / 1e6, 3),
        "secret_redactions": total,
        "per_mb": round(total / (chars / 1e6), 3),
        "per_1000_words": round(total * 1000 / words, 4),
        "by_kind": dict(sorted(per_kind.items())),
    }


def leaks(seeds: int) -> dict:
    kinds: set[str] = set()
    leaked_kinds: Counter = Counter()
    planted_values = leaked = 0
    forms: Counter = Counter()
    examples = []
    for seed in range(seeds):
        for item in planted(seed):
            kinds.add(item.kind)
            planted_values += 1
            forms[item.form] += 1
            out = Sanitiser().text(item.text)
            if surviving_fragment(item, out):
                leaked += 1
                leaked_kinds[item.kind] += 1
                if len(examples) < 20:
                    examples.append(f"seed {seed} {item.kind} ({item.form})")
    older = planted_secrets()
    older_leaked = [s.kind for s in older if s.needle in Sanitiser().text(s.text)]
    return {
        "seeds": seeds,
        "kinds_planted": len(kinds),
        "kinds_leaked": len(leaked_kinds),
        "values_planted": planted_values,
        "values_leaked": leaked,
        "leaked_by_kind": dict(sorted(leaked_kinds.items())),
        "forms": dict(sorted(forms.items())),
        "examples": examples,
        "older_fixtures": {"planted": len(older), "leaked": older_leaked},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="random draws of every kind (default 10)")
    args = parser.parse_args()
    result = {
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "command": f"python benchmarks/ingest/secrets_rates.py --seeds {args.seeds}",
        "planted": leaks(args.seeds),
        "false_positives": false_positives(),
        "false_positives_own_source": own_source(),
    }
    RESULTS.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    p, f = result["planted"], result["false_positives"]
    print(
        f"planted: {p['kinds_planted']} kinds, {p['values_planted']} values; leaked: {p['kinds_leaked']} kinds, "
        f"{p['values_leaked']} values; older fixtures leaked: {len(p['older_fixtures']['leaked'])}"
    )
    print(
        f"false positives: {f['secret_redactions']} in {f['text_mb']} MB of real text ({f['per_mb']}/MB, "
        f"{f['per_1000_words']}/1000 words); lost: {f['shapes_lost']} of {f['shapes_seen']}"
    )
    o = result["false_positives_own_source"]
    print(f"own source and docs: {o['secret_redactions']} in {o['text_mb']} MB ({o['per_mb']}/MB): {o['by_kind']}")


if __name__ == "__main__":
    main()
