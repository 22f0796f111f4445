"""Cost of sanitising model replies before they are stored: N replies shaped like a run's, sanitised or not.

    python benchmarks/run/reply_sanitise.py [--replies N] [--off]

Replies: one in four with assistant text (a sentence or two), every one with a call whose arguments are a
short JSON object (a path, a command, a query), one in fifty with a long tool-style text (2 KB of code) and one
in two hundred with a secret. ``--off`` builds the same replies and skips the sanitiser, so the difference of
two whole-process timings is the sanitiser's cost. Run both with a process timer and compare medians.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from toolchoice_pipeline.util.reply_secrets import sanitise_reply  # noqa: E402

CODE = (Path(__file__).resolve().parents[2] / "toolchoice_pipeline" / "records" / "calls.py").read_text()[:2048]


def replies(n: int) -> list[dict]:
    rnd = random.Random(1)
    out = []
    for i in range(n):
        args = rnd.choice(
            [
                {"file_path": f"src/app/module_{i}.py"},
                {"command": f"pytest -x tests/test_{i}.py -q"},
                {"pattern": "**/*.ts", "path": "web"},
                {"city": "Paris", "unit": "celsius"},
                {"query": f"how to configure retries in httpx {i}"},
            ]
        )
        if i % 200 == 0:
            args = {"command": "GITHUB_TOKEN=gh" + "p_" + "".join(rnd.choice("abcdefXYZ0123") for _ in range(36))}
        content = None
        if i % 4 == 0:
            content = "I'll look at the failing test first, then check the configuration it loads."
        if i % 50 == 0:
            content = CODE
        out.append(
            {
                "role": "assistant",
                "content": content,
                "tool_calls": [
                    {"id": f"call_{i}", "type": "function", "function": {"name": "Bash", "arguments": json.dumps(args)}}
                ],
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replies", type=int, default=20000)
    parser.add_argument("--off", action="store_true", help="build the replies, do not sanitise them")
    args = parser.parse_args()
    built = replies(args.replies)
    changed = 0 if args.off else sum(sanitise_reply(reply) is not reply for reply in built)
    print(f"{len(built)} replies, {changed} changed")


if __name__ == "__main__":
    main()
