"""The application side of tests/test_otel_instrumentations.py, run in a process of its own.

The ``openai`` client, instrumented by ``opentelemetry-instrumentation-openai-v2`` (GenAI
conventions) or ``openinference-instrumentation-openai`` (OpenInference), holds one conversation
with a bot and the SDK's OTLP/HTTP exporter sends the spans to ``chatmon serve``. It runs apart
from the test process because ``openai`` brings ``httpx2``, and with ``httpx2`` importable
starlette's TestClient changes transport for every other test: ``make test`` installs these
packages into ``.venv/otel-clients`` and the test puts that folder on ``PYTHONPATH``. Content
capture and the semantic-convention opt-in come from the environment, as in an application.

    python tests/otel_client.py {openai-v2,openinference} --chatmon URL --bot URL --token T \
        --conversation ID --dialog '{"system": "...", "users": ["...", "..."]}'

Exits 0 when every export succeeded, 2 when one did not (the exporter itself only logs it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import openai
from opentelemetry import baggage, context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

CONVERSATION_KEY = "chat.conversation_id"


class ConversationFromBaggage(SpanProcessor):
    """What an application adds so that the GenAI spans say which conversation they belong to:
    the id it keeps in baggage, as ``gen_ai.conversation.id``."""

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        value = baggage.get_baggage(CONVERSATION_KEY, parent_context)
        if value is not None:
            span.set_attribute("gen_ai.conversation.id", str(value))


class Checked(SpanExporter):
    """The OTLP exporter, remembering failed exports so the process can say so."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.failed = 0

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        result = self.inner.export(spans)
        self.failed += result != SpanExportResult.SUCCESS
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()


class Attached(AbstractContextManager[None]):
    """Attach a context for a ``with`` block (the API has none for a bare context)."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx

    def __enter__(self) -> None:
        self.token = context.attach(self.ctx)

    def __exit__(self, *exc: object) -> None:
        context.detach(self.token)


def converse(bot: str, dialog: dict[str, Any], around: Callable[[], Any]) -> None:
    """One call per user message, each repeating the history (as chat applications do)."""
    client = openai.OpenAI(base_url=bot, api_key="not-used", max_retries=0)
    history: list[dict[str, str]] = [{"role": "system", "content": dialog["system"]}]
    for user in dialog["users"]:
        history.append({"role": "user", "content": user})
        with around():
            reply = client.chat.completions.create(model="bot-llm", messages=history)
        history.append({"role": "assistant", "content": reply.choices[0].message.content or ""})


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("instrumentation", choices=["openai-v2", "openinference"])
    parser.add_argument("--chatmon", required=True)
    parser.add_argument("--bot", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--conversation", required=True)
    parser.add_argument("--dialog", required=True, type=json.loads)
    args = parser.parse_args(argv)

    exporter = Checked(OTLPSpanExporter(endpoint=f"{args.chatmon}/v1/traces", timeout=30,
                                        headers={"Authorization": f"Bearer {args.token}"}))
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    provider.add_span_processor(ConversationFromBaggage())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    around: Callable[[], Any]
    if args.instrumentation == "openai-v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        ctx = baggage.set_baggage(CONVERSATION_KEY, args.conversation)
        around = lambda: Attached(ctx)  # noqa: E731
        instrumentor: Any = OpenAIInstrumentor()
    else:
        from openinference.instrumentation import using_session
        from openinference.instrumentation.openai import OpenAIInstrumentor as OIInstrumentor

        around = lambda: using_session(args.conversation)  # noqa: E731  OpenInference's session.id
        instrumentor = OIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        converse(args.bot, args.dialog, around)
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    if exporter.failed:
        print(f"{exporter.failed} span export(s) failed", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
