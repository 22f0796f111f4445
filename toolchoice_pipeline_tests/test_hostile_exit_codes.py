"""Exit codes and no tracebacks under hostile input and a failing environment.

The refusals of arguments and input run the CLI's entry point in this process (``main``, what the console script
calls); what could hang (a FIFO as input) or needs a process of its own (a full disk inside a Dagster step) runs
the installed console script.

Exit 1 is only ever a failed gate. Input nested 100,000 deep, output paths that cannot be written, devices and
pipes given as input files, and OS errors inside Dagster steps each give one ``error:`` line and exit 2 (bad
input or a bad environment: the file system refused) or 3 (the run failed otherwise), and nothing is written.
"""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import click
import pytest

from toolchoice_pipeline.cli import main
from toolchoice_pipeline.cli.common import data_dir_option, full_disk_named
from toolchoice_pipeline_tests.pipeline_helpers import DEMO_SUITE, REPO_DATA, TOOLCHOICE, copy_data, toolchoice
from toolchoice_pipeline_tests.release_helpers import make_suite, publish


def assert_one_error_line(done: subprocess.CompletedProcess, code: int, *needles: str) -> str:
    output = done.stdout + done.stderr
    assert done.returncode == code, output
    assert "Traceback" not in output and 'File "' not in output
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def in_process(capsys, *args: str) -> subprocess.CompletedProcess:
    """``toolchoice ARGS`` through the CLI's entry point in this process: its exit code, stdout and stderr."""
    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exited:
        code = exited.code if isinstance(exited.code, int) else 1
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["toolchoice", *args], code, out, err)


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    """Release r1, published once for the module: the refusals below write nothing (each test checks its own
    ``tmp_path``)."""
    root = tmp_path_factory.mktemp("stored")
    publish(root, make_suite(6), "r1")
    return root


# --- output paths --------------------------------------------------------------------------------------------


def test_gate_junit_into_a_missing_directory_is_refused_and_creates_nothing(stored, tmp_path, capsys):
    target = tmp_path / "nonexistent" / "dir" / "j.xml"
    done = in_process(capsys, "gate", "r1", "--junit", str(target), "--data-dir", str(stored))
    assert_one_error_line(done, 2, "--junit", "does not exist (it is not created)")
    assert not (tmp_path / "nonexistent").exists()
    assert done.stdout == ""  # refused before the gate printed anything


