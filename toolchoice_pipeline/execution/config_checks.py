"""The models and judge a suite would run with, checked as ``toolchoice run`` checks them, without a call.

Used by ``toolchoice validate`` (issue 29), so a misspelt model or a missing key is named with file and line
at once instead of by the run's preflight 25-30 s later. Returns ``(errors, warnings)`` as
:class:`~toolchoice_pipeline.util.errors.Problem` lists; each names ``toolchoice.yaml`` (or ``suite.yaml`` for
a model the suite lists) with the line and field.

- **The model** (each evaluated model, then the judge): ``local/<name>`` must be a built-in local model (read
  without importing LiteLLM, so an offline configuration validates fast); ``replay/``, ``sim/`` and remote models
  get the run's static preflight (:func:`~.preflight.static_problem`: a replay file that loads, sim settings
  that parse, a provider LiteLLM knows, with "did you mean" for a misspelt one, and its API key in the
  environment); with a budget (``budget_usd``, ``judge.budget_usd``), a model with no known price, which the
  budget could never stop (:func:`~.preflight.unpriced_under_budget`). All errors. A remote model name missing
  from LiteLLM's model list but close to one in it (``openai/gpt-4o-mnii``) is a warning with "did you mean".
- **``params`` keys**: for an in-process model (``local/``, ``replay/``, ``sim/``) the keys it reads
  (:data:`IN_PROCESS_PARAMS`, plus ``sim_*`` for ``sim/``): any other key is an error (it would do nothing). For a
  remote model, LiteLLM's own lists, imported lazily: a key the provider does not support among OpenAI's
  parameters (``litellm.get_supported_openai_params(model=..., custom_llm_provider=...)``) is an error, since
  LiteLLM refuses the request (a warning with ``drop_params: true``, which drops it); a key close to a known
  parameter (``temprature``) is an error with "did you mean"; any other unknown key is a warning (LiteLLM
  passes it to the provider as it is).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from toolchoice_pipeline.execution.offline import is_local_model
from toolchoice_pipeline.suites.config import CONFIG_FILE, ModelSpec, RunConfig
from toolchoice_pipeline.suites.model import SUITE_FILE, Suite
from toolchoice_pipeline.util.errors import InputError, Problem, display_path, field_path
from toolchoice_pipeline.util.yaml_lines import Lines, line_of, load_yaml

IN_PROCESS_PARAMS = frozenset(
    {
        "temperature",
        "top_p",
        "seed",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "n",
        "response_format",
        "tool_choice",
        "parallel_tool_calls",
        "timeout",
        "num_retries",
        "metadata",
    }
)
"""The call parameters our in-process providers take (the run's own and LiteLLM's common ones)."""
SIM_PARAMS = frozenset({"sim_latency_ms", "sim_error_rate", "sim_retry_after_s", "sim_flip_rate", "sim_seed"})


class _Where:
    """File and lines of the configuration and of ``suite.yaml``, read once, for naming a model's line."""

    def __init__(self, data_dir: Path, suite: Suite | None) -> None:
        self.config_path = data_dir / CONFIG_FILE
        self.config_file = display_path(self.config_path)
        self.config_lines: Lines = load_yaml(self.config_path)[1] if self.config_path.is_file() else {}
        self.suite_file = display_path(suite.directory / SUITE_FILE) if suite is not None else ""
        self.suite_lines: Lines = load_yaml(suite.directory / SUITE_FILE)[1] if suite is not None else {}

    def config(self, path: tuple, message: str) -> Problem:
        return Problem(
            file=self.config_file,
            line=line_of(self.config_lines, path) or None,
            field=field_path(path),
            message=message,
        )

    def suite(self, path: tuple, message: str) -> Problem:
        return Problem(
            file=self.suite_file, line=line_of(self.suite_lines, path), field=field_path(path), message=message
        )


def config_findings(config: RunConfig, suite: Suite | None, data_dir: Path) -> tuple[list[Problem], list[Problem]]:
    """``(errors, warnings)`` about the models ``suite`` runs with under ``config`` and the judge (module doc)."""
    where = _Where(data_dir, suite)
    errors: list[Problem] = []
    warnings: list[Problem] = []
    suite_models = (suite.spec.models if suite is not None else None) or []
    configured = {spec.model: index for index, spec in enumerate(config.models)}
    for spec in config.for_suite(None, suite_models).models:
        index = configured.get(spec.model)
        if spec.model in suite_models:
            name_at = partial(where.suite, ("models", suite_models.index(spec.model)))
        else:
            name_at = partial(where.config, ("models", index, "model"))
        budget = (config.budget_usd, "budget_usd", f"models[{index if index is not None else len(configured)}].price")
        params_at = partial(_params_at, where, ("models", index, "params"))
        _check_spec(spec, data_dir, name_at, params_at, errors, warnings, budget)
    judge = config.judge.model
    _check_spec(
        judge,
        data_dir,
        partial(where.config, ("judge", "model", "model")),
        partial(_params_at, where, ("judge", "model", "params")),
        errors,
        warnings,
        (config.judge.budget_usd, "judge.budget_usd", "judge.model.price"),
    )
    return errors, warnings


def _params_at(where: _Where, path: tuple, key: str, message: str) -> Problem:
    return where.config((*path, key), message)


