"""Multi-model execution through LiteLLM: the call wrapper (:mod:`.llm`), episodes (:mod:`.episode`), the
runner with its concurrency limits (:mod:`.runner`), the call journal and cache (:mod:`.journal`), preflight
(:mod:`.preflight`) and failure messages (:mod:`.failures`). See ``docs/execution.md``."""

from toolchoice_pipeline.execution.preflight import preflight
from toolchoice_pipeline.execution.runner import run_suite, run_suite_sync

__all__ = ["preflight", "run_suite", "run_suite_sync"]
