"""The warehouse: Parquet per table and release, atomic commits, DuckDB views, and a writer killed mid-release."""

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

import toolchoice_pipeline.releases.warehouse as wh
from toolchoice_pipeline.releases.lineage import LINEAGE_COLUMNS, Lineage
from toolchoice_pipeline.releases.warehouse import Warehouse
from toolchoice_pipeline.releases.warehouse_tables import (
    TABLE_NAMES,
    agent_calls_table,
    conform,
    judge_votes_table,
    release_scores_table,
    task_scores_table,
    tool_catalog_table,
)
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline_tests.release_helpers import make_suite, model_episodes, votes_for
from toolchoice_pipeline_tests.scoring_reference import score_episodes, summarise

REPO = Path(__file__).resolve().parents[1]


def release_tables(release_id, n_tasks=20, models=("local/a", "local/b"), wrong_tool=()):
    suite = make_suite(n_tasks)
    lineage = Lineage(
        release_id=release_id, suite=suite.name, catalog_version=suite.catalog_version, run_id=f"run-{release_id}"
    )
    episodes = [e for m in models for e in model_episodes(suite, m, wrong_tool=wrong_tool, errors={"t01"})]
    votes = votes_for(episodes)
    scores = score_episodes(suite, episodes, votes)
    return lineage, {
        "task_scores": task_scores_table(scores, lineage),
        "release_scores": release_scores_table(summarise(scores), lineage),
        "agent_calls": agent_calls_table(episodes, lineage, suite),
        "judge_votes": judge_votes_table(votes, lineage),
        "tool_catalog": tool_catalog_table(suite, lineage),
    }


def counts(con, release_id=None):
    where = "" if release_id is None else f" WHERE release_id = '{release_id}'"
    return {name: con.execute(f"SELECT count(*) FROM {name}{where}").fetchone()[0] for name in TABLE_NAMES}


@pytest.mark.parametrize("how", ["moved", "copied with its times kept"])
def test_a_data_directory_moved_or_copied_whole_shows_its_own_files(tmp_path, how):
    # `mv`, `cp -a` and `rsync -a` keep every file's time: the commit records look unchanged, the views do not.
    old, new = tmp_path / "old", tmp_path / "new"
    lineage, tables = release_tables("r1", n_tasks=4)
    Warehouse(old).write_release(lineage, tables, kind="release")
    with Warehouse(old).connect() as con:
        assert counts(con)["task_scores"] == tables["task_scores"].num_rows
    if how == "moved":
        old.rename(new)
    else:
        shutil.copytree(old, new, copy_function=shutil.copy2)
        shutil.rmtree(old)  # the copy must not read the original
    with Warehouse(new).connect() as con:
        assert counts(con) == {name: t.num_rows for name, t in tables.items()}


def test_views_show_every_table_with_lineage_on_every_row(tmp_path):
    warehouse = Warehouse(tmp_path)
    lineage, tables = release_tables("r1")
    commit = warehouse.write_release(lineage, tables, kind="release")
    assert sorted(commit.files) == sorted(TABLE_NAMES)
    for name, relative in commit.files.items():
        assert relative.startswith(f"{name}/release_id=r1/") and relative.endswith(".parquet")
    with warehouse.connect() as con:
        assert counts(con) == {name: t.num_rows for name, t in tables.items()}
        for name in TABLE_NAMES:
            lineages = con.execute(f"SELECT DISTINCT {', '.join(LINEAGE_COLUMNS)} FROM {name}").fetchall()
            assert lineages == [tuple(lineage.columns().values())]
        assert con.execute("SELECT release_id, kind FROM releases").fetchall() == [("r1", "release")]
        # agent_calls: one row per model call; the failed episode keeps its step row with the error
        row = con.execute(
            "SELECT tool_name, arguments_json, arguments_valid, n_calls, episode_error FROM agent_calls "
            "WHERE model = 'local/a' AND task_id = 't02'"
        ).fetchone()
        assert row == ("Read", '{"file_path": "2.py"}', True, 1, None)
        failed = con.execute("SELECT error, episode_error, n_calls FROM agent_calls WHERE task_id = 't01'").fetchall()
        assert failed == [("APIConnectionError: connection reset",) * 2 + (0,)] * 2
        assert con.execute("SELECT count(*) FROM tool_catalog WHERE task_id IS NULL").fetchone()[0] == 2


def test_views_exist_and_are_empty_before_the_first_release(tmp_path):
    with Warehouse(tmp_path).connect() as con:
        assert counts(con) == {name: 0 for name in TABLE_NAMES}
        columns = [row[0] for row in con.execute("DESCRIBE task_scores").fetchall()]
    assert columns[:4] == list(LINEAGE_COLUMNS) and "right_args" in columns


