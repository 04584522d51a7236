"""The official instrumentations end to end: the ``openai`` client, instrumented by
``opentelemetry-instrumentation-openai-v2`` (GenAI conventions) or
``openinference-instrumentation-openai`` (OpenInference), talks to a local chat server that plays
the bot; the SDK's OTLP/HTTP exporter sends the spans to a real ``chatmon serve``, which stores
the conversation. Skipped where those packages are not installed (they are not in the dev
extra: see docs/otel.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import create_engine, text

from pipeline.embedded.serve import create_app
from tests.test_serve_isolation import live_server

openai = pytest.importorskip("openai")
pytest.importorskip("opentelemetry.instrumentation.openai_v2")
pytest.importorskip("openinference.instrumentation.openai")

from opentelemetry import baggage, context  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402

TOKEN = "instrumented"
EMAIL = "sam.okafor@example.net"
CONVERSATION_KEY = "chat.conversation_id"


async def completions(request: Any) -> Any:
    """The bot: an OpenAI-compatible chat completion that answers the last user message."""
    from starlette.responses import JSONResponse

    body = await request.json()
    last = body["messages"][-1]["content"]
    reply = "Sorry about the wait, I've sent a reset link." if "password" in last \
        else "Anything else I can do?"
    return JSONResponse({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_795_000_000,
        "model": "bot-llm-2026-11", "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": reply}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 8, "total_tokens": 17}})


class ConversationFromBaggage(SpanProcessor):
    """What an application adds so that the GenAI spans say which conversation they belong to:
    the id it keeps in baggage, as ``gen_ai.conversation.id``."""

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        value = baggage.get_baggage(CONVERSATION_KEY, parent_context)
        if value is not None:
            span.set_attribute("gen_ai.conversation.id", str(value))


@pytest.fixture
def endpoints(make_processor, sqlite_url: str) -> Iterator[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    from starlette.applications import Starlette
    from starlette.routing import Route

    proc = make_processor(sqlite_url, serve_token=SecretStr(TOKEN))
    bot = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    with live_server(create_app(proc.settings, proc)) as chatmon, live_server(bot) as bot_url:
        yield chatmon, f"{bot_url}/v1", sqlite_url


def provider(chatmon: str) -> TracerProvider:
    tp = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    tp.add_span_processor(ConversationFromBaggage())
    tp.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
        endpoint=f"{chatmon}/v1/traces", headers={"Authorization": f"Bearer {TOKEN}"})))
    return tp


def two_calls(bot: str, around: Callable[[], Any]) -> None:
    """A conversation of two calls, the second repeating the history."""
    client = openai.OpenAI(base_url=bot, api_key="not-used", max_retries=0)
    history = [{"role": "system", "content": "You are Acme's support bot."},
               {"role": "user", "content": f"I forgot my password, I'm {EMAIL}"}]
    for follow_up in ("Thanks!", None):
        with around():
            reply = client.chat.completions.create(model="bot-llm", messages=history)
        if follow_up is None:
            break
        history += [{"role": "assistant", "content": reply.choices[0].message.content},
                     {"role": "user", "content": follow_up}]


def stored(url: str) -> list[tuple[Any, ...]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(text("select conversation_id, turn, role, text_redacted, bot_id, "
                                 "model from turns order by turn")).all()
    engine.dispose()
    return [tuple(r) for r in rows]


def check_conversation(url: str, conversation: str) -> None:
    rows = stored(url)
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (conversation, 0, "user"), (conversation, 1, "assistant"), (conversation, 2, "user"),
        (conversation, 3, "assistant")]
    assert {r[4] for r in rows} == {"support-bot"}
    assert [r[5] for r in rows if r[2] == "assistant"] == ["bot-llm-2026-11"] * 2
    assert EMAIL not in rows[0][3] and "password" in rows[0][3]
    assert rows[3][3] == "Anything else I can do?"


def test_opentelemetry_openai_v2_instrumentation(endpoints, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from opentelemetry.instrumentation._semconv import _OpenTelemetrySemanticConventionStability
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    chatmon, bot, url = endpoints
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "span_only")
    # The opt-in is read once per process; another test may have read it without.
    monkeypatch.setattr(_OpenTelemetrySemanticConventionStability, "_initialized", False)
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider(chatmon))
    try:
        def conversation() -> Any:
            return _attached(baggage.set_baggage(CONVERSATION_KEY, "v2-conv"))

        two_calls(bot, conversation)
        check_conversation(url, "v2-conv")
        # Capture off (the instrumentation's default): the calls are counted, no turn stored.
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "no_content")
        before = no_content()
        two_calls(bot, lambda: _attached(baggage.set_baggage(CONVERSATION_KEY, "v2-off")))
        assert {r[0] for r in stored(url)} == {"v2-conv"}
        assert no_content() - before == 2
    finally:
        instrumentor.uninstrument()


def no_content() -> float:
    """The process-wide count of capture-off spans (serve runs in this process, in a thread)."""
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value("chatmon_otel_spans_total", {"outcome": "no_content"}) or 0.0


def test_openinference_openai_instrumentation(endpoints) -> None:  # type: ignore[no-untyped-def]
    from openinference.instrumentation import using_session
    from openinference.instrumentation.openai import OpenAIInstrumentor

    chatmon, bot, url = endpoints
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider(chatmon))
    try:
        two_calls(bot, lambda: using_session("oi-conv"))  # OpenInference's session.id
    finally:
        instrumentor.uninstrument()
    check_conversation(url, "oi-conv")


class _attached:
    """Attach a context for the ``with`` block (the OpenTelemetry API has no context manager
    for a bare context)."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx

    def __enter__(self) -> None:
        self.token = context.attach(self.ctx)

    def __exit__(self, *exc: object) -> None:
        context.detach(self.token)
