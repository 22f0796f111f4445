"""Run every model on every task of a suite: the whole agent side of a release, with no Dagster in it.

- **Concurrency**: asyncio; each model has ``ModelSpec.max_concurrency`` (else ``concurrency.per_model``)
  workers taking its tasks in order, and every provider call attempt also holds one of
  ``concurrency.max_in_flight`` global slots (released while backing off between attempts), so all tasks ×
  models run interleaved and no model starves the others. Cache hits take no slot.
- **Faults kept apart**: a model whose static preflight fails (an unpriced model under ``budget_usd``
  included) gets one clear message on all its rows and is never called; a remote model gets its preflight call just before its first cache miss (so a run served from
  the journal calls nobody); a model whose calls fail :data:`CONSECUTIVE_FAILURES_TO_STOP` times in a row
  for model-level reasons (bad key, no such model, unreachable, transient errors outlasting the retries) is
  stopped and its remaining uncached rows say why. Other models run on; the caller learns which models were
  unavailable (``unavailable``) and may refuse to score the run.
- **Journal**: see :mod:`.journal`; a re-run with unchanged inputs under ``read_write`` makes no provider call,
  and a killed run resumes without re-issuing a completed call.
- **Repeats**: each task runs k times per model (:meth:`RunConfig.repeats_for`) as samples 0..k-1, each with
  its own journal keys; where the provider takes a ``seed`` and k > 1, sample s is sent ``seed`` + s (``seed``
  from the model's params, else 0); the ``sim/`` provider gets the sample index in the call metadata.
- **Budget**: ``budget_usd`` caps the agents' spend of the run (USD, calls served from the journal cost
  nothing now); once reached no further call starts and the samples left stop with an error starting
  ``agent_budget_exhausted``. Calls in flight finish, so the spend can pass the cap by at most
  ``concurrency.max_in_flight`` calls.
- **Rate limits**: ``rate_limits`` (per provider or model, :mod:`.rate_limits`) admit every attempt, preflight
  calls included, in a store shared by every process on the host (or every machine, with Redis); the wait is
  spent holding the in-flight slot and counts as ``queued_ms``.

The result is one :class:`~toolchoice_pipeline.records.episodes.Episode` per (model, task, sample), models in
the given order, tasks in suite order and samples in order within a task, including failed ones (``error``
set, steps recorded so far kept).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolchoice_pipeline.execution.episode import EpisodeSetup, ModelUnavailable, ToolView, run_episode
from toolchoice_pipeline.execution.failures import describe_failure, is_model_level
from toolchoice_pipeline.execution.journal import CallJournal, JournaledCall, key_params
from toolchoice_pipeline.execution.llm import run_sync
from toolchoice_pipeline.execution.local_server import timeout_advice
from toolchoice_pipeline.execution.offline import ensure_offline_default, is_local_model
from toolchoice_pipeline.execution.preflight import (
    check_by_call,
    known_to_litellm,
    model_fingerprint,
    resolve_model,
    static_problem,
    unpriced_under_budget,
)
from toolchoice_pipeline.execution.rate_limits import CallRateLimit, rate_limiters
from toolchoice_pipeline.execution.spend import Budget, RedisSpendLedger, SpendLedger
from toolchoice_pipeline.records.episodes import FLAG_AGENT_BUDGET_EXHAUSTED, Episode
from toolchoice_pipeline.suites.config import CachePolicy, ModelSpec, RunConfig
from toolchoice_pipeline.suites.suite import Suite
from toolchoice_pipeline.suites.tasks import Task
from toolchoice_pipeline.util.reply_secrets import sanitise_reply

log = logging.getLogger(__name__)

CONSECUTIVE_FAILURES_TO_STOP = 3
Progress = Callable[[str, int, int], None]


@dataclass
class _ModelGate:
    """Whether a model may still be called: its preflight result and its run of consecutive failures."""

    model: str
    needs_call_check: bool
    blocked: str | None = None
    consecutive_failures: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def admit(self, spec: ModelSpec, config: RunConfig, rate_limit: CallRateLimit | None = None) -> None:
        """Raise :class:`ModelUnavailable` when the model may not be called; run its preflight call once."""
        if self.needs_call_check and self.blocked is None:
            async with self.lock:
                if self.needs_call_check:
                    started = time.perf_counter()
                    self.blocked = await check_by_call(spec, retries=config.retries, rate_limit=rate_limit)
                    self.needs_call_check = False
                    if self.blocked:
                        log.warning("preflight failed: %s", self.blocked)
                    else:  # a slow server (issue 30): the measured call sizes the advice
                        advice = timeout_advice(
                            spec.model, time.perf_counter() - started, spec.timeout_s or config.retries.timeout_s
                        )
                        if advice:
                            log.warning("%s", advice)
        if self.blocked is not None:
            raise ModelUnavailable(self.blocked)

    def failed(self, exc: BaseException, message: str) -> None:
        if not is_model_level(exc):
            return
        self.consecutive_failures += 1
        if self.blocked is None and self.consecutive_failures >= CONSECUTIVE_FAILURES_TO_STOP:
            detail = message.split(": ", 1)[1] if message.startswith(self.model + ": ") else message
            self.blocked = (
                f"{self.model}: stopped after {self.consecutive_failures} consecutive failed calls; "
                f"last error: {detail}"
            )
            log.warning("%s", self.blocked)

    def succeeded(self) -> None:
        self.consecutive_failures = 0


class AgentBudget(Budget):
    """The run's agent spend in USD against ``limit_usd`` (None = no cap), shared by its shards via ``ledger``."""

    kind = "agent"

    def check(self) -> None:
        """Raise :class:`ModelUnavailable` (``agent_budget_exhausted: ...``) once the spend reached the cap."""
        if self.exhausted:
            raise ModelUnavailable(
                f"{FLAG_AGENT_BUDGET_EXHAUSTED}: the run's agent spend reached budget_usd="
                f"{self.limit_usd} before this sample"
            )


