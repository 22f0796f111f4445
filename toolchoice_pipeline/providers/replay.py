"""Placeholder: the replay provider (execution issue)."""
from litellm import CustomLLM


class ReplayProvider(CustomLLM):
    pass
