"""Loading the code location (as `dagster dev`'s code server and every run worker do) and building an asset's
output print none of Dagster's beta/preview warnings: they came at every start and in every run's log."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # a fresh interpreter: the warnings fire once per process, at import

PROGRAM = """
import dagster as dg
import toolchoice_pipeline.definitions
dg.Output(1, data_version=dg.DataVersion("v"))  # what every release asset returns: a beta parameter
"""


def test_loading_the_definitions_and_returning_data_versions_warn_nothing():
    done = subprocess.run(
        [sys.executable, "-W", "default", "-c", PROGRAM], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "BetaWarning" not in done.stderr and "PreviewWarning" not in done.stderr, done.stderr
    assert "currently in" not in done.stderr, done.stderr
