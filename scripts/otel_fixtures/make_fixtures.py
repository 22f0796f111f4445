"""Make the OTel GenAI test fixtures with the real instrumentation libraries (see README.md here).

    python scripts/otel_fixtures/make_fixtures.py [--work DIR] [--only NAME ...]

For each producer below: a virtual environment under ``--work`` (default /tmp/toolchoice-otel-fixtures; never
the project's), the pinned packages installed from PyPI, then ``run_agent.py`` run in it against the fake
OpenAI-compatible server this script starts on 127.0.0.1, once per variant. Output:
``toolchoice_pipeline_tests/data/otel/<producer>-<version>[-<variant>]/{traces,logs}.jsonl`` and the
installed versions in ``toolchoice_pipeline_tests/data/otel/SOURCES.md``. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fake_openai  # noqa: E402
import ops_agent  # noqa: E402

REPO = HERE.parent.parent
OUT = REPO / "toolchoice_pipeline_tests" / "data" / "otel"
SDK = ["opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-common"]
OPENAI = "openai>=1.60,<2"  # the 1.x client the older instrumentations wrap (3.x no longer uses httpx)
CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

# name -> (run_agent producer, packages, {variant: (env, extra args)}); "" is the default variant.
PRODUCERS: dict[str, tuple[str, list[str], dict[str, tuple[dict[str, str], list[str]]]]] = {
    "openai-v2-2.4b0": (
        "openai-v2",
        ["opentelemetry-instrumentation-openai-v2==2.4b0", OPENAI, "opentelemetry-util-genai==1.1b0"],
        {  # 2.4b0 breaks with util-genai 1.2b0+
            "": ({CAPTURE: "EVENT_ONLY"}, []),  # one gen_ai.client.inference.operation.details log event per call
            "span": ({CAPTURE: "SPAN_ONLY"}, []),
            "no-content": ({}, []),
        },
    ),
    "openai-v2-2.1b0": (
        "openai-v2",
        [
            "opentelemetry-instrumentation-openai-v2==2.1b0",
            OPENAI,
            "opentelemetry-sdk==1.30.0",
            "opentelemetry-exporter-otlp-proto-common==1.30.0",
        ],
        {
            "": ({CAPTURE: "true"}, []),  # gen_ai.user.message / gen_ai.choice ... log events
            "no-content": ({}, []),
        },
    ),
    "openllmetry-0.47.5": (
        "openllmetry",
        [
            "opentelemetry-instrumentation-openai==0.47.5",
            OPENAI,
            "opentelemetry-sdk==1.38.0",
            "opentelemetry-exporter-otlp-proto-common==1.38.0",
        ],
        {
            "": ({"TRACELOOP_TRACE_CONTENT": "true"}, []),
        },
    ),
    "openllmetry-0.62.4": (
        "openllmetry",
        ["opentelemetry-instrumentation-openai==0.62.4", OPENAI],
        {
            "": ({"TRACELOOP_TRACE_CONTENT": "true"}, []),
            "no-content": ({"TRACELOOP_TRACE_CONTENT": "false"}, []),
            "truncated": ({"TRACELOOP_TRACE_CONTENT": "true", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "700"}, []),
        },
    ),
    "openlit-1.45.0": (
        "openlit",
        ["openlit==1.45.0", OPENAI],
        {
            "": ({}, []),
            "no-content": ({}, ["--no-content"]),
        },
    ),
    "pydantic-ai-0.8.1": (
        "pydantic-ai",
        [
            "pydantic-ai-slim[openai]==0.8.1",
            OPENAI,
            "opentelemetry-sdk==1.36.0",
            "opentelemetry-exporter-otlp-proto-common==1.36.0",
        ],
        {
            "": ({}, []),
            "no-content": ({}, ["--no-content"]),
        },
    ),
    "pydantic-ai-2.68.0": (
        "pydantic-ai",
        ["pydantic-ai-slim[openai]==2.68.0"],
        {
            "": ({}, []),
            "no-content": ({}, ["--no-content"]),
            "truncated": ({"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "700"}, []),
        },
    ),
    "langtrace-3.8.21": (
        "langtrace",
        ["langtrace-python-sdk==3.8.21", OPENAI, "importlib-metadata"],
        {
            "": ({}, []),
            "no-content": ({"TRACE_PROMPT_COMPLETION_DATA": "false"}, []),
        },
    ),
}


def venv(work: Path, name: str, packages: list[str]) -> Path:
    env_dir = work / name
    python = env_dir / "bin" / "python"
    installed = env_dir / "installed.txt"
    if not installed.exists() or installed.read_text() != " ".join(packages):
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(env_dir)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *packages, *SDK], check=True)
        installed.write_text(" ".join(packages))
    return python


def versions(python: Path) -> list[str]:
    frozen = subprocess.run([str(python), "-m", "pip", "freeze"], capture_output=True, text=True, check=True)
    keep = (
        "opentelemetry-instrumentation-openai",
        "openlit",
        "pydantic-ai",
        "langtrace",
        "openai==",
        "opentelemetry-sdk",
        "opentelemetry-api",
        "opentelemetry-semantic-conventions",
    )
    return [line for line in frozen.stdout.splitlines() if line.lower().startswith(keep)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/toolchoice-otel-fixtures"))
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    server = fake_openai.start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    sources = []
    for name, (producer, packages, variants) in PRODUCERS.items():
        if args.only and name not in args.only:
            continue
        python = venv(args.work, name, packages)
        for variant, (env, extra) in variants.items():
            out = OUT / (f"{name}-{variant}" if variant else name)
            shutil.rmtree(out, ignore_errors=True)
            run_env = {**os.environ, "PYTHONPATH": str(HERE), "OTEL_SDK_DISABLED": "false", **env}
            run_env.pop("OPENAI_API_KEY", None)
            result = subprocess.run(
                [str(python), str(HERE / "run_agent.py"), producer, str(out), base_url, *extra],
                env=run_env,
                capture_output=True,
                text=True,
            )
            if result.returncode != 0:
                print(f"{name} {variant or 'default'}: failed\n{result.stderr[-3000:]}", file=sys.stderr)
                continue
            settings = " ".join(f"{k}={v}" for k, v in env.items()) + (" " + " ".join(extra) if extra else "")
            sources.append(f"| {out.name} | {', '.join(versions(python))} | {settings.strip() or '(defaults)'} |")
            print(f"{out.name}: {', '.join(sorted(p.name for p in out.iterdir()))}")
    server.shutdown()
    tools = [{"type": "function", "function": tool} for tool in ops_agent.TOOLS]  # the agent's catalog, as a dump
    (OUT / "ops_agent_tools.json").write_text(json.dumps(tools, indent=2) + "\n", encoding="utf-8")
    if sources:
        write_sources(sources)


def write_sources(rows: list[str]) -> None:
    path = OUT / "SOURCES.md"
    old = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    names = {row.split("|")[1].strip() for row in rows}
    kept = [
        line
        for line in old
        if line.startswith("| ") and not line.startswith("| fixture") and line.split("|")[1].strip() not in names
    ]
    header = [
        "# OTel GenAI fixtures made by the real libraries",
        "",
        "Made by `python scripts/otel_fixtures/make_fixtures.py` (see scripts/otel_fixtures/README.md): the ops",
        "agent of scripts/otel_fixtures/ops_agent.py against a fake OpenAI-compatible server on 127.0.0.1.",
        "",
        "| fixture | installed versions | settings |",
        "|---|---|---|",
    ]
    path.write_text("\n".join(header + sorted(kept + rows)) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