def _check_spec(
    spec: ModelSpec,
    data_dir: Path,
    name_at: Callable[[str], Problem],
    params_at: Callable[[str, str], Problem],
    errors: list[Problem],
    warnings: list[Problem],
    budget: tuple[float | None, str, str] | None = None,
) -> None:
    problem = _model_problem(spec, data_dir, errors)
    if problem is None and budget is not None and budget[0] is not None:
        from toolchoice_pipeline.execution.preflight import unpriced_under_budget

        budget_usd, budget_field, price_field = budget
        problem = unpriced_under_budget(spec, budget_usd, budget_field=budget_field, price_field=price_field)
    if problem is not None:
        errors.append(name_at(problem))
        return
    misspelt = _unknown_model(spec)
    if misspelt is not None:
        warnings.append(name_at(misspelt))
    for key, message, error in _params_findings(spec):
        (errors if error else warnings).append(params_at(key, message))


def _model_problem(spec: ModelSpec, data_dir: Path, errors: list[Problem]) -> str | None:
    provider, _, name = spec.model.partition("/")
    if provider == "local":
        from toolchoice_pipeline.providers.local_agents import MODELS as AGENTS
        from toolchoice_pipeline.providers.local_judge import MODELS as JUDGES

        known = sorted({*AGENTS, *JUDGES})
        if name in known:
            return None
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"; did you mean 'local/{close[0]}'?" if close else ""
        return f"unknown local model '{spec.model}' (known: {', '.join('local/' + n for n in known)}){hint}"
    from toolchoice_pipeline.execution.preflight import static_problem
    from toolchoice_pipeline.providers import register_providers_for

    register_providers_for([spec.model])  # also keeps LiteLLM from printing its provider list on stdout
    try:
        problem = static_problem(spec, data_dir)
    except InputError as exc:  # a replay file that does not load: its own file, line and field
        errors.extend(exc.problems)
        return None
    if problem is not None and "unknown provider" in problem and not is_local_model(spec.model):
        problem += _provider_hint(provider)
    return problem


def _unknown_model(spec: ModelSpec) -> str | None:
    """A remote model missing from LiteLLM's model list that looks like one in it (a warning: a new or
    self-hosted model may be missing from the bundled list; the run's preflight call decides)."""
    if is_local_model(spec.model):
        return None
    from toolchoice_pipeline.execution.preflight import close_matches, known_to_litellm

    if known_to_litellm(spec.model):
        return None
    close = close_matches(spec.model)
    if not close:
        return None
    return (
        f"'{spec.model}' is not in LiteLLM's model list; did you mean {' or '.join(close)}? "
        "(the run's preflight call refuses a model the provider does not know)"
    )


def _provider_hint(provider: str) -> str:
    import litellm

    names = [getattr(known, "value", known) for known in litellm.provider_list]
    close = difflib.get_close_matches(provider, [str(name) for name in names], n=1, cutoff=0.7)
    return f" (did you mean the provider '{close[0]}'?)" if close and provider else ""


def _params_findings(spec: ModelSpec) -> list[tuple[str, str, bool]]:
    if not spec.params:
        return []
    provider = spec.model.split("/", 1)[0]
    if is_local_model(spec.model):
        known = IN_PROCESS_PARAMS | (SIM_PARAMS if provider == "sim" else frozenset())
        return [
            (
                key,
                f"'{key}' is not a parameter {provider}/ models take (they take: {', '.join(sorted(known))})"
                f"{_did_you_mean(key, known)}",
                True,
            )
            for key in spec.params
            if key not in known
        ]
    return _remote_params_findings(spec)


def _remote_params_findings(spec: ModelSpec) -> list[tuple[str, str, bool]]:
    import inspect

    import litellm
    from litellm.types.utils import all_litellm_params

    try:
        name, provider, _, _ = litellm.get_llm_provider(spec.model, api_base=spec.params.get("api_base"))
        supported = set(litellm.get_supported_openai_params(model=name, custom_llm_provider=provider) or [])
    except Exception:  # noqa: BLE001 - LiteLLM cannot tell: the preflight call will
        return []
    openai_params = set(litellm.OPENAI_CHAT_COMPLETION_PARAMS)
    own = (
        set(inspect.signature(litellm.completion).parameters) | set(all_litellm_params) | {"extra_body", "drop_params"}
    )
    own -= openai_params
    drop = spec.params.get("drop_params") is True
    findings: list[tuple[str, str, bool]] = []
    for key in spec.params:
        if key in supported or key in own:
            continue
        if key in openai_params:
            if drop:
                findings.append((key, f"'{key}' is not supported for {provider}: drop_params drops it", False))
            else:
                findings.append(
                    (
                        key,
                        f"LiteLLM refuses '{key}' for {provider} (not among its supported parameters: "
                        f"{', '.join(sorted(supported))}); remove it or set drop_params: true",
                        True,
                    )
                )
            continue
        hint = _did_you_mean(key, supported | openai_params | own)
        if hint:
            findings.append((key, f"unknown parameter '{key}' for {provider}{hint}", True))
        else:
            findings.append(
                (
                    key,
                    f"'{key}' is not a parameter LiteLLM knows for {provider}: it is passed to the provider as it is",
                    False,
                )
            )
    return findings


def _did_you_mean(key: str, known: Any) -> str:
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.8)
    return f"; did you mean '{close[0]}'?" if close else ""
