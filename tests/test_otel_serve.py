"""``POST /v1/traces`` in ``chatmon serve``: the OpenTelemetry SDK's own OTLP/HTTP exporter sends
GenAI spans to a real server (uvicorn on a port) and the conversation is stored, redacted, once;
OTLP's answers (partial success by reason, 401, 503 with Retry-After that the exporter honours);
bad bodies refused with a clear 4xx while everything else is kept."""

from __future__ import annotations

import gzip
import json
import threading
import zlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import REGISTRY
from pydantic import SecretStr
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from starlette.testclient import TestClient

from pipeline.embedded.serve import create_app
from pipeline.ingest.otel_http import Throttled
from tests.conftest import count_rows
from tests.otel_spans import chat_span, request, semconv, span
from tests.tcp_proxy import TcpProxy
from tests.test_serve_isolation import live_server

TOKEN = "otel-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PROTO = {**AUTH, "Content-Type": "application/x-protobuf"}
EMAIL = "dana.whitfield@example.org"
SKIPPED = "chatmon_otel_messages_skipped_total"


@pytest.fixture(params=["sqlite", "postgres"])
def url(request, sqlite_url: str) -> str:  # type: ignore[no-untyped-def]
    return sqlite_url if request.param == "sqlite" else request.getfixturevalue("postgres_url")


@pytest.fixture
def client(make_processor, sqlite_url: str) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    proc = make_processor(sqlite_url, serve_token=SecretStr(TOKEN))
    with TestClient(create_app(proc.settings, proc)) as c:
        c.url = sqlite_url  # type: ignore[attr-defined]
        yield c


def sdk_spans() -> list[Any]:
    """Two model calls of one conversation, recorded by the OpenTelemetry SDK as an
    instrumentation following the GenAI conventions would (the second repeats the history)."""
    recorder = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "helpdesk-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(recorder))
    tracer = provider.get_tracer("chat-app")
    system = semconv("system", "You are Acme's helpdesk.")
    calls = [([system, semconv("user", f"I never got my refund, write to {EMAIL}")],
              "I'm sorry about that. Let me look into it."),
             ([system, semconv("user", f"I never got my refund, write to {EMAIL}"),
               semconv("assistant", "I'm sorry about that. Let me look into it."),
               semconv("user", "Thanks, how long will it take?")],
              "Refunds reach your card within 5 working days.")]
    for inputs, reply in calls:
        with tracer.start_as_current_span("chat gpt-test") as s:
            s.set_attributes({
                "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-test", "gen_ai.response.model": "gpt-test-0613",
                "gen_ai.conversation.id": "otel-conv-1",
                "gen_ai.input.messages": json.dumps(inputs),
                "gen_ai.output.messages": json.dumps([semconv("assistant", reply)])})
        with tracer.start_as_current_span("GET /orders"):  # a span of the app's own
            pass
    return list(recorder.get_finished_spans())


