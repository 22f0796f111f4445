"""The window between a release's warehouse commit and its ``scores.json`` (issue 10): the DuckDB views never
list a release the CLI calls unfinished (no ``scores.json``). Real Parquet files and DuckDB views."""

from __future__ import annotations

from toolchoice_pipeline.releases.publish import publish_release
from toolchoice_pipeline.releases.store import ReleaseStore
from toolchoice_pipeline.releases.warehouse import Warehouse
from toolchoice_pipeline_tests.release_helpers import make_suite, model_episodes, votes_for
from toolchoice_pipeline_tests.test_warehouse import release_tables


def listed(warehouse: Warehouse) -> set[str]:
    with warehouse.connect() as con:
        ids = {row[0] for row in con.execute("SELECT release_id FROM releases").fetchall()}
        ids |= {row[0] for row in con.execute("SELECT DISTINCT release_id FROM release_scores").fetchall()}
    return ids


def test_an_unpublished_commit_stays_out_of_the_views_until_published_whoever_refreshes_them(tmp_path):
    warehouse = Warehouse(tmp_path)
    warehouse.write_release(*release_tables("r1"), kind="release")
    warehouse.write_release(*release_tables("r2"), kind="release", published=False)
    assert listed(warehouse) == {"r1"}
    warehouse.write_release(*release_tables("r3"), kind="adhoc")  # another writer rebuilds the views meanwhile
    assert listed(warehouse) == {"r1", "r3"}
    assert warehouse.read_table("task_scores", "r2").num_rows > 0  # the publisher can read its own rows
    warehouse.publish("r2")
    assert listed(warehouse) == {"r1", "r2", "r3"}


def test_publish_release_shows_the_release_in_the_views_only_once_scores_json_is_written(tmp_path, monkeypatch):
    suite = make_suite(10)
    episodes = model_episodes(suite, "local/a")
    lineage, _ = release_tables("p1")
    seen_when_writing_scores: list[set[str]] = []
    write_scores = ReleaseStore.write_scores

    def spying(self, document, **options):  # what a reader of the views sees at the moment scores.json is written
        seen_when_writing_scores.append(listed(Warehouse(tmp_path)))
        return write_scores(self, document, **options)

    monkeypatch.setattr(ReleaseStore, "write_scores", spying)
    publish_release(tmp_path, suite, lineage, "release", episodes, votes_for(episodes), promote=False)
    assert seen_when_writing_scores == [set()]
    assert ReleaseStore(tmp_path).has_scores("p1") and listed(Warehouse(tmp_path)) == {"p1"}
