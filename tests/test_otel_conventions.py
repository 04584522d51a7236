"""One dialog traced by each convention chatmon reads (GenAI message attributes, the older GenAI
span events, OpenInference's flattened attributes), recorded with the OpenTelemetry SDK's tracer
by hand as an application would (each model call repeats the history) and sent by the SDK's
OTLP/HTTP exporter to a real ``chatmon serve``: stored as the same turns and findings as the same
dialog sent as chatmon events to ``/v1/turns``, once; the same spans sent again store nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Span, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import SecretStr
from sqlalchemy import create_engine, text

from pipeline.embedded.serve import create_app
from pipeline.scoring.suite import DetectorSuite
from tests.conftest import count_rows
from tests.otel_spans import semconv
from tests.test_serve_isolation import live_server

TOKEN = "conventions"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BOT, MODEL = "helpdesk-bot", "gpt-test"
EMAIL = "lena.marquardt@example.org"
PHONE = "(212) 555-0183"
SYSTEM = "You are Acme's helpdesk."
# (user, reply): a user turn with an email, a rude reply that leaks a phone number.
DIALOG = [(f"I'm locked out of my account, write to {EMAIL}",
           "Sorry about that, I've sent a reset link to your address."),
          ("It never came, this is useless.",
           f"Stop whining, you idiot, and check your spam folder or call {PHONE}."),
          ("Fine, thanks.", "Anything else I can do?")]

Messages = list[tuple[str, str]]


def genai_attributes(span: Span, inputs: Messages, reply: str, conv: str) -> None:
    span.set_attributes({
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
        "gen_ai.request.model": MODEL, "gen_ai.response.model": MODEL,
        "gen_ai.conversation.id": conv,
        "gen_ai.input.messages": json.dumps([semconv(r, t) for r, t in inputs]),
        "gen_ai.output.messages": json.dumps([semconv("assistant", reply)])})


def genai_events(span: Span, inputs: Messages, reply: str, conv: str) -> None:
    span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.system": "openai",
                         "gen_ai.request.model": MODEL, "gen_ai.conversation.id": conv})
    for role, said in inputs:
        span.add_event(f"gen_ai.{role}.message", {"content": said})
    span.add_event("gen_ai.choice", {"index": 0, "finish_reason": "stop", "message": json.dumps(
        {"role": "assistant", "content": reply})})


def openinference(span: Span, inputs: Messages, reply: str, conv: str) -> None:
    attrs: dict[str, Any] = {"openinference.span.kind": "LLM", "llm.model_name": MODEL,
                             "session.id": conv}
    for n, (role, said) in enumerate(inputs):
        attrs[f"llm.input_messages.{n}.message.role"] = role
        attrs[f"llm.input_messages.{n}.message.content"] = said
    attrs["llm.output_messages.0.message.role"] = "assistant"
    attrs["llm.output_messages.0.message.content"] = reply
    span.set_attributes(attrs)


CONVENTIONS: dict[str, Callable[[Span, Messages, str, str], None]] = {
    "genai_attributes": genai_attributes, "genai_events": genai_events,
    "openinference": openinference}


def record(convention: str, conv: str) -> list[Any]:
    """DIALOG's model calls as spans of the SDK, each carrying the history so far, with an
    app span of another kind between them."""
    recorder = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": BOT}))
    provider.add_span_processor(SimpleSpanProcessor(recorder))
    tracer = provider.get_tracer("chat-app")
    history: Messages = [("system", SYSTEM)]
    for user, reply in DIALOG:
        history.append(("user", user))
        with tracer.start_as_current_span(f"chat {MODEL}") as s:
            CONVENTIONS[convention](s, list(history), reply, conv)
        with tracer.start_as_current_span("GET /account"):
            pass
        history.append(("assistant", reply))
    return list(recorder.get_finished_spans())


def as_events(conv: str) -> list[dict[str, Any]]:
    turns = [t for pair in DIALOG for t in zip(("user", "assistant"), pair, strict=True)]
    return [{"conversation_id": conv, "turn": i, "role": role, "text": said, "bot_id": BOT,
             "ts": f"2026-11-20T10:00:{i:02d}Z", **({"model": MODEL} if role == "assistant"
                                                   else {})}
            for i, (role, said) in enumerate(turns)]


def stored(url: str, conv: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        turns = conn.execute(text("select turn, role, text_redacted, bot_id, model from turns "
                                  "where conversation_id = :c order by turn"), {"c": conv}).all()
        findings = conn.execute(text(
            "select turn, role, label, score, flagged, span_start, span_end from findings "
            "where conversation_id = :c order by turn, label, span_start"), {"c": conv}).all()
    engine.dispose()
    return [tuple(r) for r in turns], [tuple(r) for r in findings]


@pytest.fixture(scope="module")
def suite(pii_suite) -> DetectorSuite:  # type: ignore[no-untyped-def]
    """PII and toxicity: the user's email and the reply's phone, and the reply's insult."""
    s = DetectorSuite([*pii_suite.detectors, *DetectorSuite.from_names(
        ["toxicity"], encoder_backend="onnx-int8").detectors], encoder_backend="onnx-int8")
    s.load()
    return s


@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_each_convention_stores_the_dialog_as_v1_turns_does(
        convention: str, make_processor, suite, sqlite_url: str) -> None:  # type: ignore[no-untyped-def]
    proc = make_processor(sqlite_url, suite, serve_token=SecretStr(TOKEN))
    conv = f"{convention}-conv"
    spans = record(convention, conv)
    with live_server(create_app(proc.settings, proc)) as base:
        exporter = OTLPSpanExporter(endpoint=f"{base}/v1/traces", headers=AUTH, timeout=30)
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        once = count_rows(sqlite_url)
        assert exporter.export(spans) == SpanExportResult.SUCCESS  # the same spans again
        assert count_rows(sqlite_url) == once
        sent = httpx.post(f"{base}/v1/turns", json=as_events(f"{conv}-jsonl"), headers=AUTH,
                          timeout=60)
        assert sent.status_code == 200, sent.text
    turns, findings = stored(sqlite_url, conv)
    assert [(t[0], t[1]) for t in turns] == [(i, ("user", "assistant")[i % 2]) for i in range(6)]
    assert once["turns"] == 6 and once["dead_letters"] == 0
    assert EMAIL not in turns[0][2] and "locked out" in turns[0][2]  # redacted
    assert PHONE not in turns[3][2] and "idiot" in turns[3][2]
    assert any(f[0] == 0 and f[2] == "pii.email_address" and f[4] for f in findings), findings
    flagged = {(f[0], f[2].split(".")[0]) for f in findings if f[4]}
    assert {(3, "pii"), (3, "toxicity")} <= flagged, findings  # the reply's leak and insult
    assert (turns, findings) == stored(sqlite_url, f"{conv}-jsonl")
