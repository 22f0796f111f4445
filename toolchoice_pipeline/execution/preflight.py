"""Preflight: is each model usable, before any task is spent on it? (DESIGN §5; issue "faults kept apart").

Two parts, each giving ``None`` (usable) or one clear message naming the model:

- :func:`static_problem`, with no network and no provider call: an in-process model is checked where it lives
  (``local/<name>`` must exist, ``replay/<path>`` must load, ``sim/<name>`` settings must parse,
  ``needle/<name>`` must have its package, engine and weights installed, any other in-process provider must be
  registered); a remote model must have a provider LiteLLM knows
  (``litellm.get_llm_provider``) and its API key in the environment (``litellm.validate_environment``).
  A replay file that does not load is bad input: :class:`~toolchoice_pipeline.util.errors.InputError` is raised,
  naming file, line and field. With a budget set (``budget_usd``), an unpriced model is refused too
  (:func:`unpriced_under_budget`): its calls would count 0 USD and the budget would never stop it.
- :func:`check_by_call`, for remote models: one tiny call (``max_tokens=8``) with the run's retries. A refused
  call becomes "authentication failed", "model not found" or "unknown provider". LiteLLM reports a misspelt
  model name as an authentication error; when the name is also missing from LiteLLM's model list
  (``litellm.model_cost``) the message says "model not found" and suggests the closest known names.

The runner calls the static part before the run and the call lazily, before a model's first cache miss, so
a run served entirely from the journal makes no provider call at all. Keys are never read into messages:
only the *names* of missing environment variables are reported.
"""

from __future__ import annotations

import difflib
import hashlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolchoice_pipeline.execution.failures import SECRET_VARIABLE, describe_failure, is_unknown_provider, redact
from toolchoice_pipeline.execution.local_server import is_loopback
from toolchoice_pipeline.execution.offline import is_local_model
from toolchoice_pipeline.execution.rate_limits import CallRateLimit
from toolchoice_pipeline.suites.config import ModelSpec, RetryConfig

if TYPE_CHECKING:
    from toolchoice_pipeline.execution.llm import Completion

PREFLIGHT_MESSAGES = [{"role": "user", "content": "Reply with the word OK."}]


