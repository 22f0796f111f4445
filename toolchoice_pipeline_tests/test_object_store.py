"""The warehouse on an object store: an S3-compatible server (moto's server mode) started on 127.0.0.1 holds whole
releases, readable through the DuckDB file from another data dir (another machine's cache), among them one
written by ``toolchoice run``; a commit record of a new release is written only if absent."""

from __future__ import annotations

import pytest

from toolchoice_pipeline.releases.object_store import WAREHOUSE_URL_VARIABLE, object_root, write_object
from toolchoice_pipeline.releases.warehouse import Warehouse
from toolchoice_pipeline.releases.warehouse_tables import TABLE_NAMES
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline_tests.pipeline_helpers import copy_data, read_scores, toolchoice
from toolchoice_pipeline_tests.release_helpers import make_suite, publish
from toolchoice_pipeline_tests.test_warehouse import counts, release_tables

BUCKET = "toolchoice-test"

pytestmark = pytest.mark.slow  # an S3-compatible server on 127.0.0.1, like the webserver tests


@pytest.fixture(scope="module")
def s3_server():
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def bucket_url(s3_server, monkeypatch, request):
    # Dummy values the local server accepts; nothing reaches AWS.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "local")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server)
    root = object_root(f"s3://{BUCKET}")
    if not root.fs.exists(BUCKET):
        root.fs.mkdir(BUCKET)
    return f"s3://{BUCKET}/{request.node.name}"


def test_releases_on_the_object_store_are_readable_through_the_duckdb_file_of_another_machine(tmp_path, bucket_url):
    writer = Warehouse(tmp_path / "machine-a", url=bucket_url)
    written = {}
    for release_id in ("r1", "r2"):
        lineage, tables = release_tables(release_id)
        writer.write_release(lineage, tables, kind="release")
        written[release_id] = {name: t.num_rows for name, t in tables.items()}
    root = object_root(bucket_url)
    assert sorted(p.name for p in (root / "_commits").iterdir()) == ["r1.json", "r2.json"]
    assert (root / "toolchoice.duckdb").is_file()
    commit = writer.commit("r2")
    assert all((root / relative).is_file() for relative in commit.files.values())
    assert not (tmp_path / "machine-a" / "warehouse").exists()  # nothing of the store on the local disk

    reader = Warehouse(tmp_path / "machine-b", url=bucket_url)
    with reader.connect() as con:
        assert counts(con, "r1") == written["r1"] and counts(con, "r2") == written["r2"]
        assert con.execute("SELECT release_id FROM releases ORDER BY 1").fetchall() == [("r1",), ("r2",)]
    assert reader.read_table("task_scores", "r1").num_rows == written["r1"]["task_scores"]
    reader.check()


def test_replacing_a_release_on_the_object_store_shows_only_the_new_rows(tmp_path, bucket_url):
    warehouse = Warehouse(tmp_path, url=bucket_url)
    first = warehouse.write_release(*release_tables("r1"), kind="release")
    with pytest.raises(InputError, match="already in the warehouse"):
        warehouse.write_release(*release_tables("r1"), kind="release")
    lineage, smaller = release_tables("r1", n_tasks=8)
    warehouse.write_release(lineage, smaller, kind="release", replace=True)
    with Warehouse(tmp_path / "other", url=bucket_url).connect() as con:
        assert counts(con) == {name: t.num_rows for name, t in smaller.items()}
    root = object_root(bucket_url)
    assert not any((root / relative).exists() for relative in first.files.values())


def test_a_commit_record_is_written_only_if_absent(tmp_path, bucket_url):
    record = object_root(bucket_url) / "_commits" / "r9.json"
    write_object(record, "{}", only_if_absent=True)
    with pytest.raises(FileExistsError):
        write_object(record, '{"other": 1}', only_if_absent=True)
    assert record.read_text() == "{}"


def test_the_writer_that_loses_the_race_for_a_new_release_commits_nothing_and_removes_its_files(
    tmp_path, bucket_url, monkeypatch
):
    first, second = Warehouse(tmp_path / "a", url=bucket_url), Warehouse(tmp_path / "b", url=bucket_url)
    lineage, tables = release_tables("r1")
    won = first.write_release(lineage, tables, kind="release")
    # The second writer looked before the first committed: it saw no commit record of r1.
    monkeypatch.setattr(second, "commit", lambda release_id: None)
    with pytest.raises(InputError, match="was committed meanwhile by another writer"):
        second.write_release(*release_tables("r1", n_tasks=8), kind="release")
    monkeypatch.undo()
    assert second.commit("r1") == won
    root = object_root(bucket_url)
    left = sorted(p.path for name in TABLE_NAMES for p in (root / name / "release_id=r1").iterdir())
    assert left == sorted((root / relative).path for relative in won.files.values())


def test_publishing_with_the_warehouse_url_in_the_environment_gates_against_a_baseline_on_the_store(
    tmp_path, bucket_url, monkeypatch
):
    monkeypatch.setenv(WAREHOUSE_URL_VARIABLE, bucket_url)
    suite = make_suite(10)
    publish(tmp_path, suite, "r1")
    second = publish(tmp_path, suite, "r2", models={"local/a": {"wrong_tool": {"t03"}}, "local/b": {}})
    assert second.gate.baseline_release_id == "r1"
    # the flipped task is found in the baseline's task_scores, read from the store
    assert second.gate.to_json()["flips"]["local/a"]["right_tool"]["right_to_wrong"] == ["t03"]
    assert not (tmp_path / "warehouse").exists()
    with Warehouse(tmp_path).connect() as con:
        assert con.execute(
            "SELECT count(*) FROM task_scores WHERE release_id = 'r2' AND NOT right_tool"
        ).fetchone() == (1,)


def test_a_multiprocess_toolchoice_run_writes_a_whole_release_to_the_object_store_readable_through_duckdb(
    tmp_path, bucket_url, monkeypatch
):
    monkeypatch.setenv(WAREHOUSE_URL_VARIABLE, bucket_url)
    data_dir = copy_data(tmp_path / "data")
    done = toolchoice(
        "run", "--data-dir", str(data_dir), "--release", "r1", "--kind", "release", "--no-judge", "--workers", "2"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "executor multiprocess" in done.stdout  # the shards ran on worker processes
    assert not (data_dir / "warehouse" / "_commits").exists()  # the commit is on the store
    scores = read_scores(data_dir, "r1")
    with Warehouse(tmp_path / "another-machine", url=bucket_url).connect() as con:
        shown = counts(con, "r1")
        per_model = dict(
            con.execute("SELECT model, right_tool_pct FROM release_scores WHERE release_id = 'r1'").fetchall()
        )
    assert shown["task_scores"] == sum(m["n_tasks"] for m in scores["models"].values()) > 0
    assert all(shown[name] > 0 for name in ("agent_calls", "release_scores", "tool_catalog"))
    assert per_model == pytest.approx({model: m["right_tool_pct"] for model, m in scores["models"].items()})
