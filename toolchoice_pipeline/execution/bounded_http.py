"""Replies bounded by size as they arrive: the HTTP client LiteLLM's OpenAI provider is given for each call.

A reply body is read at most :data:`MAX_REPLY_BYTES` bytes *after* decompression (a gzip or deflate bomb: a
few hundred kilobytes that inflate to gigabytes) and at most as many bytes on the wire (an endless reply, a
server that never stops sending): past the limit the read stops with :class:`ReplyTooLarge`, whatever the
timeout says. The body is decompressed here, chunk by chunk with a bounded output (``zlib``'s ``max_length``),
never whole; the request offers only ``gzip`` and ``deflate``, and a reply in another encoding is refused.

Used for models whose LiteLLM provider is ``openai`` (OpenAI itself and every OpenAI-compatible server called as
``openai/<model>`` with an ``api_base``): LiteLLM then sends the request through an ``openai.AsyncOpenAI`` client
built here on an ``httpx.AsyncClient`` with a response hook, one per event loop, API base and key. Other
providers' replies are bounded by the total time of an attempt only.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import weakref
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import lru_cache
from typing import Any

import httpx

#: Largest reply body read from a provider, in bytes after decompression (16 MiB: a reply is refused above
#: 1,000,000 characters anyway, ``llm.MAX_REPLY_CHARS``; JSON escapes and the envelope take the rest).
MAX_REPLY_BYTES = 16 * 1024 * 1024
#: The encodings we ask for and can decompress with a bounded output.
ACCEPTED_ENCODINGS = "gzip, deflate"
_ZLIB_WINDOWS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
_READ = 64 * 1024


class ReplyTooLarge(Exception):
    """A reply body over :data:`MAX_REPLY_BYTES` (decompressed or on the wire), or in an encoding we did not ask
    for. Not transient: the same request would get the same reply."""


class _BoundedBody(httpx.AsyncByteStream):
    """The raw body ``raw`` decompressed (``encoding``: ``""``, ``gzip`` or ``deflate``) and cut at ``limit``."""

    def __init__(self, raw: Any, encoding: str, limit: int, url: str):
        self.raw, self.encoding, self.limit, self.url = raw, encoding, limit, url

    def _too_large(self, what: str) -> ReplyTooLarge:
        return ReplyTooLarge(
            f"the reply from {self.url} is larger than {self.limit:,} bytes ({what}): read stopped there"
        )

    async def __aiter__(self) -> AsyncIterator[bytes]:
        decoder = None
        if self.encoding:
            window = _ZLIB_WINDOWS[self.encoding]
            decoder = zlib.decompressobj(window)
        wire = kept = 0
        async for chunk in self.raw:
            wire += len(chunk)
            if wire > self.limit:
                raise self._too_large("on the wire")
            if decoder is None:
                kept += len(chunk)
                yield chunk
                continue
            pending = chunk
            while pending:
                try:
                    # Never more than the room left plus one byte: a bomb inflates at most that far per step.
                    data = decoder.decompress(pending, self.limit - kept + 1)
                except zlib.error as exc:
                    if self.encoding == "deflate" and wire == len(chunk) and not kept:  # raw deflate, no header
                        decoder = zlib.decompressobj(-zlib.MAX_WBITS)
                        continue
                    raise ReplyTooLarge(f"the reply from {self.url} is not valid {self.encoding} ({exc})") from None
                kept += len(data)
                if kept > self.limit:
                    raise self._too_large(f"after {self.encoding} decompression of {wire:,} bytes")
                if data:
                    yield data
                pending = decoder.unconsumed_tail
        if decoder is not None:
            rest = decoder.flush(self.limit - kept + 1)
            if kept + len(rest) > self.limit:
                raise self._too_large(f"after {self.encoding} decompression of {wire:,} bytes")
            if rest:
                yield rest

    async def aclose(self) -> None:
        await self.raw.aclose()


def bounded_reply_hook(limit: int = MAX_REPLY_BYTES) -> Callable[[httpx.Response], Awaitable[None]]:
    """An httpx ``response`` event hook: the response's body is read through :class:`_BoundedBody` (its
    ``Content-Encoding`` decoded there, so httpx's own decoder sees plain bytes)."""

    async def bound(response: httpx.Response) -> None:
        encodings = [part.strip().lower() for part in response.headers.get_list("content-encoding", split_commas=True)]
        encodings = [name for name in encodings if name and name != "identity"]
        if len(encodings) > 1 or (encodings and encodings[0] not in _ZLIB_WINDOWS):
            raise ReplyTooLarge(
                f"the reply from {response.request.url} is encoded as {', '.join(encodings)}: only "
                f"{ACCEPTED_ENCODINGS} were asked for, and only they are decompressed with a bounded size"
            )
        response.stream = _BoundedBody(response.stream, encodings[0] if encodings else "", limit, str(response.url))
        if encodings:
            del response.headers["content-encoding"]

    return bound


@lru_cache(maxsize=4)
def _tls_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """httpx's default TLS context (certifi's CA bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``, which httpx reads
    and which key the cache), made once: loading the CA bundle costs ~65 ms of CPU, and a client is made per event
    loop (a run makes a loop per batch)."""
    return httpx.create_ssl_context()


def bounded_http_client(limit: int = MAX_REPLY_BYTES) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose replies are read through :func:`bounded_reply_hook`."""
    return httpx.AsyncClient(
        headers={"Accept-Encoding": ACCEPTED_ENCODINGS},
        event_hooks={"response": [bounded_reply_hook(limit)]},
        follow_redirects=True,
        verify=_tls_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")),
    )


# One AsyncOpenAI per event loop, API base and key: an httpx client's connections belong to the loop that made
# them (a run makes a loop per batch); the entries go with their loop.
_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], Any]] = weakref.WeakKeyDictionary()


@lru_cache(maxsize=256)
def _openai_base(model: str, api_base: str | None) -> str | None:
    """The API base of ``model`` when LiteLLM sends it through its OpenAI provider, else None."""
    import litellm

    try:
        _, provider, _, base = litellm.get_llm_provider(model=model, api_base=api_base)
    except Exception:  # noqa: BLE001 - an unknown provider: LiteLLM reports it on the call itself
        return None
    if provider != "openai":
        return None
    return api_base or base or "https://api.openai.com/v1"


def bounded_openai_client(model: str, kwargs: dict[str, Any]) -> Any:
    """The ``client`` to pass to ``litellm.acompletion`` for ``model`` (its call ``kwargs``: ``api_base``,
    ``api_key``), or None when its provider is not LiteLLM's OpenAI one or no key is known (LiteLLM then
    reports the missing key as it does)."""
    import os

    base = _openai_base(model, kwargs.get("api_base") or kwargs.get("base_url"))
    if base is None:
        return None
    key = kwargs.get("api_key") or os.environ.get("OPENAI_API_KEY")
    if not key:
        return None
    clients = _CLIENTS.setdefault(asyncio.get_running_loop(), {})
    client = clients.get((base, key))
    if client is None:
        import openai

        # The SDK takes an httpx client as well as its own httpx2 one (its "legacy" client type).
        http_client: Any = bounded_http_client()
        client = openai.AsyncOpenAI(api_key=key, base_url=base, http_client=http_client, max_retries=0)
        clients[(base, key)] = client
    return client


def reply_too_large(exc: BaseException) -> ReplyTooLarge | None:
    """The :class:`ReplyTooLarge` behind ``exc`` (the OpenAI client and LiteLLM wrap it as a connection error)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, ReplyTooLarge):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None
