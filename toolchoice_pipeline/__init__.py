"""toolchoice-pipeline: evaluate how well LLM agents choose their tools, and gate each release on it."""

__version__ = "0.1.0"
