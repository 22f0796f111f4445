"""One ``toolchoice run`` of the demo reads each input once and converts each record to Arrow once (issue 26,
"the stages hand data"): the run configuration ``toolchoice.yaml``, every file of the suite, the canary session,
its labels and its catalog are each read once; the release's ``scores.json`` and ``gate.md`` are written and never read back
(the gate and calibration checks, ``baseline`` and the CLI take the ``release_scores`` output); every episode and
vote is converted to Arrow once, where it is scored (the warehouse commits those tables as written).

Real parts: the CLI command in this process (so the file opens can be counted), the demo suite and its local
agents and judge through LiteLLM, the Dagster instance of the data directory, Parquet + DuckDB. Nothing is
replaced: ``open`` and the two table builders are wrapped only to count what they open and convert. The demo is
trimmed to 8 tasks (every file of the suite is still read, and its 16 episodes and their votes still converted).
"""

from __future__ import annotations

import builtins
import io
import json
from collections import Counter
from pathlib import Path

import pytest

from toolchoice_pipeline_tests.pipeline_helpers import DEMO_SUITE, copy_data, query, trim_tasks

pytestmark = pytest.mark.slow


def _counting_opens(monkeypatch: pytest.MonkeyPatch) -> Counter[Path]:
    """Wrap ``open`` (``builtins.open`` and ``io.open``, which ``pathlib`` calls) so that every open of a file for
    reading is counted by its resolved path. The files are opened and read as before."""
    opened: Counter[Path] = Counter()
    real_open = io.open

    def counting_open(file, mode="r", *args, **kwargs):
        if isinstance(file, str | Path) and not any(flag in mode for flag in "wax+"):
            opened[Path(file).resolve()] += 1
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(io, "open", counting_open)
    return opened


def _counting_conversions(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Wrap the builders of the ``agent_calls`` and ``judge_votes`` tables so that the episodes and votes they
    convert to Arrow are counted as they are read; the tables are built as before."""
    from toolchoice_pipeline.releases import release_tables, warehouse_tables

    converted: Counter[str] = Counter()

    def counted(records, what: str):
        for record in records:
            converted[what] += 1
            yield record

    def wrap(builder, what: str):
        return lambda records, *args, **kwargs: builder(counted(records, what), *args, **kwargs)

    for module in (release_tables, warehouse_tables):
        monkeypatch.setattr(module, "agent_calls_table", wrap(warehouse_tables.agent_calls_table, "episodes"))
        monkeypatch.setattr(module, "judge_votes_table", wrap(warehouse_tables.judge_votes_table, "votes"))
    return converted


def _canary_files() -> dict[str, Path]:
    from toolchoice_pipeline.ingest.canary import CANARY_CATALOG, CANARY_LABELS, CANARY_SESSION, canary_source

    source = canary_source(Path("/nonexistent-data-dir"))  # the packaged canary (the demo has none of its own)
    return {f"canary/{name}": (source / name).resolve() for name in (CANARY_SESSION, CANARY_CATALOG, CANARY_LABELS)}


def _counted_run(data_dir: Path, release: str) -> tuple[int, Counter[Path], Counter[str]]:
    """``toolchoice run --release <release> --kind release`` of the demo in this process: its exit code, the file
    opens for reading by path and the records converted to Arrow."""
    from toolchoice_pipeline.cli import cli
    from toolchoice_pipeline.cli.common import run_guarded

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DAGSTER_HOME", str(data_dir / "dagster_home"))  # set by the run; restored after it
        patch.setenv("TOOLCHOICE_DATA_DIR", str(data_dir))
        opened = _counting_opens(patch)
        converted = _counting_conversions(patch)
        code = run_guarded(cli, ["run", "--data-dir", str(data_dir), "--release", release, "--kind", "release"])
    return code, opened, converted


def _stored(data_dir: Path, release: str) -> dict[str, int]:
    """The release's episodes (one task score each) and judge votes in the warehouse."""
    return {
        "episodes": query(data_dir, "SELECT count(*) FROM task_scores WHERE release_id = ?", [release])[0][0],
        "votes": query(data_dir, "SELECT count(*) FROM judge_votes WHERE release_id = ?", [release])[0][0],
    }


def test_a_run_of_the_demo_reads_each_input_once_and_converts_each_record_once(tmp_path, monkeypatch):
    data_dir = copy_data(tmp_path / "data").resolve()
    trim_tasks(data_dir, 8)
    inputs = {
        path.relative_to(data_dir).as_posix(): path
        for path in [data_dir / "toolchoice.yaml", *sorted((data_dir / "suites" / DEMO_SUITE).iterdir())]
    }
    inputs.update(_canary_files())
    # Catalogs are kept per process while unchanged: the packaged canary's may be held from an earlier test of
    # this process; start with none held, so the first run's reads are this run's own.
    from toolchoice_pipeline.suites import catalog_files

    monkeypatch.setattr(catalog_files, "_LOADED", {})

    for release, baseline in (("r1", None), ("r2", "r1")):  # the first release, then one gated against it
        outputs = {name: data_dir / "releases" / release / name for name in ("scores.json", "gate.md")}
        code, opened, converted = _counted_run(data_dir, release)
        assert code == 0
        assert all(path.is_file() for path in outputs.values())
        reads = {name: opened[path] for name, path in inputs.items()}
        read_back = {name: opened[path] for name, path in outputs.items()}
        print(release, "reads per input:", reads, "outputs read back:", read_back)
        if baseline is None:
            assert reads == {name: 1 for name in inputs}
        else:  # the same process: catalogs are kept per process while unchanged (suites/catalog_files.py)
            assert all(count <= 1 for count in reads.values()) and reads["toolchoice.yaml"] == 1, reads
        assert read_back == {name: 0 for name in outputs}
        if baseline is not None:  # the baseline's document is an input of this run: read once
            assert json.loads(outputs["scores.json"].read_text(encoding="utf-8"))["baseline_release_id"] == baseline
            assert opened[data_dir / "releases" / baseline / "scores.json"] == 1
        # every episode and every vote converted to Arrow once: as many as the warehouse holds
        stored = _stored(data_dir, release)
        print(release, "converted to Arrow:", dict(converted), "stored:", stored)
        assert stored["episodes"] > 0 and stored["votes"] > 0
        assert dict(converted) == stored
