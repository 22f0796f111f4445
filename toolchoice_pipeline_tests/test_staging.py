"""Staged stage outputs: written and read back in batches, every record and its class kept."""

import pyarrow.parquet as pq
import pytest

from toolchoice_pipeline.defs import staging
from toolchoice_pipeline.defs.staging import BATCH_ROWS, StagedRecords, apart_path, read_records, write_records
from toolchoice_pipeline.records.episodes import Episode, JudgeVote, StepRecord
from toolchoice_pipeline.releases.request import ReleaseRequest, write_request
from toolchoice_pipeline.releases.snapshot import ReleaseSnapshot, pin_snapshot
from toolchoice_pipeline_tests.pipeline_helpers import copy_data


def test_records_round_trip_across_batches(tmp_path):
    episodes = [
        Episode(model="m", task_id=f"t{i}", steps=[StepRecord(step=0, latency_ms=float(i), provider_ms=1.5)])
        for i in range(2 * BATCH_ROWS + 3)
    ]
    path = tmp_path / "agent_runs.parquet"
    assert write_records(path, iter(episodes), Episode) == len(episodes)
    assert pq.ParquetFile(path).metadata.num_row_groups >= 3  # written batch by batch
    assert read_records(path) == episodes


def test_an_empty_output_keeps_its_record_class(tmp_path):
    path = tmp_path / "judge_votes.parquet"
    assert write_records(path, [], JudgeVote) == 0
    assert read_records(path) == []
    assert not list(tmp_path.glob("*.tmp"))


@pytest.fixture
def read_groups(monkeypatch):
    """The row groups read from staged files, in order, from now on."""
    read = []
    original = pq.ParquetFile.read_row_group

    def counted(self, index, *args, **kwargs):
        read.append(index)
        return original(self, index, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", counted)
    return read


def test_a_slice_or_an_index_reads_only_the_row_groups_that_hold_it(tmp_path, monkeypatch, read_groups):
    monkeypatch.setattr(staging, "BATCH_ROWS", 4)
    episodes = [Episode(model="m", task_id=f"t{i}") for i in range(23)]
    halves = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    write_records(halves[0], episodes[:10], Episode)
    write_records(halves[1], episodes[10:], Episode)
    staged = StagedRecords(halves)
    assert staged[5:6] == episodes[5:6] and read_groups == [1]  # rows 4-7 of the first file
    for start, stop in [(0, 23), (3, 17), (9, 11), (22, 40), (7, 7)]:
        assert staged[start:stop] == episodes[start:stop]
    assert staged[-1] == episodes[-1] and staged[12] == episodes[12]
    assert staged._held is None  # nothing was kept


def test_the_same_block_asked_again_is_not_read_again_unless_its_file_changed(tmp_path, monkeypatch, read_groups):
    monkeypatch.setattr(staging, "BATCH_ROWS", 4)
    path = tmp_path / "tasks.parquet"
    episodes = [Episode(model="m", task_id=f"t{i}") for i in range(12)]
    write_records(path, episodes, Episode)
    assert StagedRecords([path])[4:12] == episodes[4:12] and read_groups == [1, 2]
    assert StagedRecords([path])[4:12] == episodes[4:12] and read_groups == [1, 2]  # the next shard of the block
    assert StagedRecords([path])[0:4] == episodes[0:4] and read_groups == [1, 2, 0]  # another block is read
    rewritten = [Episode(model="m2", task_id=f"t{i}") for i in range(12)]
    write_records(path, rewritten, Episode)  # a re-run rewrites the file: its block is not the old one
    assert StagedRecords([path])[0:4] == rewritten[0:4] and read_groups == [1, 2, 0, 0]


def test_the_release_snapshot_stages_its_tasks_apart_and_reads_them_when_used(tmp_path):
    data_dir = copy_data(tmp_path / "data")
    write_request(data_dir, ReleaseRequest(release_id="r1", models=["local/name-match"]))
    snapshot, _ = pin_snapshot(data_dir, "r1")
    path = tmp_path / "release_snapshot.parquet"
    write_records(path, snapshot, ReleaseSnapshot, apart="tasks")
    assert pq.ParquetFile(apart_path(path, "tasks")).metadata.num_rows == len(snapshot.tasks) > 20
    loaded = read_records(path)
    assert isinstance(loaded.tasks, StagedRecords) and len(loaded.tasks) == len(snapshot.tasks)
    assert loaded.tasks[10:20] == snapshot.tasks[10:20] and list(loaded.tasks) == snapshot.tasks
    assert loaded.model_copy(update={"tasks": list(loaded.tasks)}) == snapshot