def provider_of(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else ""


def resolve_model(model: str, data_dir: Path) -> str:
    """The model string handed to LiteLLM: ``replay/<relative path>`` becomes ``replay/<absolute path>``
    (``replay//abs/...``) resolved against ``data_dir``; everything else is unchanged."""
    if provider_of(model) == "replay":
        path = Path(model.split("/", 1)[1])
        if not path.is_absolute():
            return f"replay/{(data_dir / path).resolve()}"
    return model


def replay_file(model: str, data_dir: Path) -> Path:
    return Path(resolve_model(model, data_dir).split("/", 1)[1])


def model_fingerprint(model: str, data_dir: Path) -> str | None:
    """What answers behind one of our model strings, hashed (12 hex), for the journal key: a replay file's
    bytes, or the source file of a local agent or of the sim provider. None for remote models (the model
    string and parameters identify them) and for providers we do not own."""
    provider = provider_of(model)
    if provider == "replay":
        path = replay_file(model, data_dir)
        return _file_hash(path) if path.is_file() else None
    if provider == "local":
        from toolchoice_pipeline.providers.direct import local_models

        function = local_models().get(model.split("/", 1)[1])
        module = sys.modules.get(getattr(function, "__module__", ""), None)
        source = getattr(module, "__file__", None)
        return _file_hash(Path(source)) if source else None
    if provider == "sim":
        from toolchoice_pipeline.providers import sim

        return _file_hash(Path(sim.__file__))
    if provider == "needle":
        from toolchoice_pipeline.providers import needle

        return hashlib.sha256(f"{_file_hash(Path(needle.__file__))}:{needle.package_version()}".encode()).hexdigest()[
            :12
        ]
    return None


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def known_to_litellm(model: str) -> bool:
    """True when LiteLLM's model list (``litellm.model_cost``) has this model under any of its spellings."""
    import litellm

    try:
        name, provider, _, _ = litellm.get_llm_provider(model)
    except Exception:
        return False
    return any(key in litellm.model_cost for key in (model, name, f"{provider}/{name}"))


def close_matches(model: str) -> list[str]:
    """Up to three model names LiteLLM knows for the same provider that look like ``model``."""
    import litellm

    try:
        name, provider, _, _ = litellm.get_llm_provider(model)
    except Exception:
        return []
    names = {
        key.split("/", 1)[1] if key.startswith(f"{provider}/") else key
        for key, info in litellm.model_cost.items()
        if info.get("litellm_provider") == provider
    }
    return [f"{provider}/{n}" for n in difflib.get_close_matches(name, sorted(names), n=3, cutoff=0.75)]


def _in_process_problem(spec: ModelSpec, data_dir: Path) -> str | None:
    model = spec.model
    provider = provider_of(model)
    name = model.split("/", 1)[1] if "/" in model else ""
    if provider == "local":
        from toolchoice_pipeline.providers.direct import local_models

        known = local_models()
        if name not in known:
            listed = ", ".join(f"local/{n}" for n in sorted(known)) or "none"
            return f"{model}: unknown local model (known: {listed})"
        return None
    if provider == "replay":
        from toolchoice_pipeline.suites.replay_file import load_replay

        load_replay(replay_file(model, data_dir))  # raises InputError naming file, line and field
        return None
    if provider == "sim":
        from toolchoice_pipeline.providers.sim import SimSettings

        try:
            SimSettings.from_params(spec.params)
        except ValueError as exc:
            return f"{model}: bad sim settings: {exc}"
        return None
    if provider == "needle":
        from toolchoice_pipeline.providers.needle import model_problem

        return model_problem(model, spec.params)
    import litellm

    if provider not in litellm._custom_providers:
        return f"{model}: unknown provider '{provider}': no in-process provider of that name is registered"
    return None


def static_problem(spec: ModelSpec, data_dir: Path) -> str | None:
    """The preflight checks that need no provider call (see the module docstring); None when all pass.

    Raises :class:`~toolchoice_pipeline.util.errors.InputError` for a replay file that does not load.
    """
    if is_local_model(spec.model):
        return _in_process_problem(spec, data_dir)
    import litellm

    api_base = spec.params.get("api_base")
    try:
        litellm.get_llm_provider(spec.model, api_base=api_base)
    except Exception as exc:
        if is_unknown_provider(exc) or isinstance(exc, litellm.BadRequestError):
            return (
                f"{spec.model}: unknown provider: LiteLLM cannot tell which provider serves this model "
                f"string; write it as <provider>/<model>, e.g. openai/gpt-4o-mini"
            )
        return describe_failure(spec.model, exc)
    try:
        environment = litellm.validate_environment(spec.model, api_base=api_base)
    except Exception:  # LiteLLM cannot check this provider's environment: the preflight call will tell
        return None
    missing = [var for var in environment.get("missing_keys") or [] if SECRET_VARIABLE.search(var)]
    if missing and is_loopback(api_base):
        return None  # a server on this machine needs no key (.local_server: a placeholder goes with the call)
    if missing:
        return (
            f"{spec.model}: no API key: set {' or '.join(missing)} in the environment "
            f"(keys are read from the environment only, never from files)"
        )
    return None


def unpriced_under_budget(
    spec: ModelSpec, budget_usd: float | None, *, budget_field: str = "budget_usd", price_field: str = "models[].price"
) -> str | None:
    """Why a budget cannot work for ``spec``: ``budget_usd`` is set (the setting ``budget_field``) but the model
    has no known price (no ``price:``, missing from LiteLLM's pricing table: :func:`~.llm.is_priced`), so its
    calls would count 0.0 USD and the budget would never stop them. None when there is no budget or the model is
    priced (built-in ``local/...`` models are free). The message names the model and the setting to add
    (``price_field``)."""
    from toolchoice_pipeline.execution.llm import is_priced

    if budget_usd is None or is_priced(spec):
        return None
    return (
        f"{spec.model}: unpriced (not in LiteLLM's pricing table), so {budget_field}={budget_usd} could never "
        f"stop it: give the model a price ({price_field}: {{input_usd_per_mtok: ..., output_usd_per_mtok: ...}}) "
        "or remove the budget"
    )


async def check_by_call(
    spec: ModelSpec, *, retries: RetryConfig, rate_limit: CallRateLimit | None = None, **params: Any
) -> str | None:
    """One tiny call to a model through the usual call wrapper; None when it answers.

    ``params`` are the call's parameters (``max_tokens=8`` when none are given); the judge preflight passes
    exactly what a poll sends. ``rate_limit``: the model's rate limits, which this call counts against too."""
    problem, _ = await call_check(spec, retries=retries, rate_limit=rate_limit, **params)
    return problem


async def call_check(
    spec: ModelSpec, *, retries: RetryConfig, rate_limit: CallRateLimit | None = None, **params: Any
) -> tuple[str | None, Completion | None]:
    """:func:`check_by_call` that also returns the call's :class:`~.llm.Completion` (its tokens and cost), so a
    caller under a budget can count the check's own call; ``(message, None)`` when it failed."""
    from toolchoice_pipeline.execution.llm import complete

    try:
        completion = await complete(
            spec, PREFLIGHT_MESSAGES, retries=retries, rate_limit=rate_limit, **(params or {"max_tokens": 8})
        )
    except Exception as exc:
        known = known_to_litellm(spec.model)
        message = describe_failure(spec.model, exc, known_model=known)
        if not known and ("model not found" in message):
            suggestions = close_matches(spec.model)
            if suggestions:
                message += f" (did you mean {' or '.join(suggestions)}?)"
        return redact(message), None
    return None, completion


async def preflight(models: list[ModelSpec], *, data_dir: Path, retries: RetryConfig) -> dict[str, str | None]:
    """``{model: None | message}`` for every model: the static checks, then a call for each remote model that
    passed them. Raises :class:`~toolchoice_pipeline.util.errors.InputError` for a replay file that does not load."""
    from toolchoice_pipeline.providers import register_providers_for

    register_providers_for(spec.model for spec in models)
    results: dict[str, str | None] = {}
    for spec in models:
        problem = static_problem(spec, data_dir)
        if problem is None and not is_local_model(spec.model):
            problem = await check_by_call(spec, retries=retries)
        results[spec.model] = problem
    return results
