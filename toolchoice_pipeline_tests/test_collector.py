"""The garbage-collector settings of a batch run (``util/collector.py``): applied inside the block, the objects
alive at its start frozen, and everything as before once it ends, also when the block raises; a run's steps
get them through the ``toolchoice`` resource; the program freezes everything before it exits, a caller of
``main(argv)`` that goes on does not."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref

import dagster as dg
import pytest

from toolchoice_pipeline.defs.resources import ToolchoiceResource
from toolchoice_pipeline.util.collector import BATCH_THRESHOLDS, collector_for_batch


class Node:
    def __init__(self):
        self.me = self  # a reference cycle: only the collector frees it


def test_inside_the_block_the_batch_thresholds_apply_and_the_older_objects_are_frozen():
    before = gc.get_threshold()
    with collector_for_batch():
        assert gc.get_threshold() == BATCH_THRESHOLDS
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_the_settings_are_restored_when_the_block_raises():
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), collector_for_batch():
        raise RuntimeError("a failed run")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_a_cycle_dropped_inside_the_block_is_still_collected():
    with collector_for_batch():
        node = Node()
        alive = weakref.ref(node)
        del node
        gc.collect()
        assert alive() is None


def test_a_frozen_cycle_is_collected_once_the_block_ends():
    node = Node()
    alive = weakref.ref(node)
    with collector_for_batch():
        del node
        gc.collect()
        assert alive() is not None  # frozen with everything alive when the block began
    gc.collect()
    assert alive() is None


def test_a_step_using_the_data_directory_runs_under_the_batch_settings(tmp_path):
    @dg.asset
    def probe(toolchoice: ToolchoiceResource):
        return gc.get_threshold(), gc.get_freeze_count()

    before = gc.get_threshold()
    result = dg.materialize([probe], resources={"toolchoice": ToolchoiceResource(data_dir=str(tmp_path))})
    thresholds, frozen = result.output_for_node("probe")
    assert thresholds == BATCH_THRESHOLDS and frozen > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_the_command_line_runs_under_the_batch_thresholds():
    from toolchoice_pipeline.cli import main

    before = gc.get_threshold()
    try:
        with pytest.raises(SystemExit) as done:
            main(["--help"])
        assert done.value.code == 0
        assert gc.get_threshold() == BATCH_THRESHOLDS
        assert gc.get_freeze_count() == 0  # the caller goes on: nothing frozen for good
    finally:
        gc.set_threshold(*before)


@pytest.mark.parametrize(("args", "exit_code"), [(["--help"], 0), (["validate", "--suite", "absent"], 2)])
def test_the_program_freezes_its_objects_before_exit_and_keeps_its_exit_code_and_handlers(tmp_path, args, exit_code):
    seen = tmp_path / "at_exit.txt"
    program = (
        "import atexit, gc\n"
        f"atexit.register(lambda: open({str(seen)!r}, 'w').write(str(gc.get_freeze_count())))\n"
        "from toolchoice_pipeline.cli import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, *args, *(["--data-dir", str(tmp_path)] if args[0] == "validate" else [])],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "LITELLM_OFFLINE_MODE": "true"},
    )
    assert done.returncode == exit_code, done.stderr
    assert ("Usage" in done.stdout) if exit_code == 0 else ("error:" in done.stderr)
    assert int(seen.read_text()) > 0  # the exit handler ran, after the command froze what was alive
