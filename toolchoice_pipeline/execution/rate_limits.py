"""Request rate limits per provider or model that hold across shards, processes and concurrent runs.

``rate_limits`` in ``toolchoice.yaml`` (:class:`~toolchoice_pipeline.suites.config.RateLimit`) are enforced with
pyrate-limiter's sliding-window log in a store every process shares:

- **one host** (the default): a SQLite file, ``<data-dir>/cache/rate_limits.sqlite``, one table per limit, each
  admission counted and recorded under a file lock (``rate_limits.sqlite.lock``), so every process on the host
  that uses the data dir draws on the same limit;
- **several machines**: ``TOOLCHOICE_RATE_LIMITS_URL=redis://host:6379/0`` (or ``rediss://``; a password in the
  URL stays in the environment, never in a file): a Redis sorted set per limit, admitted by one Lua script
  (:func:`redis_put_script`).
  Another local path there names another SQLite file.

A call waits (``asyncio.sleep``, the event loop runs on) until each limit that applies admits it: its
provider's (``openai`` for ``openai/gpt-4.1-mini``) and its own model string's. Every attempt is one request,
retries included. Limiters are built once per process and store (:func:`rate_limiters`), so the shards and
stages of one process share one async queue per limit.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolchoice_pipeline.suites.config import RateLimit
from toolchoice_pipeline.util.errors import InputError, Problem

RATE_LIMITS_URL_ENV = "TOOLCHOICE_RATE_LIMITS_URL"
DEFAULT_STORE = Path("cache") / "rate_limits.sqlite"
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
# pyrate-limiter sleeps this much past the computed wait before asking again (its default).
BUFFER_MS = 50

_built: dict[tuple[int, str, str, tuple[tuple[int, int], ...]], Any] = {}
_built_lock = threading.Lock()


class RateLimitStoreError(InputError):
    """``TOOLCHOICE_RATE_LIMITS_URL`` names a store we cannot use (an object-store URL, say)."""

    def __init__(self, message: str):
        super().__init__(Problem(file="environment", field=RATE_LIMITS_URL_ENV, message=message))


class RateLimitStoreUnavailable(RuntimeError):
    """The shared store of the rate limits failed while admitting a call: the call is not made."""


def limit_store(data_dir: Path) -> str:
    """Where the limits' counts live: ``$TOOLCHOICE_RATE_LIMITS_URL`` (a ``redis://`` URL or a local path), else
    ``<data_dir>/cache/rate_limits.sqlite``. Raises :class:`RateLimitStoreError` for any other URL."""
    configured = os.environ.get(RATE_LIMITS_URL_ENV, "").strip()
    if not configured:
        return str(Path(data_dir) / DEFAULT_STORE)
    if configured.startswith(REDIS_SCHEMES):
        return configured
    if "://" in configured:
        raise RateLimitStoreError(
            f"{configured.split('://', 1)[0]}:// is not a rate-limit store; use redis:// "
            "(several machines) or a local SQLite file path (one host)"
        )
    return str(Path(configured).expanduser())


def provider_of(model: str) -> str:
    """The provider part of a LiteLLM model string (``openai`` for ``openai/gpt-4.1-mini``); for a bare model name
    LiteLLM knows (``gpt-4o-mini``), LiteLLM's provider for it."""
    if "/" in model:
        return model.split("/", 1)[0]
    import litellm

    try:
        return litellm.get_llm_provider(model)[1]
    except Exception:  # noqa: BLE001 - LiteLLM raises for a name it cannot place: it is its own key then
        return model


@dataclass(frozen=True)
class CallRateLimit:
    """The limits one model's calls pass, in order (provider first): ``(key, limiter)`` pairs."""

    model: str
    limits: tuple[tuple[str, Any], ...]

    @property
    def keys(self) -> list[str]:
        return [key for key, _ in self.limits]

    async def acquire(self) -> None:
        """Wait until every limit admits one more request, and count it against each. Raises
        :class:`RateLimitStoreUnavailable` when the store fails (a Redis server gone, say)."""
        for key, limiter in self.limits:
            try:
                admitted = await limiter.try_acquire_async(key)
            except Exception as exc:  # noqa: BLE001 - the store's own errors (redis, sqlite3): one clear cause
                raise RateLimitStoreUnavailable(_store_failed(key, exc)) from None
            if not admitted:
                raise RuntimeError(f"rate limit {key!r} can never admit a request")  # a weight of 1 always fits


