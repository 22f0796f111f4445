"""Test-wide settings: never reach a provider over the network; Hypothesis's profile (``dev`` locally, ``ci`` in CI);
Python's cyclic garbage collector off while the tests are collected and nothing left for it to walk at exit."""

import gc
import os
import shutil
from pathlib import Path

os.environ["LITELLM_OFFLINE_MODE"] = "true"
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# Hypothesis profiles: ``ci`` (CI=true, as GitHub Actions and .ci/run set it) runs every property test with the
# examples its test asks for (Hypothesis's 100 when it names none); ``dev``, the default elsewhere, runs at most
# DEV_MAX_EXAMPLES per test, for a developer's loop in seconds. HYPOTHESIS_PROFILE=ci runs CI's depth locally.
DEV_MAX_EXAMPLES = 20
settings.register_profile("ci", deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None, max_examples=DEV_MAX_EXAMPLES)
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or (
    "ci" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "dev"
)
settings.load_profile(HYPOTHESIS_PROFILE)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``dev``, cap the examples of the tests that name their own (``@settings(max_examples=200)``), which a
    profile alone does not override. ``_hypothesis_internal_use_settings`` is where ``@settings`` and ``@given``
    keep a test's settings (read when the test runs); without it the test keeps its own count."""
    if HYPOTHESIS_PROFILE != "dev":
        return
    for item in items:
        test = getattr(item, "obj", None)
        own = getattr(test, "_hypothesis_internal_use_settings", None)
        if own is not None and own.max_examples > DEV_MAX_EXAMPLES:
            test._hypothesis_internal_use_settings = settings(own, max_examples=DEV_MAX_EXAMPLES)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> object:
    """Collect with the cyclic collector off: importing the test modules (LiteLLM's and Dagster's thousands of
    pydantic models and classes) leaves ~670,000 objects alive, and the collector's full collections walked them
    all again and again while they were being made, ~30% of the collection's CPU. Imports make almost no cyclic
    garbage; the collector is back, as it was, before the first test runs (every worker collects)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return (yield)
    finally:
        if was_enabled:
            gc.enable()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """The session's last act: freeze every object alive, so that the collections Python's finalisation runs
    while it tears the modules down walk none of them (what ``toolchoice_pipeline.util.collector``'s
    ``freeze_before_exit`` does for the command; refcounting still frees them and every ``atexit`` handler runs)."""
    gc.freeze()


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
