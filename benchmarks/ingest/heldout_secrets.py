"""The held-out secrets (``toolchoice_pipeline_tests/heldout_secrets.py``): how many survive the sanitiser.

One command from the repo root::

    python benchmarks/ingest/heldout_secrets.py [--seeds N]

Every held-out kind and form (the split-across-lines forms among them) for seeds ``0..N-1``, each a new random
value; a value *leaks* when a piece of 8 characters of it survives :meth:`Sanitiser.text`. Prints the totals and,
per leaking kind, the count and one sanitised example. The false-positive figures are
``benchmarks/ingest/secrets_rates.py``'s.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from toolchoice_pipeline.util.sanitise import Sanitiser  # noqa: E402
from toolchoice_pipeline_tests.heldout_secrets import held_out, survivor  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="random draws of every kind (default 5)")
    args = parser.parse_args()
    leaks: dict[str, list[str]] = {}
    planted = 0
    kinds = set()
    for seed in range(args.seeds):
        for item in held_out(seed):
            planted += 1
            kinds.add(item.kind)
            out = Sanitiser().text(item.text)
            if survivor(item, out):
                leaks.setdefault(item.kind, []).append(out[:160])
    leaked = sum(len(v) for v in leaks.values())
    print(f"planted {planted} values of {len(kinds)} kinds; leaked {leaked} values of {len(leaks)} kinds")
    for kind, outs in sorted(leaks.items()):
        print(f"  {kind} x{len(outs)}: {outs[0]!r}")


if __name__ == "__main__":
    main()
