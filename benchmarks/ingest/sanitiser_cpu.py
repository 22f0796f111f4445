"""CPU of the sanitiser on real recorded text: every string of the transcripts, the OpenTelemetry producer exports
and BFCL's question files in ``toolchoice_pipeline_tests/data`` (1.5 MB) through one :class:`Sanitiser`.

    python benchmarks/ingest/sanitiser_cpu.py [--off]

``--off`` reads and walks the same files without sanitising: the difference of two whole-process CPU timings
is the sanitiser's. To compare with another version, run it with ``PYTHONPATH`` pointing at that version's
package (e.g. ``git archive <commit> toolchoice_pipeline | tar -x -C /tmp/base``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from toolchoice_pipeline.util.sanitise import Sanitiser

DATA = Path(__file__).resolve().parents[2] / "toolchoice_pipeline_tests" / "data"


def walk(value):
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from walk(item)
    elif isinstance(value, str):
        yield value


def main() -> None:
    files = sorted((DATA / "transcripts").rglob("*.jsonl"))
    files += sorted(p for p in (DATA / "otel").rglob("*.jsonl") if "-no-content" not in p.parent.name)
    files += sorted((DATA / "bfcl").glob("BFCL_v4_*.json"))
    texts = [t for p in files for line in p.read_text().splitlines() if line for t in walk(json.loads(line))]
    if "--off" not in sys.argv[1:]:
        sanitiser = Sanitiser()
        for text in texts:
            sanitiser.text(text)
    print(f"{len(texts)} strings, {sum(len(t) for t in texts)} characters")


if __name__ == "__main__":
    main()
