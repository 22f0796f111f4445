"""Multi-model execution through LiteLLM: the call wrapper (:mod:`.llm`), episodes (:mod:`.episode`), the
runner with its concurrency limits (:mod:`.runner`), the call journal and cache (:mod:`.journal`), preflight
(:mod:`.preflight`) and failure messages (:mod:`.failures`). See ``docs/execution.md``."""

from typing import TYPE_CHECKING

from toolchoice_pipeline.util.lazy import lazy_exports

if TYPE_CHECKING:
    from toolchoice_pipeline.execution.runner import run_suite, run_suite_sync

# ``preflight`` is not re-exported: the name is its module's (``execution.preflight.preflight``), and a lazy
# name cannot override a submodule the import system has set on the package.
# Re-exported on first use (util/lazy.py): importing one light module of the package imports nothing else.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "run_suite": ".runner",
        "run_suite_sync": ".runner",
    },
)

__all__ = ["run_suite", "run_suite_sync"]
