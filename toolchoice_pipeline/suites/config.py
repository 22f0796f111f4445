"""The run configuration, ``data/toolchoice.yaml``: models, judge, concurrency, rate limits, retries, steps, cache.

Model names are LiteLLM model strings (``openai/gpt-4o-mini``, ``anthropic/claude-...``,
``ollama_chat/llama3.1``) or our in-process providers (``local/...``, ``replay/<path>``, ``sim/...``).
API keys are never read from this file: LiteLLM takes them from the environment (``OPENAI_API_KEY``...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from toolchoice_pipeline.suites import read_once
from toolchoice_pipeline.util.confined_paths import confinement_problem
from toolchoice_pipeline.util.errors import InputError, Problem, display_path, field_path, validation_errors
from toolchoice_pipeline.util.identifiers import check_identifier
from toolchoice_pipeline.util.yaml_lines import line_of, load_yaml

CachePolicy = Literal["read_write", "write_only", "off"]
SECRET_ERROR = "secret_in_config"
MAX_REPEATS = 100
NoiseMode = Literal["report", "require"]
SECRET_PARAMS = {"api_key", "aws_secret_access_key", "aws_access_key_id", "azure_ad_token", "vertex_credentials"}


# Headers that carry credentials whatever their value looks like.
SECRET_HEADERS = {
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "cookie",
    "x-auth-token",
    "anthropic-api-key",
    "openai-api-key",
}


def secret_paths(params: Any, path: tuple = ()) -> list[tuple]:
    """Where ``params`` holds a credential, at any depth (``extra_headers``, ``extra_body``, nested lists): a key
    in :data:`SECRET_PARAMS` or :data:`SECRET_HEADERS` (any case) with a value, or a string the sanitiser
    redacts, alone or under its key (a key format, ``token: ...``, a password in a URL such as
    ``api_base: https://user:pw@host``)."""
    from toolchoice_pipeline.util.sanitise import Sanitiser

    found: list[tuple] = []
    if isinstance(params, dict):
        for key, value in params.items():
            name = str(key).lower()
            if (name in SECRET_PARAMS or name in SECRET_HEADERS) and value not in (None, "", {}, []):
                found.append((*path, key))
            elif isinstance(value, str) and Sanitiser().value({key: value}) != {key: value}:
                found.append((*path, key))  # a secret-like name (token, password...) or a secret-shaped value
            else:
                found.extend(secret_paths(value, (*path, key)))
    elif isinstance(params, list):
        for index, item in enumerate(params):
            found.extend(secret_paths(item, (*path, index)))
    elif isinstance(params, str) and Sanitiser().text(params) != params:
        found.append(path)
    return found


class Price(BaseModel):
    """A custom price, overriding LiteLLM's pricing table: USD per million prompt / completion tokens."""

    model_config = ConfigDict(extra="forbid", strict=True)

    input_usd_per_mtok: float = Field(ge=0)
    output_usd_per_mtok: float = Field(ge=0)


class ModelSpec(BaseModel):
    """One model to evaluate. ``params`` go to ``litellm.acompletion`` as they are (``api_base``, ``temperature``...).
    ``gate: false`` makes it a reference: its figures are reported (marked "not gated") but its drops never fail
    the release (``toolchoice run/gate --gate-models`` chooses per run). ``timeout_s``: seconds per attempt for
    this model (default ``retries.timeout_s``); ``max_concurrency``: its calls in flight (default
    ``concurrency.per_model``); ``journal_key``: added to its call-journal key (the key holds the model string and
    params but not ``api_base``, so a server moved to a new port keeps its journal; set it when one model string
    names different weights)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    model: str = Field(min_length=1)
    params: dict[str, Any] = Field(default_factory=dict)
    price: Price | None = None
    max_concurrency: int | None = Field(default=None, ge=1)
    repeats: int | None = Field(default=None, ge=1, le=MAX_REPEATS)
    gate: bool = True
    # Issue 30: a slow local server needs its own timeout (seconds per attempt; default: retries.timeout_s), and
    # a name for what answers when one model string is served by different weights (docs/local_servers.md).
    timeout_s: float | None = Field(default=None, gt=0, le=3600)
    journal_key: str | None = Field(default=None, min_length=1, max_length=200)

    @field_validator("model", "journal_key")
    @classmethod
    def _no_control_characters(cls, value: str | None) -> str | None:
        return value if value is None else check_identifier(value, "model name")

    @field_validator("params")
    @classmethod
    def _no_secrets(cls, params: dict[str, Any]) -> dict[str, Any]:
        found = secret_paths(params)
        if found:
            raise PydanticCustomError(
                SECRET_ERROR,
                "{keys} may not be stored in the configuration; set the "
                "provider's environment variable instead (e.g. OPENAI_API_KEY)",
                {"keys": ", ".join(field_path(p) for p in found)},
            )
        return params


CalibrationMode = Literal["fail", "warn"]
ProfileName = Literal["key_args", "bfcl"]  # suites.model.MatchProfile


def _bfcl_warns() -> dict[ProfileName, CalibrationMode]:
    return {"bfcl": "warn"}


class JudgeConfig(BaseModel):
    """ChainPoll judge settings (DESIGN §5). ``budget_usd`` caps the judge's spend per run, canary included (null
    = no cap); ``calibration``: ``fail`` (a failed calibration fails the run and blocks promotion) or ``warn``;
    ``calibration_by_profile``: the mode for suites of a matching profile, overriding ``calibration`` (default
    ``{bfcl: warn}``: on BFCL suites right tool, the calibration's reference, says almost nothing, see
    docs/judge.md); :meth:`calibration_mode` gives the mode of a suite."""

    model_config = ConfigDict(extra="forbid", strict=True)

    model: ModelSpec = Field(default_factory=lambda: ModelSpec(model="local/catalog-judge"))
    polls: int = Field(default=3, ge=1, le=25)
    max_attempts: int = Field(default=3, ge=1, le=10)
    temperature: float = Field(default=0.7, ge=0, le=2)
    budget_usd: float | None = Field(default=None, ge=0)
    calibration: CalibrationMode = "fail"
    calibration_by_profile: dict[ProfileName, CalibrationMode] = Field(default_factory=_bfcl_warns)

    def calibration_mode(self, match_profile: str) -> CalibrationMode:
        """The calibration mode (``fail`` or ``warn``) of a suite in ``match_profile``."""
        return self.calibration_by_profile.get(match_profile, self.calibration)  # type: ignore[call-overload]

    @field_validator("model", mode="before", json_schema_input_type=str | ModelSpec)
    @classmethod
    def _model_from_string(cls, value: Any) -> Any:
        return {"model": value} if isinstance(value, str) else value


class ConcurrencyConfig(BaseModel):
    """At most ``max_in_flight`` model calls at once overall, and ``per_model`` at once per model, in each
    process running shards; ``shard_episodes`` caps a shard's episodes (:mod:`toolchoice_pipeline.execution.shards`)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    max_in_flight: int = Field(default=16, ge=1)
    per_model: int = Field(default=8, ge=1)
    shard_episodes: int = Field(default=2000, ge=1, le=1_000_000)


