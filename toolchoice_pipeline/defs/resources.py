"""Resources: where the project's data lives, and how progress is reported while a release runs."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from toolchoice_pipeline.releases.object_store import warehouse_url
from toolchoice_pipeline.util.collector import collector_for_batch

DEFAULT_DATA_DIR = os.environ.get("TOOLCHOICE_DATA_DIR", "data")

Progress = Callable[[str, int, int], None]


class ToolchoiceResource(dg.ConfigurableResource):
    """The project's data directory (suites, run configuration, releases, warehouse)."""

    data_dir: str = DEFAULT_DATA_DIR
    #: The catalog_change sensor runs a catalog version a finished release already evaluated (default: records it).
    rerun_evaluated_catalogs: bool = os.environ.get("TOOLCHOICE_RERUN_EVALUATED_CATALOGS", "") in ("1", "true")

    @property
    def path(self) -> Path:
        return Path(self.data_dir)

    @contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator[ToolchoiceResource]:
        """While a run (or, under the multiprocess executor, a step) uses the data directory, Python's collector
        is set for a batch (:func:`~toolchoice_pipeline.util.collector.collector_for_batch`)."""
        with collector_for_batch():
            yield self


class ProgressReporter:
    """Receives ``(stage, model, done, total)`` as episodes and judge polls finish.

    The CLI passes one that drives its progress bar; in ``dagster dev`` runs the default does nothing and the
    assets log progress through Dagster's logger instead.
    """

    def __call__(self, stage: str, model: str, done: int, total: int) -> None:  # pragma: no cover - default no-op
        return None

    def failed(self, stage: str, model: str, cause: str) -> None:  # pragma: no cover - default no-op
        """``model`` could not be used in ``stage`` (its preflight failed, or it stopped answering): ``cause``."""
        return None


def logged_progress(
    context: dg.AssetExecutionContext | dg.OpExecutionContext, reporter: ProgressReporter, stage: str
) -> Progress:
    """A progress callback that feeds ``reporter`` and logs each model's progress at every 25%."""
    last_quarter: dict[str, int] = {}

    def report(model: str, done: int, total: int) -> None:
        reporter(stage, model, done, total)
        quarter = (4 * done) // max(total, 1)
        if quarter > last_quarter.get(model, 0):
            last_quarter[model] = quarter
            context.log.info(f"{stage}: {model} {done}/{total}")

    return report


def step_outputs_io_manager(data_dir: str) -> dict[str, dg.FilesystemIOManager]:
    """Where Dagster keeps the ops' own outputs between steps (the shard descriptors): under
    ``<warehouse url>/_staging/_step_outputs`` when the warehouse is on an object store, so a step on another
    machine reads what the step before it returned (Dagster's ``FilesystemIOManager`` writes through UPath);
    else Dagster's default, the instance's storage directory."""
    url = warehouse_url(Path(data_dir))
    if url is None:
        return {}
    return {"io_manager": dg.FilesystemIOManager(base_dir=f"{url.rstrip('/')}/_staging/_step_outputs")}