class _Views:
    """Tool views per (catalog, naming), built once: the suite catalog is shared by every task without ``tools``."""

    def __init__(self, suite: Suite):
        self.suite_catalog = suite.catalog
        self._built: dict[tuple[str | None, bool], ToolView] = {}

    def for_task(self, task: Task, *, safe_names: bool) -> ToolView:
        key = (task.id if task.tools is not None else None, safe_names)
        view = self._built.get(key)
        if view is None:
            catalog = task.tools if task.tools is not None else self.suite_catalog
            view = self._built[key] = ToolView.build(catalog, safe_names=safe_names)
        return view


async def run_suite(
    suite: Suite,
    config: RunConfig,
    *,
    data_dir: Path,
    models: list[ModelSpec] | None = None,
    cache_policy: CachePolicy | None = None,
    progress: Progress | None = None,
    resume_key: str | None = None,
    unavailable: dict[str, str] | None = None,
    ledger: SpendLedger | RedisSpendLedger | None = None,
) -> list[Episode]:
    """Run each model on each task of ``suite``, k times (its ``repeats``); one :class:`Episode` per (model,
    task, sample), in model, task, sample order.

    ``models`` defaults to the suite's own ``models`` (``suite.yaml``) if it lists any, else the configuration's.
    ``cache_policy`` overrides ``config.cache.policy``; ``resume_key`` (e.g. the release id) lets a
    ``write_only`` run resume the calls it journaled itself. ``progress(model, done, total)`` is called after
    each finished episode. Provider failures never raise: they are stored on the episodes, and each model that
    could not be used (static or call preflight failed, or stopped after consecutive model-level failures) is
    added to ``unavailable`` (model -> the one-line cause) when a dict is given. ``ledger`` shares the
    ``budget_usd`` spend with the release's other shards. Raises
    :class:`~toolchoice_pipeline.util.errors.InputError` for bad input found before the run (a replay file that
    does not load).
    """
    specs = list(models if models is not None else config.for_suite(None, suite.spec.models).models)
    ensure_offline_default(spec.model for spec in specs)
    from toolchoice_pipeline.providers import register_free_models, register_providers_for
    from toolchoice_pipeline.providers.direct import is_direct

    register_providers_for(spec.model for spec in specs)
    policy = cache_policy or config.cache.policy
    tasks = suite.tasks
    views = _Views(suite)
    blocked = {
        spec.model: static_problem(spec, data_dir) or unpriced_under_budget(spec, config.budget_usd) for spec in specs
    }
    for problem in blocked.values():
        if problem:
            log.warning("preflight failed: %s", problem)
    # Before the journal opens: a bad store is bad input, an unreachable one fails the run before any call.
    limits = rate_limiters(config.rate_limits, data_dir)
    rate_limit_of = {spec.model: limits.for_model(spec.model) if limits is not None else None for spec in specs}
    journal = CallJournal(
        None if policy == "off" else data_dir / config.cache.path,
        policy,
        resume_key=resume_key,
        models=[spec.model for spec in specs],
    )
    in_flight = asyncio.Semaphore(config.concurrency.max_in_flight)
    budget = AgentBudget(config.budget_usd, ledger)
    repeats = [config.repeats_for(spec) for spec in specs]
    results: list[list[Episode | None]] = [[None] * (len(tasks) * k) for k in repeats]
    log.info("running %d models on %d tasks of suite %s (cache %s)", len(specs), len(tasks), suite.name, policy)
    gates: dict[str, _ModelGate] = {}

    def setup_for(spec: ModelSpec) -> EpisodeSetup:
        remote = not is_local_model(spec.model)
        call_spec = spec.model_copy(update={"model": resolve_model(spec.model, data_dir)})
        if not remote and not is_direct(call_spec.model):  # direct-path models never meet LiteLLM's price table
            register_free_models([call_spec.model])
        gate = gates[spec.model] = _ModelGate(model=spec.model, needs_call_check=remote, blocked=blocked[spec.model])
        known = known_to_litellm(spec.model) if remote else None
        from toolchoice_pipeline.execution.llm import takes_seed

        seeded = repeats[specs.index(spec)] > 1 and remote and takes_seed(call_spec.model)
        seed_base = int(spec.params.get("seed", 0) or 0)
        rate_limit = rate_limit_of[spec.model]

        def describe(exc: BaseException) -> str:
            return describe_failure(spec.model, exc, known_model=known)

        async def call_model(
            task_id: str, sample: int, step: int, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
        ) -> JournaledCall:
            from toolchoice_pipeline.execution.llm import complete

            budget.check()
            await gate.admit(call_spec, config, rate_limit)
            seed = {"seed": seed_base + sample} if seeded else {}
            try:
                completion = await complete(
                    call_spec,
                    messages,
                    retries=config.retries,
                    tools=tools or None,
                    limiter=in_flight,
                    rate_limit=rate_limit,
                    metadata={"task_id": task_id, "sample": sample, "step": step, "data_dir": str(data_dir)},
                    **seed,
                )
            except Exception as exc:
                gate.failed(exc, describe(exc))
                raise
            gate.succeeded()
            budget.add(completion.cost_usd)
            return JournaledCall(
                message=sanitise_reply(completion.message),  # secrets never reach the journal or the tables
                prompt_tokens=completion.prompt_tokens,
                completion_tokens=completion.completion_tokens,
                cost_usd=completion.cost_usd,
                latency_ms=completion.latency_ms,
                attempts=completion.attempts,
                provider_ms=completion.provider_ms,
                queued_ms=completion.queued_ms,
                confidence=completion.confidence,
            )

        return EpisodeSetup(
            model=spec.model,
            fingerprint=model_fingerprint(spec.model, data_dir),
            key_params=key_params(spec.params, spec.journal_key),
            journal=journal,
            call_model=call_model,
            describe_failure=describe,
            max_steps=config.max_steps,
        )

    async def run_model(index: int, spec: ModelSpec) -> None:
        setup = setup_for(spec)
        safe_names = not is_local_model(spec.model)
        k = repeats[index]
        order = iter(range(len(tasks) * k))
        done = 0

        async def worker() -> None:
            nonlocal done
            for slot in order:
                task, sample = tasks[slot // k], slot % k
                if blocked[spec.model] is not None:
                    episode = Episode(model=spec.model, task_id=task.id, sample=sample, error=blocked[spec.model])
                else:
                    episode = await run_episode(task, views.for_task(task, safe_names=safe_names), setup, sample)
                results[index][slot] = episode
                done += 1
                if progress is not None:
                    progress(spec.model, done, len(tasks) * k)

        limit = spec.max_concurrency or config.concurrency.per_model
        async with asyncio.TaskGroup() as group:
            for _ in range(max(1, min(limit, len(tasks) * k))):
                group.create_task(worker())

    try:
        async with asyncio.TaskGroup() as group:
            for index, spec in enumerate(specs):
                group.create_task(run_model(index, spec))
    except BaseExceptionGroup as group_error:  # a bug, not a provider failure: raise it as itself
        first = group_error.exceptions[0]
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
    finally:
        journal.close()
    if unavailable is not None:
        unavailable.update({model: gate.blocked for model, gate in gates.items() if gate.blocked})
    return [episode for per_model in results for episode in per_model if episode is not None]


def run_suite_sync(
    suite: Suite,
    config: RunConfig,
    *,
    data_dir: Path,
    models: list[ModelSpec] | None = None,
    cache_policy: CachePolicy | None = None,
    progress: Progress | None = None,
    resume_key: str | None = None,
    unavailable: dict[str, str] | None = None,
    ledger: SpendLedger | RedisSpendLedger | None = None,
) -> list[Episode]:
    """:func:`run_suite` from synchronous code (Dagster assets, the CLI). Runs its own event loop, in a helper
    thread when the calling thread already has one running."""

    def episodes() -> Coroutine[Any, Any, list[Episode]]:
        return run_suite(
            suite,
            config,
            data_dir=data_dir,
            models=models,
            cache_policy=cache_policy,
            progress=progress,
            resume_key=resume_key,
            unavailable=unavailable,
            ledger=ledger,
        )

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run_sync(episodes())
    outcome: dict[str, object] = {}

    def target() -> None:
        try:
            outcome["episodes"] = run_sync(episodes())
        except BaseException as exc:  # handed back to the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="run-suite")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["episodes"]  # type: ignore[return-value]