class RateLimit(BaseModel):
    """A request rate limit for one provider or one model, held by every process that shares the limit store
    (``execution.rate_limits``): at most ``rpm`` requests in any 60 s and ``rps`` in any 1 s (sliding windows).
    Each attempt counts, retries included. At least one of them; with both, ``rps`` is the tighter burst limit
    (``rps`` < ``rpm`` ≤ 60 × ``rps``)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    rpm: int | None = Field(default=None, ge=1)
    rps: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _one_window_at_least(self) -> RateLimit:
        if self.rpm is None and self.rps is None:
            raise ValueError("a rate limit needs rpm (requests per minute), rps (requests per second) or both")
        if self.rpm is not None and self.rps is not None:
            if self.rpm <= self.rps:
                raise ValueError(f"rpm ({self.rpm}) must be larger than rps ({self.rps}): a minute holds 60 seconds")
            if self.rpm > 60 * self.rps:
                raise ValueError(
                    f"rpm ({self.rpm}) allows more than 60 × rps ({60 * self.rps}) and can never apply: drop it or "
                    "raise rps"
                )
        return self

    def windows(self) -> list[tuple[int, int]]:
        """``(requests, window_ms)`` pairs, shortest window first."""
        pairs = [(self.rps, 1000), (self.rpm, 60_000)]
        return [(limit, window_ms) for limit, window_ms in pairs if limit is not None]


class RetryConfig(BaseModel):
    """Retries of transient provider errors (rate limits, 5xx, timeouts): exponential backoff with jitter."""

    model_config = ConfigDict(extra="forbid", strict=True)

    max_attempts: int = Field(default=6, ge=1, le=20)
    initial_wait_s: float = Field(default=1.0, ge=0, le=3600)
    max_wait_s: float = Field(default=60.0, ge=0, le=3600)
    timeout_s: float = Field(default=120.0, gt=0, le=3600)
    # Issue 29: a provider's Retry-After longer than this ends the call (failed, not retried) instead of waiting.
    max_retry_after_s: float = Field(default=60.0, ge=0, le=3600)

    @model_validator(mode="after")
    def _bounds_in_order(self) -> RetryConfig:
        if self.initial_wait_s > self.max_wait_s:
            raise ValueError(
                f"initial_wait_s ({self.initial_wait_s}) is larger than max_wait_s "
                f"({self.max_wait_s}): the first wait cannot exceed the longest one"
            )
        return self


class CacheConfig(BaseModel):
    """The agent call journal and cache. ``path`` is relative to the data dir and stays inside it (unless
    ``TOOLCHOICE_ALLOW_OUTSIDE_PATHS=1``, :mod:`.confined_paths`)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    policy: CachePolicy = "read_write"
    path: str = Field(default="cache/agent_calls.sqlite", min_length=1)

    @field_validator("path")
    @classmethod
    def _inside_the_data_dir(cls, path: str) -> str:
        problem = confinement_problem(path, "data directory")
        if problem is not None:
            raise ValueError(problem)
        return path


