"""OTLP on the wire: a trace export body (protobuf or JSON, maybe gzip) as an
``ExportTraceServiceRequest``, and OTLP's answers (partial success, or a ``google.rpc.Status``
for a refused body) in the encoding the client spoke.

Shared by ``POST /v1/traces`` and the Kafka worker (the Collector's Kafka exporter writes the
same messages, ``otlp_proto`` or ``otlp_json``). Errors name what is wrong with the body, never
a value from it.
"""

from __future__ import annotations

import zlib
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from pipeline.ingest import limits

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
# Attributes nest (kvlist in array in kvlist): deeper than the event limit, still bounded so
# json.loads never recurses far.
JSON_DEPTH = 64
ID_KEYS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


class WireError(ValueError):
    """A body that is not an OTLP trace export; ``status`` is the HTTP answer it deserves."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def media_type(content_type: str | None) -> str:
    """``application/x-protobuf`` or ``application/json`` from a Content-Type header (any
    parameters dropped); WireError (415) for anything else."""
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind in (PROTOBUF, "application/protobuf"):
        return PROTOBUF
    if kind == JSON:
        return JSON
    raise WireError("Content-Type must be application/x-protobuf or application/json "
                    "(OTLP/HTTP)", 415)


# Content-Encoding -> zlib's wbits: gzip (what OTLP requires), and deflate (zlib), which the
# Python SDK's exporter also offers.
CODINGS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def inflate(body: bytes, coding: str, limit: int) -> bytes:
    """A compressed body inflated to at most ``limit`` bytes (WireError 413 beyond: a small body
    may inflate to gigabytes)."""
    inflater = zlib.decompressobj(CODINGS[coding])
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise WireError(f"Content-Encoding is {coding} but the body is not valid {coding}") \
            from exc
    if len(out) > limit or inflater.unconsumed_tail:
        raise WireError(f"the body inflates to more than {limit} bytes", 413)
    if not inflater.eof:
        raise WireError(f"the {coding} body is truncated")
    return out


def decode(body: bytes, kind: str, encoding: str | None = None,
           limit: int = 20 * 1024 * 1024) -> Any:
    """``body`` as an ``ExportTraceServiceRequest``."""
    coding = (encoding or "").strip().lower()
    if coding in CODINGS:
        body = inflate(body, coding, limit)
    elif coding not in ("", "identity"):
        raise WireError("Content-Encoding must be gzip, deflate or none", 415)
    request = trace_service_pb2.ExportTraceServiceRequest()
    if kind == PROTOBUF:
        try:
            request.ParseFromString(body)
        except DecodeError as exc:  # truncated, not protobuf, or a string that is not UTF-8
            raise WireError("the body is not a valid OTLP ExportTraceServiceRequest "
                            "(protobuf)") from exc
        return request
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WireError(f"the JSON body is not valid UTF-8 (byte {exc.start})") from exc
    try:
        payload = limits.loads(text, JSON_DEPTH)
        json_format.ParseDict(_without_ids(payload), request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, AttributeError) as exc:
        raise WireError("the body is not a valid OTLP ExportTraceServiceRequest "
                        "(JSON)") from exc
    return request


def _without_ids(payload: Any) -> Any:
    """The payload without trace and span ids: OTLP/JSON writes them as hex where protobuf's
    JSON mapping expects base64, and the mapping never reads them."""
    if not isinstance(payload, dict):
        raise TypeError("not an object")
    for rs in _items(payload, "resourceSpans", "resource_spans"):
        for ss in _items(rs, "scopeSpans", "scope_spans"):
            for span in _items(ss, "spans"):
                for key in ID_KEYS:
                    span.pop(key, None)
                span.pop("links", None)
    return payload


def _items(obj: dict[str, Any], *keys: str) -> list[dict[str, Any]]:
    """The objects in the list under the first of ``keys`` present (JSON names either case)."""
    for key in keys:
        value = obj.get(key)
        if isinstance(value, list):
            return [v for v in value if isinstance(v, dict)]
    return []


def success(rejected_spans: int = 0, message: str = "", kind: str = PROTOBUF
            ) -> tuple[bytes, str]:
    """An ``ExportTraceServiceResponse`` body and its content type."""
    response = trace_service_pb2.ExportTraceServiceResponse()
    if rejected_spans or message:
        response.partial_success.rejected_spans = rejected_spans
        response.partial_success.error_message = message
    return _encode(response, kind)


def status(code: int, message: str, kind: str = PROTOBUF) -> tuple[bytes, str]:
    """A ``google.rpc.Status`` body (OTLP's answer to a refused request)."""
    return _encode(status_pb2.Status(code=code, message=message), kind)


def _encode(message: Any, kind: str) -> tuple[bytes, str]:
    if kind == JSON:
        return json_format.MessageToJson(message, indent=None).encode(), JSON
    return message.SerializeToString(), PROTOBUF
