"""`dagster dev` and `dg dev` load the code location under one name (found on the 3.13 new-user pass: `dg dev`
named it after the checkout's directory, and the daemon dropped the schedule's and sensor's state on each switch)."""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).parent.parent / "pyproject.toml"


def test_dg_and_dagster_name_the_code_location_alike():
    tools = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]
    assert tools["dg"]["project"]["code_location_name"] == tools["dagster"]["code_location_name"]
    assert tools["dg"]["project"]["code_location_target_module"] == tools["dagster"]["module_name"]