def stored(url: str) -> list[tuple[Any, ...]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(text("select conversation_id, turn, role, text_redacted, bot_id, "
                                 "model from turns order by turn")).all()
    engine.dispose()
    return [tuple(r) for r in rows]


def test_the_sdk_exporter_stores_the_conversation_once_and_redacted(
        url: str, make_processor) -> None:  # type: ignore[no-untyped-def]
    proc = make_processor(url, serve_token=SecretStr(TOKEN))
    spans = sdk_spans()
    skipped = REGISTRY.get_sample_value(SKIPPED, {"kind": "system"}) or 0.0
    with live_server(create_app(proc.settings, proc)) as base:
        def exporter(headers: dict[str, str]) -> OTLPSpanExporter:
            return OTLPSpanExporter(endpoint=f"{base}/v1/traces", headers=headers, timeout=20,
                                    compression=Compression.Gzip)

        assert exporter({"Authorization": "Bearer wrong"}).export(spans) \
            == SpanExportResult.FAILURE
        assert count_rows(url)["turns"] == 0
        assert exporter(AUTH).export(spans) == SpanExportResult.SUCCESS
        first = count_rows(url)
        assert exporter(AUTH).export(spans) == SpanExportResult.SUCCESS  # a replay
        assert count_rows(url) == first
    rows = stored(url)
    assert [(r[1], r[2]) for r in rows] == [(0, "user"), (1, "assistant"), (2, "user"),
                                            (3, "assistant")]
    assert {r[0] for r in rows} == {"otel-conv-1"} and {r[4] for r in rows} == {"helpdesk-bot"}
    assert [r[5] for r in rows] == ["", "gpt-test-0613", "", "gpt-test-0613"]
    assert EMAIL not in rows[0][3] and "refund" in rows[0][3]  # redacted before it is stored
    assert first["dead_letters"] == 0
    # The system prompt is no turn; it is counted where it is new (once per export, twice).
    assert (REGISTRY.get_sample_value(SKIPPED, {"kind": "system"}) or 0.0) - skipped == 2


def test_partial_success_counts_refused_spans_by_reason_without_their_text(client) -> None:  # type: ignore[no-untyped-def]
    secret = "my card is 4111 1111 1111 1111 " + "x" * 30_000  # over the text limit
    good = chat_span("ps-1", [semconv("user", "Hi")], [semconv("assistant", "Hello!")])
    no_conv = chat_span("", [semconv("user", "Hi")], [semconv("assistant", "Hello!")])
    too_long = chat_span("ps-2", [semconv("user", secret)], [semconv("assistant", "Sorry")])
    capture_off = span({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai"})
    body = request(good, no_conv, too_long, capture_off).SerializeToString()
    r = client.post("/v1/traces", content=body, headers=PROTO)
    assert r.status_code == 200 and r.headers["content-type"] == "application/x-protobuf"
    answer = ExportTraceServiceResponse.FromString(r.content)
    assert answer.partial_success.rejected_spans == 2
    message = answer.partial_success.error_message
    assert "no_conversation_id x1" in message and "text_too_long x1" in message
    assert "1 GenAI span(s) carried no message content" in message and "4111" not in message
    # The good span and the refused span's reply are stored; the long turn is a dead letter.
    assert [(r[0], r[1]) for r in stored(client.url)] == [("ps-1", 0), ("ps-1", 1), ("ps-2", 1)]
    assert count_rows(client.url)["dead_letters"] == 1
    metrics = client.get("/metrics").text
    assert 'chatmon_otel_spans_total{outcome="no_content"}' in metrics


def otlp_json(conv: str) -> dict[str, Any]:
    """An export as OTLP/JSON writes it: camelCase, hex ids, 64-bit integers as strings."""
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.conversation.id": conv,
             "gen_ai.input.messages": json.dumps([semconv("user", "Bonjour")]),
             "gen_ai.output.messages": json.dumps([semconv("assistant", "Hello!")])}
    return {"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name",
                                     "value": {"stringValue": "json-bot"}}]},
        "scopeSpans": [{"scope": {"name": "manual"}, "spans": [{
            "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
            "name": "chat", "kind": 3, "startTimeUnixNano": "1795000000000000000",
            "endTimeUnixNano": "1795000001000000000",
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]
            + [{"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}}]}]}]}]}


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_json_and_compressed_bodies_get_a_json_answer(client, coding: str) -> None:  # type: ignore[no-untyped-def]
    raw = json.dumps(otlp_json("js-1")).encode()
    body = gzip.compress(raw) if coding == "gzip" else zlib.compress(raw)
    r = client.post("/v1/traces", content=body, headers={
        **AUTH, "Content-Type": "application/json", "Content-Encoding": coding})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == {}  # full success: no partialSuccess
    assert [(r[0], r[1], r[4]) for r in stored(client.url)] == [("js-1", 0, "json-bot"),
                                                                ("js-1", 1, "json-bot")]


def test_bad_bodies_get_a_clear_4xx_and_nothing_else_is_lost(client) -> None:  # type: ignore[no-untyped-def]
    good = request(chat_span("keep", [semconv("user", "Hi")], [semconv("assistant", "Hello")]))
    wire = good.SerializeToString()
    bad_utf8 = wire.replace(b"Hello", b"Hell\xff")  # a protobuf string that is not UTF-8
    cases = [
        (wire[:-7], PROTO, 400, "not a valid OTLP"),  # truncated
        (b"\x00\x01garbage", PROTO, 400, "not a valid OTLP"),
        (bad_utf8, PROTO, 400, "not a valid OTLP"),
        (wire, {**AUTH, "Content-Type": "text/plain"}, 415, "Content-Type must be"),
        (b'{"resourceSpans": [}', {**AUTH, "Content-Type": "application/json"}, 400, "JSON"),
        (b'{"resourceSpans": "\xff"}', {**AUTH, "Content-Type": "application/json"}, 400,
         "not valid UTF-8"),
        (b"not gzip", {**PROTO, "Content-Encoding": "gzip"}, 400, "not valid gzip"),
        (gzip.compress(b"\x00" * (21 << 20)), {**PROTO, "Content-Encoding": "gzip"}, 413,
         "inflates to more than"),
        (wire, {**PROTO, "Content-Encoding": "br"}, 415, "Content-Encoding must be"),
        (zlib.compress(wire)[:-4], {**PROTO, "Content-Encoding": "deflate"}, 400,
         "deflate body is truncated"),
    ]
    for body, headers, status, words in cases:
        r = client.post("/v1/traces", content=body, headers=headers)
        assert r.status_code == status, words
        assert words in (r.json()["message"] if "json" in r.headers["content-type"]
                         else _status_message(r.content)), words
    assert count_rows(client.url) == {"turns": 0, "findings": 0, "dead_letters": 0}
    # A span with 10 MB of attributes beside a good one: the other attributes are not read, and
    # the good span and this one's turns are stored.
    big = chat_span("big", [semconv("user", "Hi")], [semconv("assistant", "Hello")],
                    **{"app.blob": "z" * (10 << 20)})
    body = request(big, *good.resource_spans[0].scope_spans[0].spans).SerializeToString()
    r = client.post("/v1/traces", content=body, headers=PROTO)
    assert r.status_code == 200 and ExportTraceServiceResponse.FromString(r.content) \
        .partial_success.rejected_spans == 0
    assert {row[0] for row in stored(client.url)} == {"big", "keep"}


def _status_message(content: bytes) -> str:
    from google.rpc.status_pb2 import Status

    return Status.FromString(content).message


def test_a_store_outage_answers_503_and_the_exporter_retries_after_it(
        postgres_url: str, make_processor) -> None:  # type: ignore[no-untyped-def]
    pg = make_url(postgres_url)
    proxy = TcpProxy(pg.host or "127.0.0.1", pg.port or 5432)
    via_proxy = pg.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    proc = make_processor(via_proxy, serve_token=SecretStr(TOKEN))
    body = request(chat_span("down-1", [semconv("user", "Hi")],
                             [semconv("assistant", "Hello")])).SerializeToString()
    try:
        with live_server(create_app(proc.settings, proc)) as base:
            proxy.cut()
            down = httpx.post(f"{base}/v1/traces", content=body, headers=PROTO, timeout=30)
            assert down.status_code == 503 and down.headers["retry-after"].isdigit()
            assert "unavailable" in _status_message(down.content)
            # The SDK's exporter waits Retry-After and sends again; the store is back by then.
            threading.Timer(1.0, proxy.restore).start()
            exporter = OTLPSpanExporter(endpoint=f"{base}/v1/traces", headers=AUTH, timeout=30)
            assert exporter.export(sdk_spans()) == SpanExportResult.SUCCESS
    finally:
        proxy.close()
    assert {r[0] for r in stored(postgres_url)} == {"otel-conv-1"}


def test_the_capture_off_warning_is_logged_once_a_minute_with_a_count(caplog) -> None:  # type: ignore[no-untyped-def]
    throttled = Throttled(every_s=60)
    with caplog.at_level("WARNING", logger="pipeline.ingest.otel_http"):
        for n in range(3):
            throttled.warn("export %d: no content", n)
        throttled.last -= 61  # a minute later
        throttled.warn("export %d: no content", 3)
    assert [r.getMessage() for r in caplog.records] == [
        "export 0: no content", "export 3: no content (2 more like this in the last 60 s)"]


def test_a_mapping_failure_is_a_500_in_otlp_terms_without_text(client, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import pipeline.ingest.otel_http as route

    def broken(_export, _options):  # type: ignore[no-untyped-def]
        raise KeyError("Hi")

    monkeypatch.setattr(route, "map_request", broken)
    body = request(chat_span("x", [semconv("user", "Hi")], [])).SerializeToString()
    r = client.post("/v1/traces", content=body, headers=PROTO)
    assert r.status_code == 500 and "internal error" in _status_message(r.content)
    assert "Hi" not in _status_message(r.content)
