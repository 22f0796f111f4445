"""The suite writer's check reads the written tasks back one at a time: its memory does not grow with them."""

import tracemalloc

from toolchoice_pipeline.ingest.writer import SuiteWriter
from toolchoice_pipeline.suites.catalog import ToolDefinition
from toolchoice_pipeline.suites.tasks import Expected, Task

CATALOG = [
    ToolDefinition(
        name="Read",
        description="Show one file.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}},
    )
]
PADDING = "x" * 20_000  # one long transcript turn per task, as ingested sessions have


def _commit_peak_bytes(tmp_path, n_tasks: int) -> int:
    """Peak bytes Python allocated while :meth:`SuiteWriter.commit` checked ``n_tasks`` written tasks."""
    with SuiteWriter(tmp_path / f"data-{n_tasks}", "memory") as writer:
        for i in range(n_tasks):
            task = Task(
                id=f"t{i}",
                messages=[{"role": "user", "content": f"{i} {PADDING}"}],
                expected=Expected(tool="Read", arguments={}),
            )
            writer.add(task, {"task_id": task.id, "message": {"role": "assistant", "content": "ok"}})
        tracemalloc.start()
        try:
            writer.commit(catalog=CATALOG, description="memory test", manifest={})
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()


def test_writer_check_memory_does_not_grow_with_tasks(tmp_path):
    small = _commit_peak_bytes(tmp_path, 40)
    large = _commit_peak_bytes(tmp_path, 400)
    # 10x the tasks (8 MB of transcript): holding them all would add ~8 MB and more; one at a time adds only ids.
    assert large - small < 2_000_000, (small, large)
