"""toolchoice-pipeline: evaluate how well LLM agents choose their tools, and gate each release on it."""

__version__ = "0.1.0"

from toolchoice_pipeline.execution.offline import use_bundled_price_table as _use_bundled_price_table

_use_bundled_price_table()  # before anything imports litellm (see offline.py)
