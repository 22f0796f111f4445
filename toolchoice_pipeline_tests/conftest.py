"""Test-wide settings: never reach a provider over the network."""

import os
import shutil
from pathlib import Path

os.environ["LITELLM_OFFLINE_MODE"] = "true"
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import pytest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"
CASES = Path(__file__).resolve().parent / "cases"


@pytest.fixture
def repo_data_dir() -> Path:
    """The project's own ``data/`` directory (read-only in tests: copy it before writing)."""
    return DATA


@pytest.fixture
def demo_copy(tmp_path) -> Path:
    """A copy of the demo suite and run configuration in ``tmp_path/data`` (the repository's stays untouched)."""
    shutil.copytree(DATA / "suites" / "coding_agent", tmp_path / "data" / "suites" / "coding_agent")
    shutil.copy(DATA / "toolchoice.yaml", tmp_path / "data" / "toolchoice.yaml")
    return tmp_path
