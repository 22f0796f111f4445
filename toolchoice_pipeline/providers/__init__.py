"""LiteLLM custom providers, registered in-process (``local/`` and ``replay/`` are also called without LiteLLM:
:mod:`.direct`, issue 27).

- ``local/<name>``: deterministic baseline agents and the offline judge (:mod:`.local`);
- ``replay/<path>``: recorded outputs, one line per task (:mod:`.replay`);
- ``sim/<name>``: simulated latency and errors, for benchmarks (:mod:`.sim`);
- ``needle/<name>``: Needle 3, a real on-device tool-calling model, with the ``needle`` extra (:mod:`.needle`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from litellm.llms.custom_llm import CustomLLM


def register_providers_for(models: Iterable[str]) -> None:
    """:func:`register_providers` unless every one of ``models`` is called directly (:func:`.direct.is_direct`):
    a run whose agents and judge are all ``local/`` or ``replay/`` models never imports LiteLLM (issue 27)."""
    from toolchoice_pipeline.providers.direct import is_direct

    if not all(is_direct(model) for model in models):
        register_providers()


def register_providers(extra: dict[str, CustomLLM] | None = None) -> None:
    """Register our providers in ``litellm.custom_provider_map`` (idempotent).

    ``extra`` maps further provider names to ``CustomLLM`` handlers (tests register scripted judges this way).
    """
    import litellm  # here, not at the top: ``toolchoice validate`` reads the local model names without LiteLLM

    from toolchoice_pipeline.providers.local import LocalProvider
    from toolchoice_pipeline.providers.needle import NeedleProvider
    from toolchoice_pipeline.providers.replay import ReplayProvider
    from toolchoice_pipeline.providers.sim import SimProvider

    handlers: dict[str, CustomLLM] = {
        "local": LocalProvider(),
        "replay": ReplayProvider(),
        "sim": SimProvider(),
        "needle": NeedleProvider(),
    }
    handlers.update(extra or {})
    kept = [item for item in litellm.custom_provider_map if item["provider"] not in handlers]
    litellm.custom_provider_map = kept + [
        {"provider": name, "custom_handler": handler} for name, handler in handlers.items()
    ]
    litellm.suppress_debug_info = True
    litellm.utils.custom_llm_setup()
    from toolchoice_pipeline.providers.direct import local_models

    register_free_models(f"local/{name}" for name in local_models())


_FREE = {
    "input_cost_per_token": 0.0,
    "output_cost_per_token": 0.0,
    "cache_creation_input_token_cost": 0.0,
    "cache_read_input_token_cost": 0.0,
    "litellm_provider": "local",
    "mode": "chat",
}


def register_free_models(models: Iterable[str]) -> None:
    """Put in-process model strings (``local/<name>``, ``sim/<name>``, ``replay/<path>``: free by definition) in
    LiteLLM's price table at 0 USD. Their responses already carry ``response_cost`` 0.0, but LiteLLM still looks
    each call's model up to explain a zero cost; for a model missing from the table that lookup tries every
    fallback (13-14% of a ``sim/`` call's profiled time, ``benchmarks/run/sim_pricing.py``). ``register_providers`` registers the built-in ``local/``
    models; the runner registers the ``sim/`` and ``replay/`` models it calls."""
    import litellm

    missing = {
        model: dict(_FREE, litellm_provider=model.split("/", 1)[0])
        for model in models
        if model not in litellm.model_cost
    }
    if missing:
        litellm.register_model(missing)
