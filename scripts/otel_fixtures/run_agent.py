"""Run the ops agent under one producer's instrumentation and write its OTLP JSON (inside the producer's venv).

    python run_agent.py PRODUCER OUT_DIR BASE_URL [--no-content]

PRODUCER: openai-v2, openllmetry, openlit, langtrace (the agent loop on the ``openai`` client) or pydantic-ai.
Writes ``OUT_DIR/traces.jsonl`` and, when the producer emits logs, ``OUT_DIR/logs.jsonl``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from ops_agent import CONVERSATIONS, SYSTEM, TOOLS, run_tool
from otlp_files import FileSpanExporter, file_log_exporter

MODEL = "gpt-4o-mini"


def providers(out: Path):
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": "ops-agent"}))
    tracer_provider.add_span_processor(
        BatchSpanProcessor(FileSpanExporter(out / "traces.jsonl"), schedule_delay_millis=600_000)
    )
    trace.set_tracer_provider(tracer_provider)
    logger_provider = None
    try:
        from opentelemetry._logs import set_logger_provider
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

        logger_provider = LoggerProvider(resource=tracer_provider.resource)
        logger_provider.add_log_record_processor(
            BatchLogRecordProcessor(file_log_exporter(out / "logs.jsonl"), schedule_delay_millis=600_000)
        )
        set_logger_provider(logger_provider)
        try:
            from opentelemetry._events import set_event_logger_provider
            from opentelemetry.sdk._events import EventLoggerProvider

            set_event_logger_provider(EventLoggerProvider(logger_provider))
        except ImportError:
            pass
    except ImportError:
        pass
    return tracer_provider, logger_provider


def openai_agent(base_url: str, tracer) -> None:
    """The agent loop on the plain ``openai`` client: each conversation inside one parent span (one trace)."""
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key="unused-by-the-fake-server")
    tools = [{"type": "function", "function": tool} for tool in TOOLS]
    for name, prompts in CONVERSATIONS:
        with tracer.start_as_current_span(f"ops-agent {name}"):
            messages: list[dict] = [{"role": "system", "content": SYSTEM}]
            for prompt in prompts:
                messages.append({"role": "user", "content": prompt})
                while True:
                    reply = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
                    message = reply.choices[0].message
                    messages.append(message.model_dump(exclude_none=True))
                    if not message.tool_calls:
                        break
                    for call in message.tool_calls:
                        result = run_tool(call.function.name, json.loads(call.function.arguments))
                        messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})


def pydantic_ai_agent(base_url: str, tracer, content: bool) -> None:
    """The same agent as a Pydantic AI agent; prompt 4 asks for a structured answer (an output tool)."""
    from pydantic import BaseModel
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings

    try:
        from pydantic_ai.models.openai import OpenAIChatModel as OpenAIModel
    except ImportError:
        from pydantic_ai.models.openai import OpenAIModel
    try:
        from pydantic_ai.providers.openai import OpenAIProvider

        model = OpenAIModel(MODEL, provider=OpenAIProvider(base_url=base_url, api_key="unused-by-the-fake-server"))
    except ImportError:  # pragma: no cover - very old releases
        model = OpenAIModel(MODEL, base_url=base_url, api_key="unused-by-the-fake-server")

    class Summary(BaseModel):
        summary: str

    Agent.instrument_all(InstrumentationSettings(include_content=content))
    agent = Agent(model, system_prompt=SYSTEM)
    for tool in TOOLS:
        agent.tool_plain(_tool_function(tool))
    for name, prompts in CONVERSATIONS:
        with tracer.start_as_current_span(f"ops-agent {name}"):
            history = None
            for prompt in prompts:
                output_type = Summary if "summary" in prompt else str
                result = agent.run_sync(prompt, message_history=history, output_type=output_type)
                history = result.all_messages()


def _tool_function(tool: dict):
    """A typed function for a tool of :data:`ops_agent.TOOLS`: Pydantic AI takes the schema from its signature
    and the description from its docstring."""
    name = tool["name"]
    if name == "query_logs":

        def function(service: str, query: str, since_minutes: int = 60) -> dict:
            return run_tool(name, {"service": service, "query": query, "since_minutes": since_minutes})
    elif name == "page_oncall":

        def function(team: str, message: str) -> dict:
            return run_tool(name, {"team": team, "message": message})
    else:

        def function(service: str) -> dict:
            return run_tool(name, {"service": service})

    function.__name__ = function.__qualname__ = name
    function.__doc__ = tool["description"]
    return function


def main() -> None:
    producer, out, base_url = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    content = "--no-content" not in sys.argv
    out.mkdir(parents=True, exist_ok=True)
    tracer_provider, logger_provider = providers(out)
    tracer = trace.get_tracer("ops-agent")
    if producer == "openai-v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument()
    elif producer == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument()
    elif producer == "openlit":
        import openlit

        prices = out / "pricing.json"  # a local price list: openlit fetches one from the internet otherwise
        prices.write_text("{}")
        openlit.init(
            application_name="ops-agent",
            disable_metrics=True,
            capture_message_content=content,
            pricing_json=str(prices),
            disabled_instrumentors=["httpx", "requests", "urllib3"],
        )
        prices.unlink()
    elif producer == "langtrace":
        from langtrace_python_sdk import langtrace

        # a local api_host: without one (and no Langtrace API key) init returns before instrumenting anything;
        # the spans go through the tracer provider set above (Langtrace's own is not made the global one)
        langtrace.init(
            api_host="http://127.0.0.1:9/api/trace",
            custom_remote_exporter=FileSpanExporter(out / "traces.jsonl"),
            batch=False,
            write_spans_to_console=False,
        )
    if producer == "pydantic-ai":
        pydantic_ai_agent(base_url, tracer, content)
    else:
        openai_agent(base_url, tracer)
    tracer_provider.force_flush()
    if logger_provider is not None:
        logger_provider.force_flush()


if __name__ == "__main__":
    main()
