"""The parameters of a judge call: one rule for what a poll sends, shared by the polls and the preflight.

- **Temperature**: ``judge.model.params.temperature`` when it is configured (``null`` = send none), else
  ``judge.temperature``; the configured one is never overridden.
- **Parameters a model does not take** are handled by LiteLLM, by one rule: every judge call passes
  ``drop_params=True``, so LiteLLM's supported-parameters check drops what the provider does not take
  (``temperature`` other than 1 for OpenAI's reasoning models: ``o3-mini``, ``gpt-5-mini``). A temperature the
  user *configured* is honoured or refused, never dropped in silence: :func:`refused_temperature` asks the
  same check (``litellm.utils.get_optional_params`` without ``drop_params``) and gives one message when the
  model does not take it.
- ``seed`` only where LiteLLM lists it among the model's parameters; ``response_format`` where the model takes
  a JSON schema (:func:`.parse.response_format_for`); LiteLLM's cache is bypassed (``NO_CACHE``).

The preflight (:mod:`.preflight`) sends exactly :func:`poll_params`, so a provider that refuses a poll's
parameters fails the preflight, not every vote.
"""

from __future__ import annotations

from typing import Any

from toolchoice_pipeline.execution.llm import takes_seed  # noqa: F401 - re-exported: the one rule for agents and judge
from toolchoice_pipeline.suites.config import JudgeConfig

NO_CACHE = {"no-cache": True, "no-store": True}


def judge_temperature(judge: JudgeConfig) -> float | None:
    """The temperature a poll sends: the configured ``judge.model.params.temperature``, else ``judge.temperature``."""
    if "temperature" in judge.model.params:
        value = judge.model.params["temperature"]
        return None if value is None else float(value)
    return judge.temperature


def poll_params(judge: JudgeConfig, *, seed: int | None, response_format: dict[str, Any] | None) -> dict[str, Any]:
    """The keyword arguments of one judge poll (beyond the model's own ``params``): see the module docstring."""
    # temperature None sends none (it also overrides a configured null in the model's params)
    params: dict[str, Any] = {"drop_params": True, "cache": dict(NO_CACHE), "temperature": judge_temperature(judge)}
    if seed is not None:
        params["seed"] = seed
    if response_format is not None:
        params["response_format"] = response_format
    return params


def refused_temperature(judge: JudgeConfig) -> str | None:
    """Why the judge model does not take the temperature configured in ``judge.model.params`` (LiteLLM's
    supported-parameters check), as one message naming the model; None when it does or none is configured."""
    temperature = judge.model.params.get("temperature")
    from toolchoice_pipeline.providers.direct import is_direct

    if temperature is None or is_direct(judge.model.model):  # LiteLLM refuses no temperature for ours
        return None
    import litellm
    from litellm.utils import get_optional_params

    model = judge.model.model
    try:
        name, provider, _, _ = litellm.get_llm_provider(model)
        get_optional_params(model=name, custom_llm_provider=provider, temperature=float(temperature), drop_params=False)
    except litellm.UnsupportedParamsError as exc:
        first = str(exc).replace("litellm.UnsupportedParamsError: ", "").split(". ")[0]
        return (
            f"{model} does not take the configured judge.model.params.temperature={temperature} ({first}); "
            "remove it, or set it to a value the model takes"
        )
    except Exception:  # noqa: BLE001 - a provider LiteLLM cannot map: the preflight call will tell
        return None
    return None
