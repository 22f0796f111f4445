"""The stores on an object store: an S3-compatible server (moto's server mode) started on 127.0.0.1 holds whole
releases, readable through the DuckDB file from another data dir (another machine's cache), among them one
written by ``toolchoice run``; a commit record of a new release is written only if absent. Staging, the shards'
journals and the release files (``TOOLCHOICE_RELEASES_URL``) go there too: a run leaves no ``releases/`` and no
``_staging`` on the local disk, another data dir gates and reports from the bucket, and two writers of one
release or one baseline never both win."""

from __future__ import annotations

import json
import threading
import time

import pytest
import yaml

from toolchoice_pipeline.defs.staging import (
    StagedRecords,
    is_single_record,
    read_records,
    read_staged,
    shard_journal,
    shard_path,
    staged_path,
    write_manifest,
    write_records,
)
from toolchoice_pipeline.execution.journal import CallJournal, JournaledCall
from toolchoice_pipeline.judge.journal import JOURNAL_FILE as POLL_JOURNAL_FILE
from toolchoice_pipeline.judge.journal import PollJournal
from toolchoice_pipeline.records.episodes import Episode, JudgeVote, StepRecord
from toolchoice_pipeline.releases.object_store import (
    RELEASES_URL_VARIABLE,
    WAREHOUSE_URL_VARIABLE,
    object_root,
    write_object,
)
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.releases.warehouse import Warehouse
from toolchoice_pipeline.releases.warehouse_tables import TABLE_NAMES
from toolchoice_pipeline.util.errors import InputError
from toolchoice_pipeline_tests.pipeline_helpers import copy_data, toolchoice, toolchoice_in_process, trim_tasks
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


# --- staging and the shards' journals ------------------------------------------------------------------------


def test_staged_records_round_trip_on_the_object_store_and_nothing_is_staged_locally(tmp_path, bucket_url, monkeypatch):
    monkeypatch.setenv(WAREHOUSE_URL_VARIABLE, bucket_url)
    episodes = [Episode(model="m", task_id=f"t{i}", steps=[StepRecord(step=0, latency_ms=float(i))]) for i in range(5)]
    first, second = (shard_path(tmp_path, "r1", "agent_runs", key) for key in ("m-0", "m-1"))
    assert str(first) == f"{bucket_url}/_staging/release_id=r1/agent_runs/m-0.parquet"
    assert write_records(first, episodes[:3], Episode) == 3
    assert write_records(second, iter(episodes[3:]), Episode) == 2
    write_manifest(tmp_path, "r1", "agent_runs", [first, second])
    staged = read_staged(tmp_path / "another-machine", "r1", "agent_runs")
    assert len(staged) == 5 and list(staged) == episodes
    assert [len(part) for part in staged.parts()] == [3, 2]
    single = staged_path(tmp_path, "r1", "release_snapshot")
    write_records(single, episodes[0], Episode)
    assert is_single_record(single) and read_records(single) == episodes[0]
    assert StagedRecords([str(first)]) == episodes[:3]  # a step gets the path as text from another process
    assert not (tmp_path / "warehouse").exists()


def test_a_staged_upload_that_fails_midway_leaves_no_object(tmp_path, bucket_url, monkeypatch):
    monkeypatch.setenv(WAREHOUSE_URL_VARIABLE, bucket_url)
    path = shard_path(tmp_path, "r1", "agent_runs", "m-0")

    def episodes():
        yield from (Episode(model="m", task_id=f"t{i}", steps=[]) for i in range(3000))  # more than one batch
        raise RuntimeError("the shard failed")

    with pytest.raises(RuntimeError, match="the shard failed"):
        write_records(path, episodes(), Episode)
    path.fs.invalidate_cache()
    assert not path.exists()


def _journal(data_dir):
    return CallJournal(data_dir / "cache" / "agent_calls.sqlite", "write_only", resume_key="r1", models=["m"])


def _call(n: int) -> JournaledCall:
    return JournaledCall({"content": f"reply {n}"}, prompt_tokens=3, completion_tokens=2, cost_usd=0.01, latency_ms=5)


