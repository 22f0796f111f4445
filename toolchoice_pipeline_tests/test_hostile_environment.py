"""A hostile environment, second round (issue 29): flags and store URLs in the environment, a damaged judge-poll
journal, a symlink loop, and a disk that fills up during ingest or while the gate writes its outputs. Each is
one ``error:`` line and exit 2, nothing reported as success, nothing half-written left behind.

Real parts: the installed console script as a subprocess (a bad variable's refusal also through its entry point in
this process, for every command), real files, a real file-size limit (RLIMIT_FSIZE:
Python ignores SIGXFSZ, so a write past it fails with EFBIG as a full disk fails with ENOSPC)."""

from __future__ import annotations

import os
import resource
import subprocess

import pytest

from toolchoice_pipeline.cli.common import check_environment, debugging
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline_tests.pipeline_helpers import DEMO_SUITE, REPO_DATA, TEST_DATA, TOOLCHOICE, copy_data
from toolchoice_pipeline_tests.release_helpers import make_suite, publish
from toolchoice_pipeline_tests.test_hostile_exit_codes import assert_one_error_line, in_process

SESSION = TEST_DATA / "transcripts" / "claude_code" / "fasthooks_sample_main_transcript.jsonl"
CATALOG = REPO_DATA / "suites" / DEMO_SUITE / "catalog.yaml"


def toolchoice_with(*args: str, env: dict[str, str] | None = None, max_file_bytes: int | None = None):
    environment = {**os.environ, "LITELLM_OFFLINE_MODE": "true", "COLUMNS": "200", **(env or {})}
    environment.pop("TOOLCHOICE_DATA_DIR", None)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    return subprocess.run(
        [str(TOOLCHOICE), *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit if max_file_bytes is not None else None,
    )


# --- the environment's variables -------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "on"), [("0", False), ("false", False), ("Off", False), ("", False), ("1", True)])
def test_toolchoice_debug_means_what_it_says(monkeypatch, value, on):
    monkeypatch.setenv("TOOLCHOICE_DEBUG", value)
    check_environment()
    assert debugging() is on


@pytest.mark.parametrize(
    ("variable", "value", "needle"),
    [
        ("TOOLCHOICE_DEBUG", "maybe", "not a yes/no value"),
        ("TOOLCHOICE_ALLOW_OUTSIDE_PATHS", "2", "not a yes/no value"),
        ("TOOLCHOICE_WAREHOUSE_URL", "garbage://x/y", "unknown storage scheme 'garbage'"),
        ("TOOLCHOICE_WAREHOUSE_URL", "s3://", "names no bucket"),
        ("TOOLCHOICE_RELEASES_URL", "nope://bucket", "unknown storage scheme 'nope'"),
        ("TOOLCHOICE_RELEASES_URL", "/tmp/releases\n", None),  # a trailing newline is stripped: fine
        ("TOOLCHOICE_RELEASES_URL", "/tmp/rel\x1beases", "U+001B"),
    ],
)
def test_a_variable_we_cannot_read_is_refused_naming_it(monkeypatch, variable, value, needle):
    monkeypatch.setenv(variable, value)
    if needle is None:
        check_environment()
        return
    with pytest.raises(InputError) as refused:
        check_environment()
    [problem] = refused.value.problems
    assert problem.field == variable and needle in problem.message


@pytest.mark.parametrize(
    ("variable", "value"),
    [("TOOLCHOICE_DEBUG", "maybe"), ("TOOLCHOICE_WAREHOUSE_URL", "garbage://x"), ("TOOLCHOICE_RELEASES_URL", "s3://")],
)
def test_every_command_refuses_a_bad_variable_with_one_line(tmp_path, capsys, monkeypatch, variable, value):
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv(variable, value)
    for command in (["report"], ["validate"], ["gate", "r1"]):
        assert_one_error_line(in_process(capsys, *command, "--data-dir", str(tmp_path)), 2, variable)


@pytest.mark.slow
def test_the_console_script_refuses_a_bad_variable_with_one_line_and_no_traceback(tmp_path):
    """The refusal above as the shell sees it: the installed script's exit code and its whole output."""
    done = toolchoice_with("validate", "--data-dir", str(tmp_path), env={"TOOLCHOICE_WAREHOUSE_URL": "garbage://x"})
    assert_one_error_line(done, 2, "TOOLCHOICE_WAREHOUSE_URL")


# --- damaged files under the data directory ------------------------------------------------------------------


@pytest.mark.slow
def test_a_garbage_judge_poll_journal_is_refused_before_any_dagster_run(tmp_path):
    data_dir = copy_data(tmp_path / "data")
    (data_dir / "cache").mkdir()
    (data_dir / "cache" / "judge_polls.sqlite").write_bytes(b"this is not a SQLite database\n" * 100)
    done = toolchoice_with("run", "--release", "r1", "--data-dir", str(data_dir))
    assert_one_error_line(done, 2, "judge_polls.sqlite", "cannot be opened", "file is not a database")
    assert not (data_dir / "dagster_home" / "history").exists()  # no Dagster run was created
    assert not (data_dir / "releases" / "r1").exists()


@pytest.mark.slow
def test_a_symlink_loop_under_the_data_directory_is_one_line(tmp_path):
    data_dir = copy_data(tmp_path / "data")
    (data_dir / "suites" / "loop").symlink_to("loop")
    for command in (["validate", "--suite", "loop"], ["run", "--suite", "loop", "--no-judge"]):
        done = toolchoice_with(*command, "--data-dir", str(data_dir))
        assert_one_error_line(done, 2, "loop")


# --- a full disk -----------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("max_file_bytes", [2_000, 9_000])
def test_a_full_disk_during_ingest_is_a_failure_naming_the_file_and_leaves_nothing(tmp_path, max_file_bytes):
    data_dir = tmp_path / "data"
    args = ["ingest", "claude-code", str(SESSION), "--suite", "s1", "--catalog", str(CATALOG)]
    done = toolchoice_with(*args, "--data-dir", str(data_dir), max_file_bytes=max_file_bytes)
    assert_one_error_line(done, 2, "tasks.jsonl: File too large")
    assert not (data_dir / "suites" / "s1").exists()
    assert [path for path in data_dir.rglob("*") if path.is_file()] == []  # no temp file, no half suite
    whole = toolchoice_with(*args, "--data-dir", str(data_dir))  # with room, the same ingest goes through
    assert whole.returncode == 0, whole.stderr


@pytest.mark.slow
def test_a_full_disk_while_the_gate_writes_its_outputs_is_a_failure_naming_the_file(tmp_path):
    publish(tmp_path / "data", make_suite(6), "r1")
    outputs = tmp_path / "out"
    outputs.mkdir()
    done = toolchoice_with(
        "gate",
        "r1",
        "--markdown",
        str(outputs / "gate.md"),
        "--junit",
        str(outputs / "gate.xml"),
        "--data-dir",
        str(tmp_path / "data"),
        max_file_bytes=200,
    )
    assert_one_error_line(done, 2, "File too large", str(outputs / "gate."))
    assert list(outputs.iterdir()) == []  # neither a partial output nor a temp file
