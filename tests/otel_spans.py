"""Builders for OTLP trace exports in the three GenAI conventions (tests only): the protobuf
messages ``opentelemetry-proto`` defines, as an exporter or the Collector would send them."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

T0 = 1_795_000_000_000_000_000  # 2026-11-18T... in ns since the epoch


def value(v: Any) -> AnyValue:
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    return AnyValue(string_value=str(v))


def kvs(attrs: dict[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=k, value=value(v)) for k, v in attrs.items()]


def semconv(role: str, text: str | None = None, **extra: Any) -> dict[str, Any]:
    parts = [{"type": "text", "content": text}] if text is not None else [
        {"type": "tool_call", "id": "call_1", "name": "lookup", "arguments": {"q": "order"}}]
    return {"role": role, "parts": parts, **extra}


def span(attrs: dict[str, Any], start_s: float = 0.0, events: list[tuple[str, dict]] = (),
         name: str = "chat gpt-test") -> Span:
    s = Span(name=name, trace_id=bytes(range(16)), span_id=bytes(range(8)),
             start_time_unix_nano=T0 + int(start_s * 1e9),
             end_time_unix_nano=T0 + int((start_s + 1.5) * 1e9), attributes=kvs(attrs))
    for ev_name, ev_attrs in events:
        s.events.add(name=ev_name, time_unix_nano=T0, attributes=kvs(ev_attrs))
    return s


def chat_span(conv: str, inputs: list[dict], outputs: list[dict], start_s: float = 0.0,
              **attrs: Any) -> Span:
    """A span of the current GenAI conventions."""
    return span({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                 "gen_ai.request.model": "gpt-test", "gen_ai.response.model": "gpt-test-0613",
                 "gen_ai.conversation.id": conv,
                 "gen_ai.input.messages": json.dumps(inputs),
                 "gen_ai.output.messages": json.dumps(outputs), **attrs}, start_s)


def request(*spans: Span, service: str = "helpdesk-bot", **resource: Any
            ) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.extend(kvs({"service.name": service, **resource}))
    rs.scope_spans.add().spans.extend(spans)
    return req
