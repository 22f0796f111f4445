"""A fake OpenAI-compatible chat completions server on 127.0.0.1 (standard library only).

``POST /v1/chat/completions`` answers with :func:`ops_agent.choose`'s reply (non-streaming only; the agents
do not stream). Run it alone with ``python fake_openai.py PORT``.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ops_agent import choose

_ids = itertools.count(1)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        names = [t.get("function", {}).get("name") for t in body.get("tools") or []]
        text, calls = choose(body.get("messages") or [], names)
        number = next(_ids)
        tool_calls = [
            {
                "id": f"call_{number}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for i, (name, arguments) in enumerate(calls)
        ]
        message = {"role": "assistant", "content": text}
        if tool_calls:
            message["tool_calls"] = tool_calls
        usage = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
        reply = {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": 1764590000,
            "model": body.get("model", "fake-model"),
            "usage": usage,
            "system_fingerprint": "fake",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if tool_calls else "stop",
                }
            ],
        }
        self._send(200, reply)

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def start(port: int = 0) -> ThreadingHTTPServer:
    """Start the server in a daemon thread; ``server.server_address[1]`` is its port."""
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0), _Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
