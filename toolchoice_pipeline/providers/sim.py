"""Placeholder: the sim provider (execution issue)."""
from litellm import CustomLLM


class SimProvider(CustomLLM):
    pass