def test_rewriting_a_committed_release_needs_replace_and_leaves_only_the_new_files(tmp_path):
    warehouse = Warehouse(tmp_path)
    lineage, tables = release_tables("r1")
    first = warehouse.write_release(lineage, tables, kind="release")
    with pytest.raises(InputError, match="already in the warehouse"):
        warehouse.write_release(lineage, tables, kind="release")
    lineage, smaller = release_tables("r1", n_tasks=8)
    second = warehouse.write_release(lineage, smaller, kind="release", replace=True)
    with warehouse.connect() as con:
        assert counts(con) == {name: t.num_rows for name, t in smaller.items()}
    for name in TABLE_NAMES:
        assert not (tmp_path / "warehouse" / first.files[name]).exists()
        assert [p.name for p in (tmp_path / "warehouse" / name / "release_id=r1").iterdir()] == [
            Path(second.files[name]).name
        ]


def test_rows_of_another_release_are_refused(tmp_path):
    lineage, tables = release_tables("r1")
    other, _ = release_tables("r2")
    with pytest.raises(ValueError, match="release_id"):
        Warehouse(tmp_path).write_release(other, tables, kind="release")


def test_a_reader_holding_the_old_file_keeps_reading_while_a_release_is_committed(tmp_path):
    warehouse = Warehouse(tmp_path)
    warehouse.write_release(*release_tables("r1"), kind="release")
    reader = warehouse.connect()
    before = counts(reader)
    warehouse.write_release(*release_tables("r2"), kind="nightly")
    assert counts(reader) == before  # the old snapshot, never a mix
    reader.close()
    with warehouse.connect() as con:
        assert counts(con, "r2") == before


def test_committing_a_release_reads_no_other_releases_commit_record(tmp_path, monkeypatch):
    # The DuckDB file is brought up to date from the commit records that changed: its cost does not grow with the
    # releases stored.
    warehouse = Warehouse(tmp_path)
    for release_id in ("r1", "r2", "r3"):
        warehouse.write_release(*release_tables(release_id, n_tasks=4), kind="release")
    read = []
    original = wh._read_commit
    monkeypatch.setattr(wh, "_read_commit", lambda path: read.append(path.name) or original(path))
    warehouse.write_release(*release_tables("r4", n_tasks=4), kind="nightly")
    assert read == ["r4.json"]
    monkeypatch.undo()
    with warehouse.connect() as con:
        assert [counts(con, r)["task_scores"] for r in ("r1", "r2", "r3", "r4")] == [8] * 4
        assert con.execute("SELECT release_id, kind FROM releases ORDER BY release_id").fetchall()[-1] == (
            "r4",
            "nightly",
        )


def test_a_duckdb_file_built_for_other_columns_is_built_anew(tmp_path, monkeypatch):
    warehouse = Warehouse(tmp_path)
    monkeypatch.setattr(wh, "VIEWS_VERSION", "columns-of-an-older-release")
    warehouse.write_release(*release_tables("r1"), kind="release")
    monkeypatch.undo()
    warehouse.write_release(*release_tables("r2"), kind="release")
    with warehouse.connect() as con:
        assert con.execute("SELECT value FROM _meta WHERE key = 'views_version'").fetchone() == (wh.VIEWS_VERSION,)
        assert counts(con, "r1") == counts(con, "r2") and counts(con, "r1")["task_scores"] == 40


def test_views_show_the_first_release_written_after_a_reader_opened_the_empty_warehouse(tmp_path):
    warehouse = Warehouse(tmp_path)
    warehouse.connect().close()  # views over the empty schema files only
    warehouse.write_release(*release_tables("r1"), kind="release")
    with warehouse.connect() as con:
        assert counts(con, "r1")["task_scores"] == 40


# --- a writer killed mid-release -----------------------------------------------------------------------------

WRITER = r"""
import os, sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
import toolchoice_pipeline.releases.warehouse as wh
from toolchoice_pipeline_tests.test_warehouse import release_tables

marker, point, after = Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
calls = {{"n": 0}}

def pause_then(original):
    def wrapped(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == after:
            marker.write_text(point)
            time.sleep(120)  # killed here
        return original(*args, **kwargs)
    return wrapped

if point == "staging":          # while the tables are being written to _tmp
    wh._write_parquet = pause_then(wh._write_parquet)
else:                           # before the N-th rename: moving files in, the commit record, the DuckDB file
    wh.os.replace = pause_then(wh.os.replace)
lineage, tables = release_tables("r3", n_tasks=200, wrong_tool={{"t05"}})
wh.Warehouse(Path(sys.argv[1])).write_release(lineage, tables, kind="release")
marker.write_text("finished")
"""

# os.replace calls of a write: 5 data files moved in (1-5), the commit record (6), the DuckDB file (7).
KILL_POINTS = [("staging", 3), ("rename", 3), ("rename", 6), ("rename", 7)]


