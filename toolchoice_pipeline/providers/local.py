"""LiteLLM's custom handler for ``local/...``: deterministic in-process baselines (agents and the offline judge).

A local model is a function ``(messages, tools, params) -> assistant message`` in OpenAI chat format, where
``tools`` is the OpenAI ``tools`` list the caller passed and ``params`` the remaining call parameters
(``temperature``, ``seed``, ``response_format``...). Agents live in :mod:`.local_agents`, the judge in
:mod:`.local_judge`; both register by name in their module's ``MODELS`` dict. ``toolchoice run`` calls them
directly (:mod:`.direct`, issue 27); this handler stays registered for ``litellm.acompletion(model="local/...")``
and gives the same reply and errors.
"""

from __future__ import annotations

import time

from litellm import CustomLLM

from toolchoice_pipeline.providers.direct import local_answer
from toolchoice_pipeline.providers.response import fill_response


class LocalProvider(CustomLLM):
    """LiteLLM custom handler for ``local/<name>``: dispatches to the named in-process model."""

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
        *args,
        **kwargs,
    ):
        started = time.perf_counter()
        params = dict(optional_params)
        tools = params.pop("tools", None) or []
        message = local_answer(model, messages, tools, params)
        return fill_response(model_response, message, model=f"local/{model}", prompt=[messages, tools], started=started)

    async def acompletion(self, *args, **kwargs):
        return self.completion(*args, **kwargs)