class GateConfig(BaseModel):
    """How the gate treats noise (DESIGN §3, docs/scoring.md). ``noise: report`` (default): the 95% interval
    of each paired drop and "beyond noise"/"within noise" are shown, the verdict is the 2-point rule;
    ``require``: a drop of more than 2 points that is within noise passes with a warning."""

    model_config = ConfigDict(extra="forbid", strict=True)

    noise: NoiseMode = "report"


class RunConfig(BaseModel):
    """The whole run configuration (``data/toolchoice.yaml``). Every section has defaults.

    ``repeats`` (k, default 1): each task runs k times per model as independent samples (a model's own
    ``repeats`` wins). ``rate_limits`` maps a provider (``openai``: every ``openai/...`` model) or a LiteLLM
    model string (``anthropic/claude-sonnet-4-5``) to its :class:`RateLimit`; a call must pass both its
    provider's and its model's limit. ``budget_usd`` caps the agents' spend per run in USD (null = no cap): once reached, no
    further agent call starts and the samples not yet run stop with the ``agent_budget_exhausted`` error.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    models: list[ModelSpec] = Field(
        default_factory=lambda: [ModelSpec(model="local/bm25-router"), ModelSpec(model="local/name-match")],
        min_length=1,
        json_schema_extra={"minItems": 1},  # the string shorthand's input schema would otherwise drop it
    )
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    concurrency: ConcurrencyConfig = Field(default_factory=ConcurrencyConfig)
    rate_limits: dict[str, RateLimit] = Field(default_factory=dict)
    retries: RetryConfig = Field(default_factory=RetryConfig)
    max_steps: int = Field(default=4, ge=1, le=50)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    repeats: int = Field(default=1, ge=1, le=MAX_REPEATS)
    budget_usd: float | None = Field(default=None, ge=0)
    gate: GateConfig = Field(default_factory=GateConfig)

    @field_validator("models", mode="before", json_schema_input_type=list[str | ModelSpec])
    @classmethod
    def _models_from_strings(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"model": item} if isinstance(item, str) else item for item in value]
        return value

    @field_validator("rate_limits")
    @classmethod
    def _named_limits(cls, limits: dict[str, RateLimit]) -> dict[str, RateLimit]:
        for key in limits:
            if not key.strip() or key != key.strip() or key.startswith("/") or key.endswith("/"):
                raise ValueError(
                    f"{key!r} is not a provider (openai) or a LiteLLM model string (anthropic/claude-sonnet-4-5)"
                )
        return limits

    @model_validator(mode="after")
    def _unique_models(self) -> RunConfig:
        names = [m.model for m in self.models]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"model listed twice: {', '.join(duplicates)}")
        return self

    def model_names(self) -> list[str]:
        return [m.model for m in self.models]

    def with_models(self, names: list[str]) -> RunConfig:
        """A copy evaluating ``names`` (keeping the settings of any already configured)."""
        known = {m.model: m for m in self.models}
        return self.model_copy(update={"models": [known.get(n, ModelSpec(model=n)) for n in names]})

    def ungated_models(self) -> list[str]:
        """The model strings with ``gate: false``: reported, never gating the release."""
        return [m.model for m in self.models if not m.gate]

    def with_gate_models(self, names: list[str] | None) -> RunConfig:
        """A copy where only ``names`` gate the release (``--gate-models``; None: as configured). Raises
        ``ValueError`` naming any of ``names`` that is not a model of this configuration."""
        if names is None:
            return self
        unknown = sorted(set(names) - set(self.model_names()))
        if unknown:
            raise ValueError(f"not a model of this run: {', '.join(unknown)} (models: {', '.join(self.model_names())})")
        return self.model_copy(
            update={"models": [m.model_copy(update={"gate": m.model in names}) for m in self.models]}
        )

    def repeats_for(self, spec: ModelSpec) -> int:
        """The samples per task of ``spec``: its own ``repeats``, else the configuration's."""
        return spec.repeats or self.repeats

    def with_repeats(self, repeats: int | None) -> RunConfig:
        """A copy where every model runs ``repeats`` samples per task (``toolchoice run --repeats``); None: as is."""
        if repeats is None:
            return self
        models = [m.model_copy(update={"repeats": None}) for m in self.models]
        return self.model_copy(update={"repeats": repeats, "models": models})

    def for_suite(self, requested: list[str] | None, suite_models: list[str] | None) -> RunConfig:
        """This configuration evaluating the models a release of a suite runs: ``requested`` (``--models``, the
        release request) when it names any, else the suite's own ``models`` (``suite.yaml``), else this
        configuration's (see :meth:`with_models`)."""
        names = requested or suite_models
        return self.with_models(names) if names else self


