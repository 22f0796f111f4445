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
