"""LiteLLM's bundled price table is used by default (issue 14): importing the package sets
``LITELLM_LOCAL_MODEL_COST_MAP`` before LiteLLM reads it, so no run tries to download the table (this machine, like
the tests, has no route to it: without the setting LiteLLM prints its fetch warnings here)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = (
    "import toolchoice_pipeline, litellm, os; "
    "print(os.environ['LITELLM_LOCAL_MODEL_COST_MAP']); "
    "print(litellm.model_cost['gpt-4o-mini']['input_cost_per_token'] > 0)"
)


#: The package's import alone: what it leaves in the environment LiteLLM reads when it is imported next.
PACKAGE_PROBE = "import toolchoice_pipeline, os; print(os.environ['LITELLM_LOCAL_MODEL_COST_MAP'])"


def _probe(probe: str = PROBE, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_")}
    env.update(extra)
    return subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_the_bundled_price_table_is_used_by_default_without_any_fetch_warning():
    done = _probe()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]  # the bundled table holds prices
    assert "cost map" not in done.stderr and "WARNING" not in done.stderr


@pytest.mark.slow
def test_a_users_choice_is_kept():
    done = _probe(PACKAGE_PROBE, LITELLM_LOCAL_MODEL_COST_MAP="False", LITELLM_OFFLINE_MODE="true")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]
