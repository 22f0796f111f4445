"""Offline by default: ``LITELLM_OFFLINE_MODE=true`` unless a remote model is configured, and LiteLLM's bundled
price table always (unless the user chose otherwise).

LiteLLM reads both variables at import time (its pricing map and other fetched data), so
:func:`ensure_offline_default` and :func:`use_bundled_price_table` must run before ``import litellm``; the package
calls the latter when it is imported. Our own providers never need the network, and a remote provider needs only
its own address: without ``LITELLM_LOCAL_MODEL_COST_MAP`` LiteLLM would fetch its price table from GitHub at every
start (three attempts and four warnings, 0.4 s to 5.5 s lost, when that address is unreachable).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

LOCAL_PROVIDERS = ("local", "replay", "sim", "scripted", "needle")


def is_local_model(model: str) -> bool:
    """True for models served in-process (``local/``, ``replay/``, ``sim/``, ``scripted/``, ``needle/``)."""
    return model.split("/", 1)[0] in LOCAL_PROVIDERS


def use_bundled_price_table() -> None:
    """Set ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (LiteLLM's price table as installed with it) unless the user set
    it; ``LITELLM_LOCAL_MODEL_COST_MAP=False`` makes LiteLLM fetch the latest table at start instead. Refresh the
    bundled table with ``pip install -U litellm``; a model's ``price:`` in ``toolchoice.yaml`` overrides both."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def ensure_offline_default(models: Iterable[str] = ()) -> None:
    """Set ``LITELLM_OFFLINE_MODE=true`` unless the user set it, or a configured model is remote."""
    if "LITELLM_OFFLINE_MODE" in os.environ:
        return
    if all(is_local_model(m) for m in models):
        os.environ["LITELLM_OFFLINE_MODE"] = "true"
    use_bundled_price_table()
