"""LiteLLM custom providers, registered in-process: the one way in for every model call stays LiteLLM.

- ``local/<name>``: deterministic baseline agents and the offline judge (:mod:`.local`);
- ``replay/<path>``: recorded outputs, one line per task (:mod:`.replay`);
- ``sim/<name>``: simulated latency and errors, for benchmarks (:mod:`.sim`).
"""

from __future__ import annotations

import litellm


def register_providers(extra: dict[str, object] | None = None) -> None:
    """Register our providers in ``litellm.custom_provider_map`` (idempotent).

    ``extra`` maps further provider names to ``CustomLLM`` handlers (tests register scripted judges this way).
    """
    from toolchoice_pipeline.providers.local import LocalProvider
    from toolchoice_pipeline.providers.replay import ReplayProvider
    from toolchoice_pipeline.providers.sim import SimProvider

    handlers: dict[str, object] = {"local": LocalProvider(), "replay": ReplayProvider(), "sim": SimProvider()}
    handlers.update(extra or {})
    kept = [item for item in litellm.custom_provider_map if item["provider"] not in handlers]
    litellm.custom_provider_map = kept + [
        {"provider": name, "custom_handler": handler} for name, handler in handlers.items()
    ]
    litellm.suppress_debug_info = True
    litellm.utils.custom_llm_setup()
    _register_free_models()


_FREE = {
    "input_cost_per_token": 0.0,
    "output_cost_per_token": 0.0,
    "cache_creation_input_token_cost": 0.0,
    "cache_read_input_token_cost": 0.0,
    "litellm_provider": "local",
    "mode": "chat",
}


def _register_free_models() -> None:
    """Put the built-in ``local/<name>`` models in LiteLLM's price table at 0 USD. Their responses already carry
    ``response_cost`` 0.0, but LiteLLM still looks a model up to explain a zero cost; for a model missing from
    the table that lookup tries every fallback, about half of what pricing the call cost."""
    from toolchoice_pipeline.providers.local import local_models

    missing = {f"local/{name}": dict(_FREE) for name in local_models() if f"local/{name}" not in litellm.model_cost}
    if missing:
        litellm.register_model(missing)
