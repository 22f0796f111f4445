"""A synthetic Claude Code session file of a given size, shaped like real ones (deterministic for a seed).

Each turn: a ``file-history-snapshot`` line, the user's prompt, then 3 to 8 steps, each an assistant message
written over several lines with one ``message.id`` (thinking with a signature, text, one or two ``tool_use``
blocks), ``progress`` lines, and ``tool_result`` carriers that repeat the result in ``toolUseResult`` as
Claude Code does; results are code or command output of about 0.1 to 60 KB. A ``stop_hook_summary`` line ends the
turn. The code mentions tokens, keys, passwords and URLs (so the sanitiser's context rules run), and some
results hold an e-mail address or an AWS key id (built from pieces).
"""

from __future__ import annotations

import base64
import json
import random
import uuid
from pathlib import Path

SESSION = "b3e1c0de-5a1e-4c0d-9e55-000000000001"
CWD = "/home/benchuser/projects/shop"
TOOLS = ("Read", "Bash", "Grep", "Glob", "Edit")
WORDS = (
    "config",
    "settings",
    "handler",
    "request",
    "response",
    "order",
    "cart",
    "payment",
    "user",
    "session",
    "cache",
    "retry",
    "client",
    "server",
    "route",
    "model",
    "schema",
    "query",
    "result",
    "logger",
    "token",
    "api_key",
    "password_hash",
    "auth",
    "https://api.shop-example.com/v1",
)


def _code_lines(rng: random.Random, n: int) -> list[str]:
    lines = []
    for i in range(n):
        a, b, c = rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS)
        kind = rng.random()
        if kind < 0.3:
            lines.append(f"def {a}_{b}({c}, timeout=30):")
        elif kind < 0.6:
            lines.append(f"    {a} = {b}.get_{c}({rng.randint(0, 999)})")
        elif kind < 0.8:
            lines.append(f"    logger.info('{a} {b} %s', {c})")
        else:
            lines.append(f"# {a} {b} {c} handling for case {i}")
    return lines


def _result_text(rng: random.Random, pool: list[str], size: int) -> str:
    out, total, number = [], 0, 1
    while total < size:
        line = f"{number:6d}\u2192{rng.choice(pool)}"
        out.append(line)
        total += len(line) + 1
        number += 1
    if rng.random() < 0.05:
        out.insert(len(out) // 2, "# owner: " + "dev.ops" + "@" + "shop-example.com")
    if rng.random() < 0.02:
        out.insert(len(out) // 3, "AWS_ACCESS_KEY_ID=" + "AKIA" + "BENCH" + "X" * 11)
    return "\n".join(out)


def generate(path: Path, target_bytes: int, seed: int = 7) -> dict:
    """Write a session of about ``target_bytes`` to ``path``; returns counts (bytes, lines, turns, steps)."""
    rng = random.Random(seed)
    pool = _code_lines(rng, 4000)
    counters = {"lines": 0, "turns": 0, "steps": 0}
    parent = None

    def base(kind: str) -> dict:
        return {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": CWD,
            "sessionId": SESSION,
            "version": "2.1.38",
            "gitBranch": "main",
            "type": kind,
            "uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "timestamp": "2026-01-02T10:00:00.000Z",
        }

    with path.open("w", encoding="utf-8") as handle:

        def emit(record: dict) -> None:
            nonlocal parent
            handle.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
            counters["lines"] += 1
            if "uuid" in record:
                parent = record["uuid"]

        while handle.tell() < target_bytes:
            counters["turns"] += 1
            emit(
                {
                    "type": "file-history-snapshot",
                    "messageId": str(uuid.UUID(int=rng.getrandbits(128))),
                    "snapshot": {"trackedFileBackups": {}, "timestamp": "2026-01-02T10:00:00.000Z"},
                    "isSnapshotUpdate": False,
                }
            )
            prompt = f"Please look at the {rng.choice(WORDS)} {rng.choice(WORDS)} code and fix the failing test"
            emit({**base("user"), "message": {"role": "user", "content": prompt}})
            for _ in range(rng.randint(3, 8)):
                counters["steps"] += 1
                message_id = "msg_" + base64.b32encode(rng.randbytes(15)).decode()
                thinking = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 200)))
                emit(
                    {
                        **base("assistant"),
                        "requestId": "req_" + message_id[4:],
                        "message": {
                            "model": "claude-sonnet-4-5",
                            "id": message_id,
                            "type": "message",
                            "role": "assistant",
                            "content": [
                                {
                                    "type": "thinking",
                                    "thinking": thinking,
                                    "signature": base64.b64encode(rng.randbytes(300)).decode(),
                                }
                            ],
                            "usage": {"input_tokens": 9, "output_tokens": 8},
                        },
                    }
                )
                emit(
                    {
                        **base("assistant"),
                        "message": {
                            "model": "claude-sonnet-4-5",
                            "id": message_id,
                            "type": "message",
                            "role": "assistant",
                            "content": [{"type": "text", "text": f"Let me check the {rng.choice(WORDS)} module."}],
                        },
                    }
                )
                calls = []
                for _ in range(1 if rng.random() < 0.8 else 2):
                    tool = rng.choice(TOOLS)
                    call_id = "toolu_" + base64.b32encode(rng.randbytes(15)).decode()
                    arguments = {
                        "Read": {"file_path": f"{CWD}/src/{rng.choice(WORDS)}.py"},
                        "Bash": {
                            "command": f"pytest -x tests/test_{rng.choice(WORDS)}.py",
                            "description": "Run the tests",
                        },
                        "Grep": {"pattern": rng.choice(WORDS), "path": "src"},
                        "Glob": {"pattern": "src/**/*.py"},
                        "Edit": {
                            "file_path": f"{CWD}/src/{rng.choice(WORDS)}.py",
                            "old_string": rng.choice(pool),
                            "new_string": rng.choice(pool),
                        },
                    }[tool]
                    emit(
                        {
                            **base("assistant"),
                            "message": {
                                "model": "claude-sonnet-4-5",
                                "id": message_id,
                                "type": "message",
                                "role": "assistant",
                                "content": [{"type": "tool_use", "id": call_id, "name": tool, "input": arguments}],
                            },
                        }
                    )
                    calls.append(call_id)
                for call_id in calls:
                    for _ in range(rng.randint(1, 3)):
                        emit(
                            {
                                **base("progress"),
                                "data": {"type": "hook_progress", "hookEvent": "PreToolUse"},
                                "toolUseID": call_id,
                            }
                        )
                    size = int(rng.choice((200, 800, 2000, 6000, 15000, 40000)) * rng.uniform(0.5, 1.5))
                    text = _result_text(rng, pool, size)
                    emit(
                        {
                            **base("user"),
                            "message": {
                                "role": "user",
                                "content": [
                                    {"tool_use_id": call_id, "type": "tool_result", "content": text, "is_error": False}
                                ],
                            },
                            "toolUseResult": {"stdout": text, "stderr": "", "interrupted": False},
                        }
                    )
            emit(
                {
                    **base("system"),
                    "subtype": "stop_hook_summary",
                    "hookCount": 1,
                    "hookErrors": [],
                    "preventedContinuation": False,
                    "level": "suggestion",
                }
            )
        counters["bytes"] = handle.tell()
    return counters
