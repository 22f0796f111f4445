"""Placeholder: filled by its issue."""
MODELS: dict = {}
