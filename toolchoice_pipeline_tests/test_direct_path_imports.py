"""Issue 27: a ``toolchoice run`` whose agents and judge are all our deterministic in-process models (``local/``)
never imports LiteLLM nor the OpenAI SDK (``execution.llm.complete`` calls them directly), and a run with a model
that goes through LiteLLM (``sim/``) does import it. Checked in a fresh interpreter running the CLI's ``main``,
reading ``sys.modules`` after each run (this test process has imported LiteLLM already)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from toolchoice_pipeline_tests.pipeline_helpers import copy_data, read_scores, trim_tasks

PROBE = textwrap.dedent(
    """
    import json, sys
    from toolchoice_pipeline.cli import main

    seen = {{}}
    for release, extra in (("r1", []), ("r2", ["--models", "sim/fast", "--no-judge"])):
        try:
            main(["run", "--data-dir", {data!r}, "--release", release, *extra])
        except SystemExit as exc:
            seen[release + " exit"] = exc.code
        seen[release] = sorted(m for m in ("litellm", "openai") if m in sys.modules)
    print(json.dumps(seen))
    """
)


@pytest.mark.slow
def test_a_run_of_local_models_never_imports_litellm_and_a_sim_run_does(tmp_path):
    data_dir = copy_data(tmp_path / "data")
    trim_tasks(data_dir, 1)
    env = {**os.environ, "DAGSTER_HOME": str(data_dir / "dagster_home")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(data=str(data_dir))],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    # both runs finished and scored their models: the calls were made, not skipped
    assert seen.get("r1 exit", 0) == 0 and seen.get("r2 exit", 0) == 0, seen
    first = read_scores(data_dir, "r1")
    assert sorted(first["models"]) == ["local/bm25-router", "local/name-match"]
    assert all(m["n_tasks"] == 1 and m["errors"] == 0 and m["judge_tokens"] > 0 for m in first["models"].values())
    assert first["judge"]["model"] == "local/catalog-judge"
    assert sorted(read_scores(data_dir, "r2")["models"]) == ["sim/fast"]
    assert seen["r1"] == []  # local agents and the local judge, three polls and a canary: no LiteLLM, no OpenAI
    assert seen["r2"] == ["litellm", "openai"]
