"""Planted personal data in spans never reaches the store raw: the planted values of
tests/test_pii_never_stored.py, sent through ``POST /v1/traces`` in message text (each
convention), in a span attribute listed as metadata, in one not listed, in a span refused for
want of a conversation id and in a turn refused by validation. Every column of every table, the
OTLP answers and the logs are searched for them."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from pydantic import SecretStr
from sqlalchemy import create_engine, inspect, text

from pipeline.embedded.serve import create_app
from tests.conftest import count_rows
from tests.otel_spans import chat_span, request, semconv, span
from tests.test_pii_never_stored import PLANTED, _needles
from tests.test_serve_isolation import live_server

TOKEN = "planted"
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/x-protobuf"}


def spans() -> list[Any]:
    p = PLANTED
    first = [semconv("user", f"Hi, I'm {p['name']}, email {p['email']}, call {p['phone']}.")]
    reply = f"Thanks {p['name']}! Refund to IBAN {p['iban']}, shipping to {p['address']}."
    genai = chat_span(
        "otel-pii-1", first, [semconv("assistant", reply)],
        **{"app.customer_email": p["email"],  # listed in the metadata attributes
           "app.customer_card": p["card"]})  # not listed: never read
    genai_2 = chat_span(
        "otel-pii-1", [*first, semconv("assistant", reply),
                       semconv("user", f"My card is {p['card']} and SSN {p['ssn']}.")],
        [semconv("assistant", f"You logged in from {p['ip']}, I see.")], start_s=5)
    events = span({"gen_ai.operation.name": "chat", "gen_ai.system": "openai",
                   "gen_ai.request.model": "gpt-test", "session.id": "otel-pii-2"},
                  events=[("gen_ai.user.message", {"content": f"SSN {p['ssn']}, {p['phone']}"}),
                          ("gen_ai.choice", {"index": 0, "message": json.dumps(
                              {"role": "assistant", "content": f"Noted, {p['name']}."})})])
    oi = span({"openinference.span.kind": "LLM", "session.id": "otel-pii-3",
               "llm.input_messages.0.message.role": "user",
               "llm.input_messages.0.message.content": f"I live at {p['address']}",
               "llm.output_messages.0.message.role": "assistant",
               "llm.output_messages.0.message.content": f"Mailing {p['email']} now."})
    no_conv = chat_span("", [semconv("user", f"card {p['card']}, {p['iban']}")],
                        [semconv("assistant", f"Hello {p['name']}")])
    too_long = chat_span("otel-pii-4", [semconv("user", f"ssn {p['ssn']} {p['email']} "
                                                + "x" * 30_000)],
                         [semconv("assistant", "Sorry")])
    return [genai, genai_2, events, oi, no_conv, too_long]


def every_value(url: str) -> str:
    """Every column of every row of every table, as one text."""
    engine = create_engine(url)
    out = []
    with engine.connect() as conn:
        for table in inspect(conn).get_table_names():
            out += [repr(tuple(row)) for row in conn.execute(text(f"select * from {table}"))]
    engine.dispose()
    return "\n".join(out)


def test_planted_pii_sent_as_spans_is_never_stored_or_answered_raw(
        make_processor, sqlite_url: str, caplog) -> None:  # type: ignore[no-untyped-def]
    proc = make_processor(sqlite_url, serve_token=SecretStr(TOKEN),
                          otel_metadata_attributes=("app.customer_email",))
    body = request(*spans()).SerializeToString()
    # chatmon's own logs; the CLI holds text-logging libraries (presidio) at WARNING
    # (pipeline/logs.py), which this in-process server does not set up.
    app = create_app(proc.settings, proc)
    with caplog.at_level(logging.DEBUG, logger="pipeline"), live_server(app) as base:
        answer = httpx.post(f"{base}/v1/traces", content=body, headers=HEADERS, timeout=60)
    assert answer.status_code == 200
    partial = ExportTraceServiceResponse.FromString(answer.content).partial_success
    assert partial.rejected_spans == 2, partial.error_message
    rows = count_rows(sqlite_url)
    assert rows["turns"] >= 8 and rows["findings"] >= 1 and rows["dead_letters"] == 1, rows
    stored = every_value(sqlite_url)
    assert "app.customer_email" in stored  # the listed attribute reached metadata, redacted
    logs = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("pipeline"))
    assert "2 of 6 spans refused" in logs
    for needle in _needles():
        assert needle not in stored, f"raw {needle!r} in the store"
        assert needle not in partial.error_message and needle not in logs, needle
