"""The ``local/...`` provider: deterministic in-process baselines (agents and the offline judge).

A local model is a function ``(messages, tools, params) -> assistant message`` in OpenAI chat format, where
``tools`` is the OpenAI ``tools`` list the caller passed and ``params`` the remaining call parameters
(``temperature``, ``seed``, ``response_format``...). Agents live in :mod:`.local_agents`, the judge in
:mod:`.local_judge`; both register by name in their module's ``MODELS`` dict.
"""

from __future__ import annotations

import time

from litellm import CustomLLM
from litellm.llms.custom_llm import CustomLLMError

from toolchoice_pipeline.providers.local_agents import MODELS as AGENTS
from toolchoice_pipeline.providers.local_judge import MODELS as JUDGES
from toolchoice_pipeline.providers.local_model import LocalModel
from toolchoice_pipeline.providers.response import fill_response


def local_models() -> dict[str, LocalModel]:
    """Every ``local/<name>`` model by name."""
    return {**AGENTS, **JUDGES}


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
        models = local_models()
        if model not in models:
            raise CustomLLMError(
                404,
                f"unknown local model 'local/{model}' (known: {', '.join('local/' + name for name in sorted(models))})",
            )
        params = dict(optional_params)
        tools = params.pop("tools", None) or []
        message = models[model](messages, tools, params)
        return fill_response(model_response, message, model=f"local/{model}", prompt=[messages, tools], started=started)

    async def acompletion(self, *args, **kwargs):
        return self.completion(*args, **kwargs)