class RateLimiters:
    """The configured limits over one store; :meth:`for_model` gives a model's :class:`CallRateLimit`."""

    def __init__(self, limits: dict[str, RateLimit], store: str):
        self.limits = dict(limits)
        self.store = store

    def for_model(self, model: str) -> CallRateLimit | None:
        """The limits ``model``'s calls pass (its provider's, then its own), None when none is configured."""
        keys = [key for key in dict.fromkeys((provider_of(model), model)) if key in self.limits]
        if not keys:
            return None
        return CallRateLimit(model, tuple((key, self._limiter(key)) for key in keys))

    def _limiter(self, key: str) -> Any:
        try:
            return _limiter(self.store, key, self.limits[key])
        except RateLimitStoreError:
            raise
        except Exception as exc:  # noqa: BLE001 - the store's own errors (redis, sqlite3, filelock): one clear cause
            raise RateLimitStoreUnavailable(_store_failed(key, exc)) from None


def _store_failed(key: str, exc: BaseException) -> str:
    # The store's URL is left out: it may hold a password.
    first = str(exc).splitlines()[0][:200] if str(exc).strip() else "no message"
    return f"the rate-limit store for {key!r} failed ({type(exc).__name__}: {first}); see {RATE_LIMITS_URL_ENV}"


def rate_limiters(limits: dict[str, RateLimit], data_dir: Path) -> RateLimiters | None:
    """The run's :class:`RateLimiters` over :func:`limit_store`; None when ``limits`` is empty (nothing is
    limited and no store is opened)."""
    if not limits:
        return None
    return RateLimiters(limits, limit_store(data_dir))


def close_rate_limiters() -> None:
    """Close every limiter this process built (their connections and leaker threads): for a process that keeps
    running after its store goes away (a test's Redis server, a benchmark). The next call builds them anew."""
    with _built_lock:
        for (pid, *_), limiter in _built.items():
            if pid == os.getpid():
                limiter.close()
        _built.clear()


def _limiter(store: str, key: str, limit: RateLimit) -> Any:
    """pyrate-limiter's ``Limiter`` for ``key`` over ``store``, built once per process (its leaker thread and
    its connection are reused by every later run in the process)."""
    windows = tuple(limit.windows())
    # Keyed by process too: a forked child (an executor's worker) must not share its parent's SQLite connection.
    cache_key = (os.getpid(), store, key, windows)
    with _built_lock:
        limiter = _built.get(cache_key)
        if limiter is None:
            limiter = _built[cache_key] = _build(store, key, windows)
        return limiter


def _build(store: str, key: str, windows: tuple[tuple[int, int], ...]) -> Any:
    from pyrate_limiter import AbstractBucket, Limiter, Rate

    rates = [Rate(requests, window_ms) for requests, window_ms in windows]
    # Keys are provider or model strings (slashes, dots, colons): hashed into a table or Redis key name.
    name = "limit_" + hashlib.sha256(key.encode()).hexdigest()[:16]
    bucket: AbstractBucket
    if store.startswith(REDIS_SCHEMES):
        from pyrate_limiter import RedisBucket

        try:
            from redis import Redis
        except ImportError:
            raise RateLimitStoreError(
                "a redis:// store needs the Redis client: pip install 'toolchoice-pipeline[redis]'"
            ) from None

        redis = Redis.from_url(store)
        bucket = RedisBucket(rates, redis, f"toolchoice:{name}", redis.script_load(redis_put_script()))
    else:
        from pyrate_limiter import SQLiteBucket

        Path(store).parent.mkdir(parents=True, exist_ok=True)
        bucket = SQLiteBucket.init_from_file(rates, table=name, db_path=store, use_file_lock=True)
    return Limiter(bucket, buffer_ms=BUFFER_MS)


# pyrate-limiter's Redis script counts a window's entries up to the new item's own timestamp, which the client
# stamped before its round trip to Redis. An item stamped earlier but stored later (another process's call got
# there first) then misses the later-stamped entry, and each was admitted without counting the other: a window
# held the limit plus one (seen under load, two processes sharing 4 requests per second). Counting every entry
# from the window's start on, as pyrate-limiter's SQLite bucket does, holds the limit in any window whatever
# order the entries arrive in.
_COUNT_TO_OWN_STAMP = "redis.call('ZCOUNT', bucket, window_start, now)"
_COUNT_EVERY_LATER_ENTRY = "redis.call('ZCOUNT', bucket, window_start, '+inf')"


def redis_put_script() -> str:
    """pyrate-limiter's Lua script that admits and stores one Redis entry, counting the entries stamped after the
    new one too. Its own script when a later pyrate-limiter no longer counts up to the stamp (a test then fails)."""
    from pyrate_limiter.buckets.redis_bucket import LuaScript

    return LuaScript.PUT_ITEM.replace(_COUNT_TO_OWN_STAMP, _COUNT_EVERY_LATER_ENTRY)
