"""The small ops agent every producer records: 4 described tools, 8 prompts in two conversations.

Standard library only: imported by the fake server (run by make_fixtures.py) and by the agent runners (run
inside each producer's own virtual environment).
"""

from __future__ import annotations

import json

SYSTEM = "You are an on-call assistant for a small web shop. Use the tools to inspect and act on services."

TOOLS = [
    {
        "name": "get_service_status",
        "description": "Current health of one service: status, error rate and p95 latency.",
        "parameters": {
            "type": "object",
            "properties": {"service": {"type": "string", "description": "service name"}},
            "required": ["service"],
        },
    },
    {
        "name": "query_logs",
        "description": "Search one service's logs over the last minutes; returns matching lines.",
        "parameters": {
            "type": "object",
            "properties": {
                "service": {"type": "string"},
                "query": {"type": "string"},
                "since_minutes": {"type": "integer"},
            },
            "required": ["service", "query"],
        },
    },
    {
        "name": "restart_service",
        "description": "Restart every instance of one service (rolling restart).",
        "parameters": {"type": "object", "properties": {"service": {"type": "string"}}, "required": ["service"]},
    },
    {
        "name": "page_oncall",
        "description": "Page the on-call engineer of a team with a short message.",
        "parameters": {
            "type": "object",
            "properties": {"team": {"type": "string"}, "message": {"type": "string"}},
            "required": ["team", "message"],
        },
    },
]

# Two conversations (one trace each); prompt 4 asks for a structured answer where the framework supports it,
# prompt 5 is a follow-up to it.
CONVERSATIONS = [
    (
        "checkout-incident",
        [
            "Is the checkout service healthy right now?",
            "Show me the error logs for checkout from the last 30 minutes.",
            "Restart checkout please.",
            "Thanks, that's all for the restart.",
            "Give me a one-line incident summary.",
            "Now page the payments team with it.",
        ],
    ),
    (
        "search-latency",
        [
            "What's the status of the search service?",
            "Page the search on-call: search latency is high.",
        ],
    ),
]

SUMMARY = "checkout error rate 12% after a bad deploy; restarted, recovering"


def run_tool(name: str, arguments: dict) -> dict:
    """The fake tools' results (deterministic)."""
    service = arguments.get("service") or arguments.get("team") or "?"
    if name == "get_service_status":
        return {
            "service": service,
            "status": "degraded" if service == "checkout" else "ok",
            "error_rate": 0.12 if service == "checkout" else 0.001,
            "p95_ms": 840,
        }
    if name == "query_logs":
        return {"lines": [f"{service} ERROR payment gateway timeout after 5000 ms"] * 2}
    if name == "restart_service":
        return {"service": service, "restarted_instances": 3}
    if name == "page_oncall":
        return {"paged": service, "incident": "INC-1042"}
    return {"error": f"unknown tool {name}"}


def _service(text: str) -> str:
    for name in ("checkout", "search", "payments"):
        if name in text:
            return name
    return "checkout"


def choose(messages: list[dict], tool_names: list[str]) -> tuple[str | None, list[tuple[str, dict]]]:
    """The fake model's reply to an OpenAI chat request: (text, [(tool, arguments)]).

    After a tool result it answers in text; a summary request gets plain text first (a framework expecting a
    structured answer then asks again), and the structured answer (the ``final_result`` output tool when
    offered, JSON text otherwise) once the framework asks again.
    """
    last = messages[-1]
    if last.get("role") == "tool":
        return "Done: " + str(last.get("content"))[:80], []
    text = _content(last).lower()
    if "fix the errors" in text or "validation" in text:  # the framework asks again for a structured answer
        if "final_result" in tool_names:
            return None, [("final_result", {"summary": SUMMARY})]
        return json.dumps({"summary": SUMMARY}), []
    if "summary" in text:
        return SUMMARY, []
    if "status" in text or "healthy" in text:
        return None, [("get_service_status", {"service": _service(text)})]
    if "logs" in text:
        return None, [("query_logs", {"service": _service(text), "query": "level:error", "since_minutes": 30})]
    if "restart" in text and "thanks" not in text:
        return None, [("restart_service", {"service": _service(text)})]
    if "page" in text:
        team = "payments" if "payments" in text else _service(text)
        return None, [
            ("page_oncall", {"team": team, "message": SUMMARY if team == "payments" else "search latency is high"})
        ]
    return "You're welcome.", []


def _content(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else json.dumps(content)
