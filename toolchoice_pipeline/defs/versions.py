"""Code versions of the release assets: what changes an asset's output besides its inputs.

Dagster marks an asset stale when its ``code_version`` differs from the one its latest materialisation recorded.
Each asset's version is the pipeline's :data:`CODE_VERSION` plus the versions of the core parts that shape its
output: the judge's rubric (``RUBRIC_VERSION``) for ``judge_votes``, the scorer and the matching profiles for
``task_scores`` and ``release_scores``, the gate for ``release_scores``. A part's version hashes its source
files (12 hex), so an edit to the scorer or a profile shows as a new code version without anyone bumping one.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]

CODE_VERSION = "3"  # 3: agent_runs, judge_votes and task_scores staged per shard


def source_version(*parts: str) -> str:
    """12 hex of the SHA-256 over the package's ``parts`` (files, or directories of ``*.py`` read recursively),
    each file's path relative to the package and its bytes, in sorted order."""
    digest = hashlib.sha256()
    files: list[Path] = []
    for part in parts:
        path = PACKAGE / part
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    for file in sorted(set(files)):
        digest.update(file.relative_to(PACKAGE).as_posix().encode())
        digest.update(b"\0")
        digest.update(file.read_bytes())
    return digest.hexdigest()[:12]


def rubric_version() -> str:
    from toolchoice_pipeline.judge.prompt import RUBRIC_VERSION

    return RUBRIC_VERSION


#: The scorer (scoring/, less the matching profiles) and the matching profiles (scoring/matching/).
SCORER_VERSION = source_version(*(f"scoring/{p.name}" for p in sorted((PACKAGE / "scoring").glob("*.py"))))
MATCHING_VERSION = source_version("scoring/matching")
GATE_VERSION = source_version("releases/gate.py", "releases/noise.py", "releases/pairing.py")

#: ``code_version`` per asset (the others: :data:`CODE_VERSION`).
ASSET_CODE_VERSIONS = {
    "judge_votes": f"{CODE_VERSION}-rubric-{rubric_version()}",
    "task_scores": f"{CODE_VERSION}-scorer-{SCORER_VERSION}-matching-{MATCHING_VERSION}",
    "release_scores": f"{CODE_VERSION}-scorer-{SCORER_VERSION}-matching-{MATCHING_VERSION}-gate-{GATE_VERSION}",
}


def code_version(asset: str) -> str:
    return ASSET_CODE_VERSIONS.get(asset, CODE_VERSION)