def test_a_shards_journal_goes_to_the_store_and_a_retry_elsewhere_resumes_from_it(tmp_path, bucket_url, monkeypatch):
    monkeypatch.setenv(WAREHOUSE_URL_VARIABLE, bucket_url)

    def shard(data_dir):
        return shard_journal(
            data_dir,
            "r1",
            "agent_runs",
            "m-0",
            journal=data_dir / "cache" / "agent_calls.sqlite",
            table="agent_calls",
            models=["m"],
            task_ids=["t0", "t1"],
        )

    with pytest.raises(RuntimeError, match="provider down"), shard(tmp_path / "machine-a"):
        with _journal(tmp_path / "machine-a") as journal:
            journal.record("k-t0", model="m", task_id="t0", step=0, call=_call(0))
            journal.record("k-other", model="m", task_id="t9", step=0, call=_call(9))  # another shard's task
        raise RuntimeError("provider down")  # the shard failed: its journal is uploaded all the same

    with shard(tmp_path / "machine-b"):  # the retry, on another machine
        with _journal(tmp_path / "machine-b") as journal:
            assert journal.lookup("k-t0") == _call(0)  # resumed: not asked again
            assert journal.lookup("k-other") is None  # only the shard's own rows travel
            journal.record("k-t1", model="m", task_id="t1", step=0, call=_call(1))
    with shard(tmp_path / "machine-c"), _journal(tmp_path / "machine-c") as journal:
        assert journal.keys() == {"k-t0", "k-t1"}
    stored = object_root(bucket_url) / "_staging" / "release_id=r1" / "journal" / "agent_runs" / "m-0.sqlite"
    assert stored.is_file()


def test_a_judge_shards_finished_polls_are_resumed_by_a_retry_on_another_machine(tmp_path, bucket_url, monkeypatch):
    monkeypatch.setenv(WAREHOUSE_URL_VARIABLE, bucket_url)

    def shard(data_dir):
        return shard_journal(
            data_dir,
            "r1",
            "judge_votes",
            "m-0",
            journal=data_dir / POLL_JOURNAL_FILE,
            table="judge_polls",
            models={"m"},
            task_ids={"t0"},
        )

    vote = JudgeVote(
        model="m", task_id="t0", poll=1, verdict="correct", valid=True, judge_model="j", rubric_version="v"
    )
    with shard(tmp_path / "machine-a"):
        journal = PollJournal(tmp_path / "machine-a", "r1")
        journal.record(vote, "shown-1", max_attempts=3)
        journal.close()
    with shard(tmp_path / "machine-b"):
        journal = PollJournal(tmp_path / "machine-b", "r1")
        assert journal.finished("m", "t0", 1, "shown-1") == vote and journal.resumed == 1
        other_release = PollJournal(tmp_path / "machine-b", "r2")
        assert other_release.finished("m", "t0", 1, "shown-1") is None  # a resume of r1 only
        other_release.close()
        journal.close()


def test_without_a_store_a_shard_uses_the_hosts_journal_as_it_is(tmp_path, monkeypatch):
    monkeypatch.delenv(WAREHOUSE_URL_VARIABLE, raising=False)
    host = tmp_path / "cache" / "agent_calls.sqlite"
    with shard_journal(
        tmp_path, "r1", "agent_runs", "m-0", journal=host, table="agent_calls", models=["m"], task_ids=["t0"]
    ):
        with _journal(tmp_path) as journal:
            journal.record("k-t0", model="m", task_id="t0", step=0, call=_call(0))
    assert sorted(p.name for p in tmp_path.rglob("*.sqlite")) == ["agent_calls.sqlite"]  # no copy of it anywhere


# --- release files -------------------------------------------------------------------------------------------


@pytest.fixture
def on_the_bucket(bucket_url, monkeypatch):
    """Warehouse and release files on the bucket (``.../warehouse``, ``.../releases``)."""
    monkeypatch.setenv(WAREHOUSE_URL_VARIABLE, f"{bucket_url}/warehouse")
    monkeypatch.setenv(RELEASES_URL_VARIABLE, f"{bucket_url}/releases")
    return bucket_url


