"""An ingested OTel suite through Dagster: the ``eval_tasks`` materialisation shows where each task's catalog
came from (``catalog_sources``), and the recorded choices are judged and scored."""

from __future__ import annotations

import pytest

from toolchoice_pipeline_tests.pipeline_helpers import copy_data, dagster_instance, materialise, materialised_assets, read_scores
from toolchoice_pipeline_tests.test_ingest import ingest
from toolchoice_pipeline_tests.test_ingest_otel_producers import OTEL, TOOLS_DUMP

pytestmark = pytest.mark.slow


def test_eval_tasks_metadata_counts_the_catalog_sources_of_an_ingested_trace(tmp_path, capsys):
    data_dir = copy_data(tmp_path / "data")
    traces = sorted((OTEL / "openai-v2-2.4b0").glob("*.jsonl"))
    code, _, err = ingest(capsys, "otel", traces, data_dir, "otel", "--catalog-dump", str(TOOLS_DUMP), catalog=None)
    assert code == 0, err
    replay = "replay/suites/otel/replay.jsonl"
    with dagster_instance(tmp_path / "dagster_home") as instance:
        result = materialise(data_dir, instance, "otel-1", kind="adhoc", suite="otel", models=[replay])
        meta = materialised_assets(result)["eval_tasks"].metadata
    assert meta["catalog_sources"].value == {"live-dump": 8}
    assert meta["tags"].value["otel"] == 8
    scores = read_scores(data_dir, "otel-1")["models"][replay]
    assert scores["n_tasks"] == 8 and scores["errors"] == 0 and scores["tsq_mean"] is not None
