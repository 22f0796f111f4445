"""LiteLLM's custom handler for ``replay/<path>`` (the model itself: :mod:`.replay_model`).

``toolchoice run`` calls replay models directly (:mod:`.direct`, issue 27); this handler stays registered for
``litellm.acompletion(model="replay/...")`` and gives the same reply and errors.
"""

from __future__ import annotations

import time

from litellm import CustomLLM

from toolchoice_pipeline.providers.replay_model import replay_answer
from toolchoice_pipeline.providers.response import fill_response


class ReplayProvider(CustomLLM):
    """LiteLLM custom handler for ``replay/<path>`` (registered by :func:`..register_providers`)."""

    def completion(
        self,
        model,
        messages,
        api_base,
        custom_prompt_dict,
        model_response,
        print_verbose,
        encoding,
        api_key,
        logging_obj,
        optional_params,
        acompletion=None,
        litellm_params=None,
        *args,
        **kwargs,
    ):
        started = time.perf_counter()
        message = replay_answer(model, (litellm_params or {}).get("metadata"))
        tools = optional_params.get("tools") or []
        return fill_response(
            model_response, message, model=f"replay/{model}", prompt=[messages, tools], started=started
        )

    async def acompletion(self, *args, **kwargs):
        return self.completion(*args, **kwargs)