def test_release_files_and_the_baseline_are_on_the_store_and_read_from_another_data_dir(tmp_path, on_the_bucket):
    suite = make_suite(10)
    publish(tmp_path / "a", suite, "r1")
    second = publish(tmp_path / "b", suite, "r2", models={"local/a": {"wrong_tool": {"t03"}}, "local/b": {}})
    assert second.gate.baseline_release_id == "r1"  # machine b found machine a's baseline on the store
    releases = object_root(f"{on_the_bucket}/releases")
    assert (releases / "r2" / "scores.json").is_file() and (releases / "r2" / "gate.md").is_file()
    assert not second.gate.passed and not second.promoted  # the flipped task t03: r1 stays the baseline
    publish(tmp_path / "c", suite, "r3")
    baseline = json.loads((releases / "baseline.json").read_text())  # DESIGN's baseline.json, kept on the store
    assert [e["release_id"] for e in baseline["suites"][suite.name]["history"]] == ["r1", "r3"]
    reader = ReleaseStore(tmp_path / "d")
    assert reader.baseline(suite.name) == "r3" and reader.baseline_for(suite.name, "r3") == "r1"
    assert reader.release_ids() == ["r1", "r2", "r3"]
    assert reader.read_scores("r2").baseline_release_id == "r1"
    for machine in ("a", "b", "c", "d"):
        assert not (tmp_path / machine / "releases").exists()


