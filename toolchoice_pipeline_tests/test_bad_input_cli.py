"""Bad input, as a hostile or careless user gives it: each kind gets one clear error naming the file, the line
and the field (exit code 2 from the console script, never a traceback); what was stored earlier (releases, the
baseline, the warehouse and its DuckDB file) stays as it was; a run that did not finish is never shown as one.

Input files are checked through the core readers (``load_suite``, ``read_replay``, ``load_labels``...) on real
files; the command line's refusals through the console script's entry point in this process (``cli.main``: the
words and exit 2), one of them through the installed ``toolchoice`` script in a subprocess (exit 2 and no
traceback as the shell sees them). Two end-to-end runs go
through Dagster: Ctrl-C during the agents (exit 130, nothing published) and a promotion step that fails after
the release was scored (exit 3, not reported as a passed run).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import click
import pytest

from toolchoice_pipeline.cli import main
from toolchoice_pipeline.cli.common import run_guarded
from toolchoice_pipeline.execution.journal import CallJournal
from toolchoice_pipeline.ingest.bfcl import import_bfcl
from toolchoice_pipeline.ingest.labels import load_labels
from toolchoice_pipeline.releases.document import ReleaseDocument
from toolchoice_pipeline.releases.report import load_trend
from toolchoice_pipeline.releases.request import read_request
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.releases.warehouse import Warehouse
from toolchoice_pipeline.suites.catalog_files import load_tool_dump
from toolchoice_pipeline.suites.replay_file import read_replay
from toolchoice_pipeline.suites.suite import load_suite
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline.util.yaml_lines import load_yaml
from toolchoice_pipeline_tests.pipeline_helpers import DEMO_SUITE, REPO_DATA, copy_data, query, toolchoice
from toolchoice_pipeline_tests.release_helpers import make_suite, publish
from toolchoice_pipeline_tests.run_processes import WAIT_LIMIT_S, held_calls, served, start_run, wait_until

DEMO_TASKS = REPO_DATA / "suites" / DEMO_SUITE / "tasks.jsonl"
FIRST_TASK = DEMO_TASKS.read_text(encoding="utf-8").splitlines()[0]  # read-file-001, expects Read


def problems(caught: pytest.ExceptionInfo) -> list[str]:
    return [str(problem) for problem in caught.value.problems]


def snapshot(data_dir: Path) -> dict[str, str]:
    """SHA-256 of every file under ``releases/`` and ``warehouse/`` (lock files aside)."""
    return {
        str(path.relative_to(data_dir)): hashlib.sha256(path.read_bytes()).hexdigest()
        for part in ("releases", "warehouse")
        for path in sorted((data_dir / part).rglob("*"))
        if path.is_file() and not path.name.endswith(".lock")
    }


def unchanged(before: dict[str, str], data_dir: Path) -> bool:
    """Every file of ``before`` still there with the same bytes (new files are checked by the caller)."""
    after = snapshot(data_dir)
    return all(after.get(name) == digest for name, digest in before.items())


# --- tasks.jsonl: JSON that json.loads takes or chokes on ----------------------------------------------------


def demo_suite_with(tmp_path: Path, tasks: str) -> Path:
    """A data dir whose demo suite has ``tasks`` as its tasks.jsonl; returns the tasks file."""
    data_dir = tmp_path / "data"
    shutil.copytree(REPO_DATA / "suites" / DEMO_SUITE, data_dir / "suites" / DEMO_SUITE)
    path = data_dir / "suites" / DEMO_SUITE / "tasks.jsonl"
    path.write_text(tasks, encoding="utf-8")
    return path


READ_MATCHER = '{"regex": "src/app/main\\\\.py$"}'

BAD_TASK_LINES = {
    "nested 100,000 deep": (
        FIRST_TASK[:-1] + ', "tags": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "bad JSON: nested too deeply",
    ),
    "a 5,000-digit number": (
        FIRST_TASK.replace(READ_MATCHER, "1" + "0" * 5000),
        "bad JSON: a number has more than 4300 digits",
    ),
    "NaN": (FIRST_TASK.replace(READ_MATCHER, "NaN"), "bad JSON: NaN is not valid JSON"),
    "1e999 (infinity)": (FIRST_TASK.replace(READ_MATCHER, "1e999"), "bad JSON: the number 1e999 is too large"),
    "a key given twice": (FIRST_TASK[:-1] + ', "id": "other"}', 'bad JSON: duplicate key "id" in one object'),
    "a lone surrogate": (
        FIRST_TASK.replace("show me", "show \\ud800 me"),
        "bad JSON: the escape \\ud800 is a lone UTF-16 surrogate",
    ),
    "an empty tool name": (
        FIRST_TASK.replace('"tool": "Read"', '"tool": ""'),
        "expected.tool: String should have at least 1 character",
    ),
}


@pytest.mark.parametrize("case", list(BAD_TASK_LINES))
def test_a_task_line_json_loads_would_crash_on_or_misread_is_one_problem_naming_its_line(tmp_path, case):
    line, message = BAD_TASK_LINES[case]
    tasks = demo_suite_with(tmp_path, FIRST_TASK.replace("read-file-001", "good-001") + "\n" + line + "\n")
    with pytest.raises(InputError) as caught:
        load_suite(tmp_path / "data", DEMO_SUITE)
    [problem] = caught.value.problems
    assert (problem.file, problem.line) == (str(tasks), 2)
    assert message in str(problem)


def test_a_bom_and_crlf_line_endings_are_read_as_the_same_tasks(tmp_path):
    second = FIRST_TASK.replace("read-file-001", "read-file-002")
    demo_suite_with(tmp_path, "\ufeff" + FIRST_TASK + "\r\n" + second + "\r\n")
    suite = load_suite(tmp_path / "data", DEMO_SUITE)
    assert [task.id for task in suite.tasks] == ["read-file-001", "read-file-002"]


# --- replay files, labels, live dumps, BFCL files: the same strict JSON --------------------------------------


def test_a_replay_line_nested_too_deeply_or_with_a_huge_number_names_its_line(tmp_path):
    path = tmp_path / "replay.jsonl"
    path.write_text(
        json.dumps({"task_id": "a", "tool_calls": []})
        + "\n"
        + '{"task_id": "b", "tool_calls": '
        + "[" * 50_000
        + "]" * 50_000
        + "}\n"
        + '{"task_id": "c", "tool_calls": [{"name": "Read", "arguments": {"n": 1'
        + "0" * 5000
        + "}}]}\n"
        + '{"task_id": "d", "content": "\\udfff"}\n',
        encoding="utf-8",
    )
    with pytest.raises(InputError) as caught:
        read_replay(path)
    assert problems(caught) == [
        f"{path}:2: bad JSON: nested too deeply",
        f"{path}:3: bad JSON: a number has more than 4300 digits",
        f"{path}:4: bad JSON: the escape \\udfff is a lone UTF-16 surrogate, not a Unicode character",
    ]


def test_a_labels_file_of_binary_garbage_or_deep_nesting_or_a_boolean_turn_is_refused_by_line(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_bytes(
        b'{"turn": 0, "expected": {"tool": "Read"}}\n\xff\xfe garbage\n'
        + b'{"turn": 1, "expected": '
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}\n"
        + b'{"turn": true, "expected": {"tool": "Read"}}\n'
    )
    with pytest.raises(InputError) as caught:
        load_labels(path, session_optional=True)
    found = problems(caught)
    assert len(found) == 3
    assert found[0].startswith(f"{path}:2: not UTF-8 text: byte 0xff at column 1")
    assert found[1] == f"{path}:3: bad JSON: nested too deeply"
    assert found[2] == f"{path}:4: turn: Input should be a valid integer (got true)"  # not turn 1


def test_a_live_dump_nested_too_deeply_or_repeating_a_key_is_refused(tmp_path):
    path = tmp_path / "dump.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(InputError, match="bad JSON: nested too deeply"):
        load_tool_dump(path)
    path.write_text('[{"name": "Z", "name": "W"}]', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_tool_dump(path)
    assert problems(caught) == [f'{path}: bad JSON: duplicate key "name" in one object']  # no line in a document


def test_yaml_aliases_that_expand_to_billions_fail_fast_and_deep_nesting_is_refused(tmp_path):
    path = tmp_path / "catalog.yaml"
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for previous, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")  # 9**9 values once expanded
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    # it used to hang expanding them: refused by counting the values (a million), not by a clock
    with pytest.raises(InputError, match="more than 1,000,000 values once its aliases"):
        load_yaml(path)
    path.write_text("[" * 20_000 + "]" * 20_000, encoding="utf-8")
    with pytest.raises(InputError, match="bad YAML: nested too deeply"):
        load_yaml(path)


def test_a_bfcl_function_name_that_is_not_a_string_says_so_and_a_repeated_key_is_refused(tmp_path):
    questions = tmp_path / "q.json"
    entry = {
        "id": "irrelevance_0",
        "question": [[{"role": "user", "content": "hi"}]],
        "function": [{"name": 42, "description": "x", "parameters": {"type": "dict", "properties": {}}}],
    }
    questions.write_text(json.dumps(entry) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, None, "b", tmp_path / "data")
    assert problems(caught) == [f"{questions}:1: function[0].name: must be a non-empty string (got 42)"]
    questions.write_text('{"id": "irrelevance_0", "id": "irrelevance_1"}\n', encoding="utf-8")
    with pytest.raises(InputError, match='duplicate key "id"'):
        import_bfcl(questions, None, "b", tmp_path / "data")
    assert not (tmp_path / "data" / "suites" / "b").exists()


# --- suite names and suite.yaml --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../evil", "coding_agent/", "..", "/tmp/evil"])
def test_a_suite_name_that_is_a_path_is_refused_even_when_the_path_holds_a_suite(tmp_path, name):
    data_dir = tmp_path / "data"
    shutil.copytree(REPO_DATA / "suites" / DEMO_SUITE, data_dir / "suites" / DEMO_SUITE)
    shutil.copytree(REPO_DATA / "suites" / DEMO_SUITE, data_dir / "evil")
    (data_dir / "evil" / "suite.yaml").write_text("name: evil\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_suite(data_dir, name)
    assert problems(caught) == [
        f"<command line>: --suite: '{name}' is not a valid suite name (letters, digits, "
        "'_', '.', '-'; starting with a letter or digit)"
    ]


def test_a_model_listed_twice_in_suite_yaml_is_refused_with_its_line(tmp_path):
    data_dir = tmp_path / "data"
    shutil.copytree(REPO_DATA / "suites" / DEMO_SUITE, data_dir / "suites" / DEMO_SUITE)
    spec = data_dir / "suites" / DEMO_SUITE / "suite.yaml"
    spec.write_text("name: coding_agent\nmodels:\n  - local/bm25-router\n  - local/bm25-router\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_suite(data_dir, DEMO_SUITE)
    assert problems(caught) == [f"{spec}:2: models: model listed twice: local/bm25-router"]


# --- what is stored: scores.json, baseline.json, the warehouse, the call journal -------------------------------


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    """One release r1 (the baseline of suite ``unit``), published once for the module: the tests damage copies."""
    root = tmp_path_factory.mktemp("published")
    publish(root, make_suite(6), "r1")
    return root


def copy_store(published: Path, data_dir: Path) -> Path:
    """Copy ``published``'s releases and warehouse into ``data_dir``, but for the warehouse's DuckDB file: that
    file is derived (its views name the directory they were built in), so the first read here builds it anew
    over these files, as it does after a crash. Returns ``data_dir``."""
    for part in ("releases", "warehouse"):
        shutil.copytree(published / part, data_dir / part, ignore=shutil.ignore_patterns("toolchoice.duckdb"))
    return data_dir


@pytest.fixture
def stored(published, tmp_path):
    """A data dir with one published release r1 (the baseline of suite ``unit``): a copy of ``published``."""
    return copy_store(published, tmp_path)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\xff\xfe{}", "1: not UTF-8 text: byte 0xff at column 1"),
        (b"[]", "scores.json must be a JSON object"),
        (
            b'{"release_id": "r1", "kind": "release", "suite": "unit", "models": "x"}',
            "models: must be an object of figures per model",
        ),
    ],
)
def test_a_damaged_scores_json_is_one_problem_and_the_trend_leaves_it_out(stored, content, message):
    path = stored / "releases" / "r1" / "scores.json"
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        ReleaseStore(stored).read_scores("r1")
    [problem] = problems(caught)
    assert problem.startswith(str(path)) and message in problem
    assert load_trend(stored) == []


DAMAGED_SCORES = {  # release id: its scores.json, and why the report leaves it out
    "r2": (b"", "empty file (0 bytes)"),
    "r3": (b'{"release_id": "r3", "kind": "release", "su', "bad JSON (EOF while parsing"),  # cut short
    "r4": (b"{'release_id': 'r4'}", "bad JSON (key must be a string"),
    "r5": (b'{"release_id": "r5", "kind": "release", "suite": "unit"}', "models: Field required"),
}


def test_report_names_each_damaged_scores_json_it_leaves_out_and_refuses_each_when_asked_for(
    stored, capsys, monkeypatch
):
    """Four kinds of damage beside the good r1, in one data directory: one report (one drawing of r1's pictures)
    names each damaged file, and each is refused when asked for."""
    from toolchoice_pipeline.cli import cli

    monkeypatch.setenv("MPLBACKEND", "Agg")
    for release_id, (content, _) in DAMAGED_SCORES.items():
        damaged = stored / "releases" / release_id / "scores.json"
        damaged.parent.mkdir()
        damaged.write_bytes(content)
    before = snapshot(stored)
    assert run_guarded(cli, ["report", "--data-dir", str(stored)]) == 0
    out, err = capsys.readouterr()
    assert "r1" in out and "Traceback" not in err
    for release_id, (_, why) in DAMAGED_SCORES.items():
        damaged = stored / "releases" / release_id / "scores.json"
        [warning] = [line for line in err.splitlines() if str(damaged) in line]
        assert warning.startswith(f"warning: {damaged}: ") and why in warning and "left out of the trend" in warning
        assert run_guarded(cli, ["report", "--data-dir", str(stored), "--release", release_id]) == 2
        _, refused = capsys.readouterr()
        assert refused.startswith(f"error: {damaged}") and "Traceback" not in refused
    assert unchanged(before, stored)


@pytest.mark.parametrize(
    "content, message",
    [
        (b'{"release_id": "r9", "kind": "\xff"}', "1: not UTF-8 text: byte 0xff at column 31"),
        (b'{"release_id": "r9",\n "kind": "adhoc", "kind": "release"}', 'bad JSON: duplicate key "kind" in one object'),
        (b'{"release_id": "r9", "kind": "nightly"', "1: bad JSON: Expecting ',' delimiter (column 39)"),
    ],
)
def test_a_damaged_request_json_is_one_problem_naming_the_file(tmp_path, content, message):
    path = tmp_path / "releases" / "r9" / "request.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        read_request(tmp_path, "r9")
    [problem] = problems(caught)
    assert problem.startswith(str(path)) and message in problem


def test_a_baseline_json_of_the_wrong_shape_is_one_problem_not_an_attribute_error(stored):
    (stored / "releases" / "baseline.json").write_text('{"suites": []}', encoding="utf-8")
    with pytest.raises(InputError, match="baseline.json: suites: must be"):
        ReleaseStore(stored).baseline("unit")


def test_the_warehouse_check_names_a_missing_or_damaged_parquet_file_and_a_damaged_commit_record(stored):
    warehouse = Warehouse(stored)
    warehouse.check()
    commit = warehouse.commit("r1")
    missing, damaged = (stored / "warehouse" / commit.files[name] for name in ("task_scores", "judge_votes"))
    missing.unlink()
    damaged.write_bytes(b"junk")
    with pytest.raises(InputError) as caught:
        warehouse.check()
    found = {problem.file: problem.message for problem in caught.value.problems}
    assert found.keys() == {str(missing), str(damaged)}
    assert found[str(missing)] == "Parquet file of release 'r1' is missing: restore it from a backup"
    assert found[str(damaged)].startswith("Parquet file of release 'r1' is damaged (")
    assert found[str(damaged)].endswith("): restore it from a backup")
    record = stored / "warehouse" / "_commits" / "r1.json"
    record.write_text("{", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        warehouse.check()
    assert problems(caught) == [f"{record}: damaged commit record of the warehouse: restore it from a backup"]


def test_a_missing_file_of_an_earlier_release_stops_no_other_release_and_the_check_names_it(stored):
    # Committing reads nothing of other releases (its cost does not grow with them); the run's check of what it
    # reads, its baseline, names the file before any spend.
    suite = make_suite(6)
    warehouse = Warehouse(stored)
    missing = stored / "warehouse" / warehouse.commit("r1").files["agent_calls"]
    missing.unlink()
    publish(stored, suite, "r2")
    assert warehouse.commit("r2") is not None and (stored / "releases" / "r2" / "scores.json").is_file()
    warehouse.check(["r2"])
    with pytest.raises(InputError) as caught:
        warehouse.check(["r1"])
    assert problems(caught) == [f"{missing}: Parquet file of release 'r1' is missing: restore it from a backup"]


@pytest.mark.parametrize("kind", ["damaged file", "directory"])
def test_a_call_journal_that_cannot_be_opened_names_the_file_and_cache_path(tmp_path, kind):
    path = tmp_path / "cache" / "agent_calls.sqlite"
    path.parent.mkdir()
    if kind == "directory":
        path.mkdir()
    else:
        path.write_bytes(b"not a database " * 100)
    with pytest.raises(InputError) as caught:
        CallJournal(path, "read_write")
    [problem] = caught.value.problems
    assert (problem.file, problem.field) == (str(path), "cache.path")
    assert "the call journal cannot be opened" in problem.message
    assert not isinstance(caught.value.__cause__, sqlite3.Error)


def waiting_for_a_file_lock(thread: threading.Thread) -> bool:
    """Whether ``thread`` is inside ``FileLock.acquire`` (waiting for a lock another holder has)."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code.co_name == "acquire" and f"{os.sep}filelock{os.sep}" in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


def test_two_runs_publishing_one_release_id_at_once_the_second_is_refused_not_silently_replacing(stored):
    """The second run checked the id was free before it started; it must check again under the lock."""
    suite = make_suite(6)
    store = ReleaseStore(stored)
    outcome: dict[str, BaseException | None] = {}

    def second() -> None:
        try:
            publish(stored, suite, "r2", kind="nightly")
            outcome["error"] = None
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome["error"] = exc

    with store.publishing_lock("r2"):  # the first run is committing r2
        thread = threading.Thread(target=second)
        thread.start()
        deadline = time.monotonic() + 60
        while not waiting_for_a_file_lock(thread):  # the second run has checked the id and waits for the first
            assert thread.is_alive() and time.monotonic() < deadline, outcome
            time.sleep(0.01)
        # the first run finishes r2
        store.write_scores(
            ReleaseDocument(release_id="r2", kind="nightly", suite="unit", models={}, run_id="run-first")
        )
    thread.join(timeout=60)
    assert isinstance(outcome["error"], InputError)
    assert "release 'r2' is a finished release" in str(outcome["error"])
    assert "finished by Dagster run run-first" in str(outcome["error"])
    assert store.read_scores("r2").run_id == "run-first"  # the first run's release stands
    assert Warehouse(stored).commit("r2") is None


def test_a_file_system_that_refuses_a_write_exits_2_with_one_line_naming_the_path(capsys):
    @click.group()
    def group() -> None:
        pass

    @group.command("write")
    def write() -> None:
        raise OSError(errno.EROFS, "Read-only file system", "/data/releases/x1")

    assert run_guarded(group, ["write"]) == 2
    assert capsys.readouterr().err == "error: /data/releases/x1: Read-only file system\n"


# --- the console script ---------------------------------------------------------------------------------------


def assert_bad_input(done: subprocess.CompletedProcess, *lines: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == list(lines)


def refused_in_process(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str) -> list[str]:
    """Run ``toolchoice ARGS`` through the console script's entry point in this process (the refusals' words and
    exit code are the command's; the console script itself is exercised by the subprocess tests); returns the
    lines it wrote to stderr, after checking exit 2 and no traceback."""
    monkeypatch.setenv("COLUMNS", "200")  # as the subprocess helper sets it: one line per problem, unwrapped
    monkeypatch.delenv("TOOLCHOICE_DATA_DIR", raising=False)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    assert exited.value.code == 2, out + err
    assert "Traceback" not in out + err
    return err.splitlines()


@pytest.fixture
def data_dir(tmp_path):
    return copy_data(tmp_path / "data")


@pytest.mark.slow
def test_an_empty_release_id_or_models_list_from_an_unset_variable_is_refused(data_dir):
    done = toolchoice("run", "--data-dir", str(data_dir), "--release", "", "--kind", "release")
    assert_bad_input(
        done,
        "error: <command line>: release: release id '' must be 1-128 characters of letters, "
        "digits, '.', '_' or '-', starting with a letter or digit",
    )
    done = toolchoice("run", "--data-dir", str(data_dir), "--release", "r1", "--models", " , ")
    assert_bad_input(
        done,
        "error: <command line>: --models: names no model: give LiteLLM model strings, e.g. --models local/bm25-router",
    )
    assert not (data_dir / "releases").exists()


def test_validate_refuses_a_suite_name_that_walks_out_of_suites(data_dir, capsys, monkeypatch):
    shutil.copytree(data_dir / "suites" / DEMO_SUITE, data_dir / "evil")
    (data_dir / "evil" / "suite.yaml").write_text("name: evil\n", encoding="utf-8")
    assert refused_in_process(capsys, monkeypatch, "validate", "--data-dir", str(data_dir), "--suite", "../evil") == [
        "error: <command line>: --suite: '../evil' is not a valid suite name (letters, digits, "
        "'_', '.', '-'; starting with a letter or digit)"
    ]


def test_gate_on_a_scores_json_that_is_not_utf8_exits_2(data_dir, published, capsys, monkeypatch):
    copy_store(published, data_dir)
    path = data_dir / "releases" / "r1" / "scores.json"
    path.write_bytes(b"\xff\xfe{}")
    assert refused_in_process(capsys, monkeypatch, "gate", "r1", "--data-dir", str(data_dir)) == [
        f"error: {path}:1: not UTF-8 text: byte 0xff at column 1 (invalid start byte); save the file as UTF-8"
    ]


def demo_baseline(data_dir: Path, published: Path) -> None:
    """Make r1 (suite ``unit``, published from records, copied from ``published``) the demo suite's baseline in
    ``baseline.json``."""
    copy_store(published, data_dir)
    path = data_dir / "releases" / "baseline.json"
    baselines = json.loads(path.read_text(encoding="utf-8"))
    baselines["suites"][DEMO_SUITE] = baselines["suites"].pop("unit")
    path.write_text(json.dumps(baselines), encoding="utf-8")


@pytest.mark.parametrize("damage", ["baseline scores.json", "baseline.json", "commit record", "Parquet file"])
def test_run_refuses_to_start_on_damaged_stored_state_and_changes_nothing(
    data_dir, published, damage, capsys, monkeypatch
):
    demo_baseline(data_dir, published)
    target = {
        "baseline scores.json": data_dir / "releases" / "r1" / "scores.json",
        "baseline.json": data_dir / "releases" / "baseline.json",
        "commit record": data_dir / "warehouse" / "_commits" / "r1.json",
        "Parquet file": data_dir / "warehouse" / Warehouse(data_dir).commit("r1").files["task_scores"],
    }[damage]
    target.write_text("{", encoding="utf-8")
    before = snapshot(data_dir)
    [line] = refused_in_process(
        capsys, monkeypatch, "run", "--data-dir", str(data_dir), "--release", "r2", "--no-judge"
    )
    assert line.startswith(f"error: {target}")  # named before any agent or judge call was paid for
    assert snapshot(data_dir) == before
    assert not (data_dir / "releases" / "r2").exists()


# --- end to end through Dagster -------------------------------------------------------------------------------


@pytest.mark.slow
def test_ctrl_c_during_the_agents_exits_130_publishes_nothing_and_leaves_earlier_releases(data_dir):
    publish(data_dir, make_suite(6), "r1")
    # The agent is on a 127.0.0.1 server that holds its first call (after its preflight call) until the run was
    # signalled: the run is in the agents' step with a call in flight when the signal comes, however loaded the
    # machine, and cannot get past it meanwhile.
    with held_calls() as server:
        (data_dir / "toolchoice.yaml").write_text(f"models:\n  - {served('agent', server)}\n", encoding="utf-8")
        before = snapshot(data_dir)
        process = start_run(data_dir, "r2", "--no-judge")
        try:
            wait_until("an agent's call in flight", server.held.is_set, process)
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=WAIT_LIMIT_S)  # a bound for a hung run only
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "error: the run was interrupted before the release was scored" in stderr
    assert "interrupted (Ctrl-C) during agent_runs" in stderr
    assert unchanged(before, data_dir)
    assert not (data_dir / "releases" / "r2" / "scores.json").exists()
    assert Warehouse(data_dir).commit("r2") is None
    assert query(data_dir, "SELECT release_id FROM releases") == [("r1",)]


@pytest.mark.slow
def test_a_run_whose_promotion_fails_after_scoring_is_not_reported_as_a_passed_release(data_dir):
    tasks = data_dir / "suites" / DEMO_SUITE / "tasks.jsonl"
    tasks.write_text("\n".join(tasks.read_text(encoding="utf-8").splitlines()[:3]) + "\n", encoding="utf-8")
    (data_dir / "releases" / ".lock").mkdir(parents=True)  # the baseline step cannot take the releases lock
    done = toolchoice("run", "--data-dir", str(data_dir), "--release", "r1", "--kind", "release", "--no-judge")
    assert done.returncode == 3, done.stderr  # it used to exit 0: "gate passed"
    assert "error: the run failed after the release was scored" in done.stderr
    assert "a passing `release` was not promoted to baseline: re-run it with --force" in done.stderr
    assert ReleaseStore(data_dir).baseline(DEMO_SUITE) is None
    shutil.rmtree(data_dir / "releases" / ".lock")
    again = toolchoice("run", "--data-dir", str(data_dir), "--release", "r1", "--kind", "release", "--no-judge")
    assert again.returncode == 2
    assert "is a finished release whose gate passed but which is not the baseline; use --force" in again.stderr


@pytest.mark.slow
def test_a_run_drawing_its_trend_names_a_damaged_scores_json_of_another_release(data_dir):
    tasks = data_dir / "suites" / DEMO_SUITE / "tasks.jsonl"
    tasks.write_text("\n".join(tasks.read_text(encoding="utf-8").splitlines()[:3]) + "\n", encoding="utf-8")
    damaged = data_dir / "releases" / "r0" / "scores.json"
    damaged.parent.mkdir(parents=True)
    damaged.write_bytes(b"")  # a release whose scores.json was cut to nothing (a full disk, a bad copy)
    done = toolchoice("run", "--data-dir", str(data_dir), "--release", "r1", "--no-judge", "--chart")
    assert done.returncode == 0, done.stderr
    assert f"warning: {damaged}: empty file (0 bytes): left out of the trend" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert (data_dir / "releases" / "r1" / "trend.png").exists() and damaged.read_bytes() == b""