CONFIG_FILE = "toolchoice.yaml"


def load_run_config(data_dir: Path) -> RunConfig:
    """Load ``<data_dir>/toolchoice.yaml``; defaults when the file is absent or empty.

    Raises :class:`InputError` listing every problem with its line and field; an API key or other credential
    under a model's ``params`` is refused (``models[0].params.api_key: ... set the provider's environment
    variable instead (OPENAI_API_KEY)``). Parsed once while :func:`~.read_once.inputs_read_once` is active and
    the file is unchanged.
    """
    path = data_dir / CONFIG_FILE
    if not read_once.active():
        return _read_run_config(path)
    key = str(path.resolve())
    found = read_once.held("run_config", key)
    if found is not None:
        return found
    files = read_once.signature([path])
    return read_once.hold("run_config", key, files, _read_run_config(path))


def _read_run_config(path: Path) -> RunConfig:
    if not path.exists():
        return RunConfig()
    shown = display_path(path)
    data, lines = load_yaml(path)
    if data is None:
        return RunConfig()
    if not isinstance(data, dict):
        raise InputError(
            Problem(
                file=shown,
                line=1,
                message="the run configuration must be a mapping (models:, judge:, concurrency:, ...)",
            )
        )
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        problems = []
        for err in errors:
            if err["type"] == SECRET_ERROR:
                problems.extend(_secret_problems(err["input"], tuple(err["loc"]), data, shown, lines))
        for loc, message in validation_errors([e for e in errors if e["type"] != SECRET_ERROR], RunConfig):
            if loc == () and message.startswith("model listed twice"):
                loc = _second_listing(data, message)
            problems.append(
                Problem(file=shown, line=line_of(lines, loc), field=field_path(loc) or None, message=message)
            )
        problems.sort(key=lambda p: p.line or 0)
        raise InputError(problems) from None


# Where each provider's key lives (LiteLLM reads these); anything else gets the generic advice.
_KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "azure": "AZURE_API_KEY",
    "cohere": "COHERE_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "bedrock": "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY",
    "vertex_ai": "GOOGLE_APPLICATION_CREDENTIALS",
}


def _secret_problems(params: dict[str, Any], loc: tuple, data: dict, shown: str, lines) -> list[Problem]:
    """One problem per credential found in a model's ``params``, naming the environment variable to use."""
    owner: Any = data
    for part in loc[:-1]:
        owner = owner[part] if isinstance(owner, (dict, list)) else None
    model = owner.get("model") if isinstance(owner, dict) else owner
    provider = model.split("/", 1)[0] if isinstance(model, str) else ""
    variable = _KEY_VARIABLES.get(provider)
    advice = (
        f"set {variable} in the environment instead"
        if variable
        else "set the provider's environment variable instead (e.g. OPENAI_API_KEY)"
    )
    return [
        Problem(
            file=shown,
            line=line_of(lines, (*loc, *where)),
            field=field_path((*loc, *where)),
            message=f"credentials may not be stored in the run configuration; remove it and {advice}",
        )
        for where in secret_paths(params)
    ]


def _second_listing(data: dict, message: str) -> tuple:
    """The location of the second entry of the first model listed twice."""
    seen: set[Any] = set()
    for index, item in enumerate(data.get("models") or []):
        name = item.get("model") if isinstance(item, dict) else item
        if name in seen:
            return ("models", index)
        seen.add(name)
    return ("models",)