def test_two_writers_of_one_new_release_on_the_store_exactly_one_wins(tmp_path, on_the_bucket):
    suite = make_suite(10)
    outcomes: dict[str, object] = {}
    start = threading.Barrier(2)

    def writer(machine: str) -> None:
        start.wait()
        try:
            outcomes[machine] = publish(tmp_path / machine, suite, "r1").scores.run_id
        except InputError as exc:
            outcomes[machine] = exc

    threads = [threading.Thread(target=writer, args=(machine,)) for machine in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    errors = [o for o in outcomes.values() if isinstance(o, InputError)]
    assert len(outcomes) == 2 and len(errors) == 1, outcomes
    assert any(what in str(errors[0]) for what in ("being published by another writer", "meanwhile", "already"))
    store = ReleaseStore(tmp_path / "c")
    assert store.read_scores("r1").run_id == "run-r1" and store.baseline(suite.name) == "r1"
    with Warehouse(tmp_path / "c").connect() as con:
        assert con.execute("SELECT count(*) FROM releases").fetchone() == (1,)


def test_a_release_being_published_elsewhere_is_refused_at_once_and_a_dead_writers_lease_is_taken_over(
    tmp_path, on_the_bucket
):
    suite = make_suite(10)
    lease = object_root(f"{on_the_bucket}/releases") / "r1" / ".publishing.json"
    write_object(lease, json.dumps({"id": "another-machine", "at": time.time()}), only_if_absent=True)
    with pytest.raises(InputError, match="release 'r1' is being published by another writer"):
        publish(tmp_path / "a", suite, "r1")
    assert not ReleaseStore(tmp_path / "a").has_scores("r1") and Warehouse(tmp_path / "a").commit("r1") is None
    write_object(lease, json.dumps({"id": "dead-machine", "at": time.time() - 3600}), only_if_absent=False)
    assert publish(tmp_path / "a", suite, "r1").promoted  # the dead writer's lease was taken over
    lease.fs.invalidate_cache()
    assert not lease.exists()  # released after publishing


def test_a_promotion_that_loses_the_race_looks_again_and_is_gated_against_the_winner(
    tmp_path, on_the_bucket, monkeypatch
):
    suite = make_suite(10)
    publish(tmp_path / "a", suite, "r1")
    publish(tmp_path / "b", suite, "r2", promote=False)  # gated against r1
    late = ReleaseStore(tmp_path / "b")
    seen = late._records(suite.name)  # machine b reads the records ...
    publish(tmp_path / "a", suite, "r3")  # ... machine a promotes r3 meanwhile (record number 1)
    real, views = late._records, iter([seen])
    monkeypatch.setattr(late, "_records", lambda name: next(views, None) or real(name))
    assert late.promote("r2") is True  # its record number 1 was taken: it read again, gated again, appended
    history = [e["release_id"] for e in ReleaseStore(tmp_path / "c")._history(suite.name)]
    assert history == ["r1", "r3", "r2"]  # nothing lost
    assert late.read_scores("r2").baseline_release_id == "r3"
    gate_md = (object_root(f"{on_the_bucket}/releases") / "r2" / "gate.md").read_text()
    assert "gated again against r3" in gate_md


def test_a_promotion_that_keeps_losing_the_race_is_one_clear_error_and_loses_nothing(
    tmp_path, on_the_bucket, monkeypatch
):
    suite = make_suite(10)
    publish(tmp_path / "a", suite, "r1")
    publish(tmp_path / "a", suite, "r2", kind="adhoc")
    store = ReleaseStore(tmp_path / "b")
    monkeypatch.setattr(store, "_records", lambda s: [])  # a view that never catches up with r1's record
    with pytest.raises(InputError, match="was not promoted: the baseline of suite unit changed 5 times"):
        store.promote("r1")
    assert ReleaseStore(tmp_path / "c")._history(suite.name)[-1]["release_id"] == "r1"


def test_a_multiprocess_run_with_everything_on_the_store_is_read_by_another_machine_and_leaves_nothing_locally(
    tmp_path, on_the_bucket, capsys, monkeypatch
):
    data_dir = copy_data(tmp_path / "data")
    trim_tasks(data_dir, 4)
    config = yaml.safe_load((data_dir / "toolchoice.yaml").read_text(encoding="utf-8"))
    config["concurrency"]["shard_episodes"] = 2  # two shards of two tasks, each a step in a worker process
    (data_dir / "toolchoice.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    done = toolchoice(
        "run", "--data-dir", str(data_dir), "--release", "r1", "--kind", "release", "--no-judge", "--workers", "2",
        "--models", "local/name-match",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "executor multiprocess" in done.stdout  # the shards ran on worker processes
    assert not (data_dir / "releases").exists()
    assert not list(data_dir.rglob("_staging")) and not (data_dir / "warehouse").exists()
    releases, warehouse = object_root(f"{on_the_bucket}/releases"), object_root(f"{on_the_bucket}/warehouse")
    scores = json.loads((releases / "r1" / "scores.json").read_text())
    assert (releases / "r1" / "gate.md").is_file() and (releases / "r1" / "snapshot.json").is_file()
    assert json.loads((releases / "baseline.json").read_text())["suites"][scores["suite"]]["release_id"] == "r1"
    staged = warehouse / "_staging" / "release_id=r1"
    assert (staged / "agent_runs.manifest.json").is_file()
    journals = [p.name for p in (staged / "journal" / "agent_runs").iterdir()]
    assert len(journals) == 2 and all(name.endswith(".sqlite") for name in journals), journals  # one per shard
    assert (warehouse / "_staging" / "_step_outputs").is_dir()  # the ops' outputs between steps: on the store too
    assert not list((data_dir / "dagster_home").rglob("result"))

    other = copy_data(tmp_path / "another-machine")  # the project's files, none of the first machine's outputs
    monkeypatch.setenv("COLUMNS", "200")  # as the console script runs in the tests
    with Warehouse(other).connect() as con:
        shown = counts(con, "r1")
        per_model = dict(
            con.execute("SELECT model, right_tool_pct FROM release_scores WHERE release_id = 'r1'").fetchall()
        )
    assert shown["task_scores"] == sum(m["n_tasks"] for m in scores["models"].values()) > 0
    assert all(shown[name] > 0 for name in ("agent_calls", "release_scores", "tool_catalog"))
    assert per_model == pytest.approx({model: m["right_tool_pct"] for model, m in scores["models"].items()})
    capsys.readouterr()
    assert toolchoice_in_process("gate", "r1", data_dir=other) == 0
    assert "passed" in capsys.readouterr().out.lower()
    assert toolchoice_in_process("report", data_dir=other) == 0
    report = capsys.readouterr().out
    assert "r1" in report and "(baseline)" in report
    assert not (other / "releases").exists()
