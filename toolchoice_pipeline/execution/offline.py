"""Offline by default: ``LITELLM_OFFLINE_MODE=true`` unless a remote model is configured.

LiteLLM reads the variable at import time (its pricing map and other fetched data), so
:func:`ensure_offline_default` must run before ``import litellm``. Our own providers never need the network.
"""

from __future__ import annotations

import os
from typing import Iterable

LOCAL_PROVIDERS = ("local", "replay", "sim", "scripted")


def is_local_model(model: str) -> bool:
    """True for models served in-process (``local/``, ``replay/``, ``sim/``, ``scripted/``)."""
    return model.split("/", 1)[0] in LOCAL_PROVIDERS


def ensure_offline_default(models: Iterable[str] = ()) -> None:
    """Set ``LITELLM_OFFLINE_MODE=true`` unless the user set it, or a configured model is remote."""
    if "LITELLM_OFFLINE_MODE" in os.environ:
        return
    if all(is_local_model(m) for m in models):
        os.environ["LITELLM_OFFLINE_MODE"] = "true"
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
