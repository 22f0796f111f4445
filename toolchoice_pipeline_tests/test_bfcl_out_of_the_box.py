"""BFCL out of the box: the README's BFCL example (``toolchoice import bfcl ... --suite bfcl_simple`` then
``toolchoice run --suite bfcl_simple``) exits 0 with the shipped ``data/toolchoice.yaml``, whose
``judge.calibration_by_profile`` makes the judge's calibration a warning on ``bfcl``-profile suites; a user
who sets the profile's mode to ``fail`` gets a blocking calibration again.

Real parts: the console script in a subprocess, run from a directory holding a copy of the shipped ``data/``,
BFCL's own entries, the local agents and the offline judge through LiteLLM, Dagster, Parquet.
"""

from __future__ import annotations

import pytest

from toolchoice_pipeline.suites.config import JudgeConfig, load_run_config
from toolchoice_pipeline_tests.bfcl_helpers import answers_file, questions_file
from toolchoice_pipeline_tests.pipeline_helpers import REPO_DATA, copy_data, read_scores, toolchoice


def sample(tmp_path, category: str, every: int):
    """Every ``every``-th BFCL entry of ``category`` (questions and answers on the same lines), as files."""
    out = []
    for source, name in ((questions_file(category), "questions.json"), (answers_file(category), "answers.json")):
        lines = source.read_text(encoding="utf-8").splitlines()
        path = tmp_path / name
        path.write_text("\n".join(lines[::every]) + "\n", encoding="utf-8")
        out.append(path)
    return out


@pytest.mark.slow
def test_the_readme_bfcl_example_exits_0_with_the_shipped_configuration(tmp_path):
    copy_data(tmp_path / "data")
    questions, answers = sample(tmp_path, "simple_python", 25)  # 16 entries across the file
    imported = toolchoice("import", "bfcl", str(questions), str(answers), "--suite", "bfcl_simple", cwd=tmp_path)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    done = toolchoice("run", "--suite", "bfcl_simple", "--release", "b1", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    calibration = read_scores(tmp_path / "data", "b1")["judge"]["calibration"]
    assert calibration["mode"] == "warn" and calibration["blocks_promotion"] is False
    assert calibration["n_labelled"] == 32
    if not calibration["passed"]:
        assert "warning" in done.stdout and "does not fail on it" in done.stdout


def test_the_shipped_configuration_warns_on_bfcl_suites_and_blocks_elsewhere():
    judge = load_run_config(REPO_DATA).judge
    assert judge.calibration == "fail"
    assert judge.calibration_mode("bfcl") == "warn"
    assert judge.calibration_mode("key_args") == "fail"


def test_calibration_by_profile_makes_bfcl_blocking_or_follows_calibration():
    assert JudgeConfig(calibration_by_profile={"bfcl": "fail"}).calibration_mode("bfcl") == "fail"
    assert JudgeConfig(calibration="warn", calibration_by_profile={}).calibration_mode("bfcl") == "warn"
    assert JudgeConfig(calibration="fail", calibration_by_profile={}).calibration_mode("bfcl") == "fail"
    assert JudgeConfig().calibration_mode("bfcl") == "warn"  # the default without the key


def test_an_unknown_profile_in_calibration_by_profile_is_refused_naming_the_line(tmp_path):
    data_dir = copy_data(tmp_path / "data")
    config = data_dir / "toolchoice.yaml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("    bfcl: warn", "    bfcll: warn", 1), encoding="utf-8")
    done = toolchoice("validate", "--data-dir", str(data_dir))
    assert done.returncode == 2, done.stdout + done.stderr
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.strip().startswith("bfcl: warn"))
    assert f"toolchoice.yaml:{line}" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
