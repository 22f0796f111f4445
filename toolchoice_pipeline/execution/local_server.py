"""Models behind a server on this machine (docs/local_servers.md): vLLM, llama.cpp's server, Ollama's OpenAI
endpoint, any OpenAI-compatible server whose ``api_base`` is a loopback address.

- :func:`is_loopback`: whether an ``api_base`` names this machine (``localhost``, ``127.0.0.0/8``, ``::1``);
- :func:`needs_placeholder_key`: such a server needs no key, but LiteLLM's OpenAI client refuses to start
  without one: when the model has no key of its own (no ``OPENAI_API_KEY`` for ``openai/``), the call carries
  :data:`PLACEHOLDER_KEY`, a fixed non-secret string a keyless server ignores. It is never stored (``api_key``
  is left out of the call journal's key) and never sent anywhere but the loopback address.
"""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit

#: The key sent to a keyless local server (LiteLLM's OpenAI client requires one); not a secret.
PLACEHOLDER_KEY = "no-key-local-server"
#: Providers whose client needs a key even for a keyless server, and the variable that would hold a real one.
KEYED_CLIENTS = {"openai": "OPENAI_API_KEY", "text-completion-openai": "OPENAI_API_KEY"}


def is_loopback(api_base: object) -> bool:
    """True when ``api_base`` (a URL string) points at this machine: ``localhost`` or a loopback IP."""
    if not isinstance(api_base, str) or not api_base.strip():
        return False
    host = urlsplit(api_base.strip() if "//" in api_base else f"//{api_base.strip()}").hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def needs_placeholder_key(model: str, params: dict) -> bool:
    """True when a call to ``model`` with ``params`` goes to a loopback ``api_base`` through a client that needs
    a key, and none is given (no ``api_key`` param, the provider's variable unset)."""
    provider = model.split("/", 1)[0]
    variable = KEYED_CLIENTS.get(provider)
    if variable is None or "api_key" in params or os.environ.get(variable):
        return False
    return is_loopback(params.get("api_base"))


#: A preflight call slower than this share of the model's timeout draws the sizing advice below.
SLOW_PREFLIGHT_SHARE = 0.25


def timeout_advice(model: str, elapsed_s: float, timeout_s: float) -> str | None:
    """Advice when ``model``'s preflight call (``max_tokens=8``) took ``elapsed_s`` seconds, at least
    :data:`SLOW_PREFLIGHT_SHARE` of its ``timeout_s``: real calls (a whole catalog in the prompt, longer
    answers) will take longer, so suggest a ``timeout_s`` of 6× the measured call (at most 3600) and a
    ``max_concurrency`` matched to the server. None when the call was quick enough."""
    if timeout_s <= 0 or elapsed_s < SLOW_PREFLIGHT_SHARE * timeout_s:
        return None
    suggested = min(3600, max(timeout_s, round(6 * elapsed_s)))
    return (
        f"{model}: its preflight call took {elapsed_s:.1f} s of its {timeout_s:g} s timeout; calls with the "
        f"catalog will take longer: set timeout_s: {suggested:g} on the model and max_concurrency to what the "
        "server runs at once (docs/local_servers.md)"
    )
