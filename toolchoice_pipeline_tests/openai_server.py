"""A tiny OpenAI-compatible chat server on 127.0.0.1 for tests (a stand-in for vLLM, llama.cpp's server or
Ollama's ``/v1``): ``POST /v1/chat/completions`` answers with a call of the request's tool whose name appears in
the last user message (else its first tool), or with text after a tool result. It needs no key and records
each request's ``Authorization`` header and model; ``delay_s`` makes it slow (seconds, or a function of the
request's body giving them: e.g. only the preflight call slow). Hostile modes (issue 29): ``usage``
replaces the reply's usage; ``trickle_s`` sends the reply one byte every ``trickle_s`` seconds (a provider that
sends 1 byte per second; ``sent`` tells how far each reply got); ``retry_after`` answers every request 429 with that ``Retry-After`` header; ``reply_text`` answers that text;
``raw_body`` (a function giving the body's chunks) sends those bytes as they come, with no length, until the
generator ends (never, for an endless reply) or the client leaves, under ``content_encoding`` if given.

``hold`` (a function of the request's body) keeps every request it says True for waiting, unanswered, until the
test calls ``release()`` (``held`` is set when the first one waits): a run caught in the middle of a model call
for as long as the test needs, with no clock; after ``release()`` every request is answered at once."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# How often the serving loop looks for close() (socketserver's default, 0.5 s, made every close() wait ~0.5 s).
SHUTDOWN_POLL_S = 0.02


def _reply(request: dict[str, Any]) -> dict[str, Any]:
    messages, tools = request.get("messages") or [], request.get("tools") or []
    if messages and messages[-1].get("role") == "tool" or not tools:
        message: dict[str, Any] = {"role": "assistant", "content": "Done."}
        finish = "stop"
    else:
        text = next((str(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
        names = [tool["function"]["name"] for tool in tools]
        name = max((n for n in names if n.lower() in text.lower()), key=len, default=names[0])
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": name, "arguments": "{}"}}],
        }
        finish = "tool_calls"
    return {
        "id": "chatcmpl-local",
        "object": "chat.completion",
        "created": 1,
        "model": request.get("model", "local"),
        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


class OpenAICompatibleServer:
    """Started on a free port of 127.0.0.1 (``api_base`` ends in ``/v1``); ``close()`` stops it."""

    def __init__(
        self,
        delay_s: float | Callable[[dict[str, Any]], float] = 0.0,
        usage: dict[str, Any] | None = None,
        trickle_s: float = 0.0,
        retry_after: str | None = None,
        reply_text: str | None = None,
        raw_body: Callable[[], Iterable[bytes]] | None = None,
        content_encoding: str | None = None,
        hold: Callable[[dict[str, Any]], bool] | None = None,
    ):
        self.requests: list[dict[str, Any]] = []
        self.authorization: list[str | None] = []
        # Per request: [bytes of the reply body written so far, the body's length] (the trickle's progress).
        self.sent: list[list[int]] = []
        self.accept_encoding: list[str | None] = []
        self.held = threading.Event()
        self._released = threading.Event()
        hold_lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the http.server name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self.send_error(404)
                    return
                outer.requests.append(body)
                outer.authorization.append(self.headers.get("Authorization"))
                outer.accept_encoding.append(self.headers.get("Accept-Encoding"))
                if hold is not None and not outer._released.is_set():
                    with hold_lock:  # one request at a time through the test's function
                        held = hold(body)
                    if held:
                        outer.held.set()
                        outer._released.wait()
                delay = delay_s(body) if callable(delay_s) else delay_s
                if delay:
                    time.sleep(delay)
                reply = _reply(body)
                if usage is not None:
                    reply["usage"] = usage
                if reply_text is not None:
                    reply["choices"][0]["message"] = {"role": "assistant", "content": reply_text}
                data = json.dumps(reply).encode()
                if raw_body is not None:
                    self._send_raw(raw_body())
                    return
                try:
                    if retry_after is not None:
                        data = b'{"error": {"message": "rate limited", "type": "rate_limit_error"}}'
                        self.send_response(429)
                        self.send_header("Retry-After", retry_after)
                    else:
                        self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    progress = [0, len(data)]
                    outer.sent.append(progress)
                    if not trickle_s:
                        self.wfile.write(data)
                        progress[0] = len(data)
                    for index in range(len(data) if trickle_s else 0):
                        self.wfile.write(data[index : index + 1])
                        self.wfile.flush()
                        progress[0] = index + 1
                        time.sleep(trickle_s)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

            def _send_raw(self, chunks: Iterable[bytes]) -> None:
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    if content_encoding is not None:
                        self.send_header("Content-Encoding", content_encoding)
                    self.send_header("Connection", "close")  # the body ends when the connection does
                    self.end_headers()
                    for chunk in chunks:
                        self.wfile.write(chunk)
                except (BrokenPipeError, ConnectionResetError):  # the client stopped reading and left
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(SHUTDOWN_POLL_S,), daemon=True).start()
        self.api_base = f"http://127.0.0.1:{self.server.server_port}/v1"

    def release(self) -> None:
        """Answer the held requests (a client that left meanwhile gets nothing) and every later one at once."""
        self._released.set()

    def close(self) -> None:
        """Stop serving (within :data:`SHUTDOWN_POLL_S`); requests still in hand finish on their own threads."""
        self.release()
        self.server.shutdown()
        self.server.server_close()
