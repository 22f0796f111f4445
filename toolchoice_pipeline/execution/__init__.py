"""Multi-model execution through LiteLLM: one call wrapper (:mod:`.llm`), episodes, concurrency, cache."""
