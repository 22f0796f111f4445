"""``toolchoice run`` refuses bad arguments with exit 2 and one ``error:`` line naming the problem, before any
Dagster run or model call: through the CLI's entry point in this process (``main``, what the console script
calls), on a copy of the demo data."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolchoice_pipeline.cli import main
from toolchoice_pipeline_tests.pipeline_helpers import DEMO_SUITE
from toolchoice_pipeline_tests.release_helpers import write_scored


@pytest.fixture
def data_dir(demo_copy) -> Path:
    return demo_copy / "data"


def one_line_error(capsys, *args: str) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["run", *args])
    out, err = capsys.readouterr()
    assert exited.value.code == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in out + err
    return lines[0]


def test_an_unknown_suite_exits_2(data_dir, capsys):
    line = one_line_error(capsys, "--data-dir", str(data_dir), "--suite", "no_such_suite")
    assert "no_such_suite" in line and DEMO_SUITE in line  # names it, and the suites there are


def test_a_bad_release_id_exits_2(data_dir, capsys):
    line = one_line_error(capsys, "--data-dir", str(data_dir), "--release", "../r9")
    assert "'../r9'" in line and "release" in line


def test_an_unknown_local_model_exits_2(data_dir, capsys):
    line = one_line_error(
        capsys, "--data-dir", str(data_dir), "--release", "r9", "--models", "local/bm25-router,local/no-such-agent"
    )
    assert "local/no-such-agent" in line and "unknown local model" in line
    assert not (data_dir / "releases" / "r9").exists()
    assert not (data_dir / "dagster_home" / "storage").exists()  # no Dagster run was made


def test_reusing_a_finished_release_id_without_force_exits_2_and_keeps_the_release(data_dir, capsys):
    scores = write_scored(data_dir, "r1", DEMO_SUITE, kind="release")
    before = scores.read_bytes()
    line = one_line_error(capsys, "--data-dir", str(data_dir), "--release", "r1", "--kind", "release")
    assert "'r1'" in line and "--force" in line
    assert scores.read_bytes() == before


def test_a_resumed_release_names_the_catalog_it_pinned_not_the_files_edited_since(data_dir):
    from toolchoice_pipeline.cli.run import _catalog_shown
    from toolchoice_pipeline.releases.request import ReleaseRequest, write_request
    from toolchoice_pipeline.releases.snapshot import pin_snapshot
    from toolchoice_pipeline.suites.suite import load_suite

    request = ReleaseRequest(release_id="r9", kind="adhoc", suite=DEMO_SUITE, models=["local/name-match"])
    write_request(data_dir, request)
    pinned, _ = pin_snapshot(data_dir, "r9")  # as the release's first step does; the run then stopped
    assert _catalog_shown(data_dir, request, pinned.catalog_version) == pinned.catalog_version
    catalog = data_dir / "suites" / DEMO_SUITE / "catalog.yaml"
    catalog.write_text(catalog.read_text(encoding="utf-8").replace("Run a shell command", "Run a command"))
    now = load_suite(data_dir, DEMO_SUITE).catalog_version
    assert now != pinned.catalog_version
    shown = _catalog_shown(data_dir, request, now)
    assert shown.startswith(f"{pinned.catalog_version} (the release's pinned snapshot of ")
    assert shown.endswith(f"; the files now: {now})")
    # another request for the id (other models) is pinned afresh from the files: the files' version is shown
    other = request.model_copy(update={"models": ["local/bm25-router"]})
    assert _catalog_shown(data_dir, other, now) == now


class _Referent:
    pass


def test_an_interrupt_raised_in_a_weakref_callback_prints_no_traceback_during_a_run(monkeypatch):
    # A signal whose handler raises (Dagster's, or Ctrl-C's) can land while Python runs a weakref callback (as
    # importlib's module locks use): Python cannot raise it there and hands it to sys.unraisablehook, whose default
    # prints "Exception ignored in ..." with a traceback. During a run an interrupt is not handed on (the signal is
    # read from the wakeup fd and reported in one line); any other exception there still is.
    import sys
    import weakref

    from toolchoice_pipeline.cli.run import sigterm_as_interrupt

    handed_on: list[BaseException] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: handed_on.append(unraisable.exc_value))

    def raising(exc):
        def callback(_):
            raise exc

        return callback

    with sigterm_as_interrupt():
        referent, other = _Referent(), _Referent()
        refs = [weakref.ref(referent, raising(KeyboardInterrupt())), weakref.ref(other, raising(ValueError("x")))]
        del referent, other
    assert [type(exc) for exc in handed_on] == [ValueError]  # the interrupt is silent; the error is not hidden
    assert all(ref() is None for ref in refs)
    weakref.ref(_Referent(), raising(KeyboardInterrupt()))  # after the run: Python's own handling again
    assert [type(exc) for exc in handed_on] == [ValueError, KeyboardInterrupt]