def test_gate_markdown_under_a_regular_file_is_one_line(stored, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    done = in_process(capsys, "gate", "r1", "--markdown", str(blocker / "gate.md"), "--data-dir", str(stored))
    assert_one_error_line(done, 2, "--markdown")


def test_gate_markdown_to_a_directory_is_one_line(stored, tmp_path, capsys):
    (tmp_path / "out.md").mkdir()
    done = in_process(capsys, "gate", "r1", "--markdown", str(tmp_path / "out.md"), "--data-dir", str(stored))
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_report_chart_to_an_unwritable_path_is_one_line(stored, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    done = in_process(capsys, "report", "--chart", str(blocker / "sub" / "trend.png"), "--data-dir", str(stored))
    assert_one_error_line(done, 2, "a-file")


# --- input nested too deeply, devices and pipes -----------------------------------------------------------------

DEEP = 100_000


@pytest.mark.parametrize(
    "document",
    [
        '{"resourceSpans": ' + "[" * DEEP + "]" * DEEP + "}",
        "[" * DEEP + "]" * DEEP,
        '{"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [{"key": "x", "value": '
        + '{"kvlistValue": {"values": [{"key": "a", "value": ' * 3000
        + "{}"
        + "}]}}" * 3000
        + "}]}]}]}]}",
    ],
    ids=["array-in-export", "bare-array", "nested-attribute"],
)
def test_ingest_otel_on_a_deeply_nested_document_is_one_line(tmp_path, document, capsys):
    trace = tmp_path / "deep.json"
    trace.write_text(document)
    done = in_process(capsys, "ingest", "otel", str(trace), "--suite", "s", "--data-dir", str(tmp_path / "data"))
    assert_one_error_line(done, 2, "deep.json", "nested too deeply")
    assert not (tmp_path / "data" / "suites" / "s").exists()


@pytest.fixture
def session(tmp_path) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_text('{"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "hi"}}\n')
    return path


@pytest.mark.slow
@pytest.mark.parametrize("device", ["/dev/zero", "fifo"])
@pytest.mark.parametrize("where", ["--catalog", "--catalog-dump", "bfcl"])
def test_a_device_or_pipe_as_an_input_file_is_refused_before_reading(tmp_path, session, device, where):
    if device == "fifo":
        device = str(tmp_path / "pipe")
        os.mkfifo(device)  # opening it would wait for a writer forever
    data = tmp_path / "data"
    if where == "bfcl":
        done = toolchoice("import", "bfcl", device, "--suite", "b", "--data-dir", str(data), timeout=60)
    else:
        catalog = [] if where == "--catalog" else ["--catalog", str(REPO_DATA / "suites" / DEMO_SUITE / "catalog.yaml")]
        done = toolchoice(
            "ingest",
            "claude-code",
            str(session),
            "--suite",
            "s",
            *catalog,
            where,
            device,
            "--data-dir",
            str(data),
            timeout=60,
        )
    assert_one_error_line(done, 2, device, "not a regular file")
    assert not (data / "suites").exists() or not any((data / "suites").iterdir())


# --- OS errors inside Dagster steps ---------------------------------------------------------------------------


def _small_run(tmp_path: Path) -> Path:
    data_dir = copy_data(tmp_path / "data")
    tasks = data_dir / "suites" / DEMO_SUITE / "tasks.jsonl"
    tasks.write_text("\n".join(tasks.read_text().splitlines()[:4]) + "\n")
    return data_dir


@pytest.mark.slow
def test_a_step_that_cannot_write_its_output_gives_exit_3_and_one_line_per_failed_step(tmp_path):
    data_dir = _small_run(tmp_path)
    (data_dir / "warehouse").mkdir()
    (data_dir / "warehouse" / "_staging").write_text("not a directory")
    done = toolchoice("run", "--release", "r1", "--no-judge", "--data-dir", str(data_dir))
    output = done.stdout + done.stderr
    assert done.returncode == 3 and "Traceback" not in output, output
    assert "error: the run failed before the release was scored" in done.stderr
    assert "  release_snapshot: NotADirectoryError: [Errno 20] Not a directory" in done.stderr
    assert not (data_dir / "releases" / "r1" / "scores.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("limit_kib", [64, 512])
def test_a_full_disk_inside_a_step_is_a_bad_environment_never_a_failed_gate(tmp_path, limit_kib):
    """The file-size limit (RLIMIT_FSIZE; Python ignores SIGXFSZ, so writes past it fail with EFBIG) stands in
    for a disk that fills up at two different points of the run."""
    data_dir = _small_run(tmp_path)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_kib * 1024, limit_kib * 1024))

    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true", "COLUMNS": "200"}
    done = subprocess.run(
        [str(TOOLCHOICE), "run", "--release", "r1", "--no-judge", "--data-dir", str(data_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output and 'File "' not in output
    assert "bad environment" in done.stderr
    assert not (data_dir / "releases" / "r1" / "scores.json").exists()


@pytest.fixture
def small_disk(tmp_path, request):
    """A real file system of ``request.param`` bytes (tmpfs, mounted as root as the tests run here and in CI)
    that the run fills up: ENOSPC from the kernel, not a stand-in."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={request.param}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    assert mounted.returncode == 0, f"mounting a small tmpfs needs root: {mounted.stderr}"
    try:
        yield mount_point
    finally:
        if subprocess.run(["umount", str(mount_point)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


@pytest.mark.parametrize("small_disk", ["256k"], indirect=True)
def test_an_io_error_on_a_full_data_directory_says_the_disk_is_full(small_disk, tmp_path):
    # SQLite reports some writes a full disk refused as a "disk I/O error" (its shared-memory file's, say).
    @click.command()
    @data_dir_option
    def command(data_dir: Path) -> None:
        pass

    filler = small_disk / "filler"
    with pytest.raises(OSError), filler.open("wb") as handle:
        while True:
            handle.write(b"\0" * 65536)
            handle.flush()
    message = "OperationalError: (sqlite3.OperationalError) disk I/O error"
    command.main(["--data-dir", str(small_disk)], standalone_mode=False)
    assert full_disk_named(message).startswith(message + " (No space left on device: ")
    filler.unlink()  # room again: the I/O error is not put down to a full disk
    assert full_disk_named(message) == message
    command.main(["--data-dir", str(tmp_path)], standalone_mode=False)
    assert full_disk_named(message) == message


# Where each fills depends on what the run writes first (Dagster's SQLite storage, the warehouse's DuckDB file);
# the one error line names the full disk whichever library failed, even one that says "disk I/O error".
@pytest.mark.slow
@pytest.mark.parametrize("small_disk", ["512k", "1536k"], indirect=True)
def test_a_really_full_disk_inside_a_step_is_a_bad_environment_and_commits_nothing(small_disk):
    data_dir = _small_run(small_disk)
    done = toolchoice("run", "--release", "r1", "--no-judge", "--data-dir", str(data_dir))
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output and 'File "' not in output
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert "bad environment" in done.stderr
    assert "No space left on device" in done.stderr or "disk is full" in done.stderr
    assert not (data_dir / "releases" / "r1" / "scores.json").exists()