@pytest.mark.slow
@pytest.mark.parametrize(("point", "after"), KILL_POINTS, ids=[f"{p}-{a}" for p, a in KILL_POINTS])
def test_writer_killed_mid_release_leaves_earlier_releases_and_duckdb_intact(tmp_path, point, after):
    warehouse = Warehouse(tmp_path)
    for release_id in ("r1", "r2"):
        warehouse.write_release(*release_tables(release_id), kind="release")
    with warehouse.connect() as con:
        before = counts(con)
    snapshot = {p: p.read_bytes() for p in (tmp_path / "warehouse").rglob("*.parquet")}
    duckdb_bytes = warehouse.duckdb_path.read_bytes()

    marker = tmp_path / "marker"
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(repo=str(REPO)))
    writer = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path), str(marker), point, str(after)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    # Wait for the writer to reach its kill point or to end, however long its start takes on a loaded machine (a
    # clock bound here failed the test when the writer's imports alone took a minute). The marker exists a moment
    # before its text is written: wait for the text.
    while not (marker.exists() and marker.read_text()) and writer.poll() is None:
        time.sleep(0.02)
    assert marker.exists() and marker.read_text() == point, "the writer did not reach the kill point"
    os.kill(writer.pid, signal.SIGKILL)
    assert writer.wait(timeout=30) == -signal.SIGKILL

    # The DuckDB file is the one from before the writer started, and opens read-only with both releases whole.
    assert warehouse.duckdb_path.read_bytes() == duckdb_bytes
    with duckdb.connect(str(warehouse.duckdb_path), read_only=True) as con:
        assert counts(con) == before
        assert sorted(r[0] for r in con.execute("SELECT DISTINCT release_id FROM task_scores").fetchall()) == [
            "r1",
            "r2",
        ]
    for path, content in snapshot.items():
        assert path.read_bytes() == content

    committed = after >= 7 and point == "rename"  # killed after the commit record: r3 is in, views lag behind
    assert ({c.release_id for c in warehouse.commits()} == {"r1", "r2", "r3"}) is committed
    with warehouse.connect() as con:  # rebuilds stale views under the lock, then opens read-only
        shown = sorted(r[0] for r in con.execute("SELECT DISTINCT release_id FROM task_scores").fetchall())
        assert shown == (["r1", "r2", "r3"] if committed else ["r1", "r2"])
        if committed:
            assert counts(con, "r3")["task_scores"] == 400 and counts(con, "r3")["agent_calls"] == 400

    # The next writer cleans up what the killed one left, and writes the release whole.
    warehouse.write_release(*release_tables("r3", n_tasks=200), kind="release", replace=committed)
    assert not (tmp_path / "warehouse" / "_tmp").exists()
    on_disk = {p.relative_to(warehouse.root).as_posix() for p in warehouse.root.glob("*/release_id=*/*.parquet")}
    assert on_disk == {f for c in warehouse.commits() for f in c.files.values()}
    with warehouse.connect() as con:
        assert counts(con, "r3")["task_scores"] == 400
        assert counts(con, "r1") == counts(con, "r2")
    assert json.loads((warehouse.root / "_commits" / "r3.json").read_text())["rows"]["task_scores"] == 400


def test_staged_table_files_are_committed_by_rename_as_written(tmp_path):
    from toolchoice_pipeline.releases.staged_tables import STAGED_TABLES, TableFiles, staged_table_files

    lineage, tables = release_tables("r1")
    files = TableFiles(tmp_path / "staged", lineage)
    for name in STAGED_TABLES:  # in two parts, as shards append them
        half = tables[name].num_rows // 2
        files.append(name, tables[name].slice(0, half))
        files.append(name, tables[name].slice(half))
    written = files.close()
    assert staged_table_files(tmp_path / "staged", lineage) == written
    assert staged_table_files(tmp_path / "staged", dataclasses.replace(lineage, run_id="another-run")) is None
    inodes = {name: path.stat().st_ino for name, path in written.items()}

    warehouse = Warehouse(tmp_path)
    built = {name: table for name, table in tables.items() if name not in STAGED_TABLES}
    commit = warehouse.write_release(lineage, built, kind="release", staged=written)
    for name in STAGED_TABLES:
        committed = tmp_path / "warehouse" / commit.files[name]
        assert committed.stat().st_ino == inodes[name] and not written[name].exists()  # renamed, not rewritten
        assert warehouse.read_table(name, "r1").equals(conform(name, tables[name], lineage))
    assert commit.rows == {name: table.num_rows for name, table in tables.items()}
    with warehouse.connect() as con:
        assert counts(con) == {name: table.num_rows for name, table in tables.items()}


def test_a_staged_file_of_other_columns_is_refused(tmp_path):
    lineage, tables = release_tables("r1")
    wrong = tmp_path / "agent_calls.parquet"
    pq.write_table(tables["judge_votes"], wrong)
    built = {name: table for name, table in tables.items() if name != "agent_calls"}
    with pytest.raises(ValueError, match="declared columns"):
        Warehouse(tmp_path).write_release(lineage, built, kind="release", staged={"agent_calls": wrong})
    assert Warehouse(tmp_path).commit("r1") is None


def test_table_shape_reads_the_columns_and_rows_a_read_gives(tmp_path):
    lineage, tables = release_tables("r1")
    warehouse = Warehouse(tmp_path)
    warehouse.write_release(lineage, tables, kind="release")
    for name in TABLE_NAMES:
        table = warehouse.read_table(name, "r1")
        assert warehouse.table_shape(name, "r1") == (table.column_names, table.num_rows)
    with pytest.raises(InputError, match="not in the warehouse"):
        warehouse.table_shape("task_scores", "r9")
