"""Staged stage outputs: written and read back in batches, every record and its class kept."""

import pyarrow.parquet as pq

from toolchoice_pipeline.defs.staging import BATCH_ROWS, read_records, write_records
from toolchoice_pipeline.records.episodes import Episode, JudgeVote, StepRecord


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
