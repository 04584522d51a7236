"""``chatmon worker`` on an OTLP topic: the OpenTelemetry Collector's Kafka exporter writes trace
exports (``otlp_proto`` or ``otlp_json``) to a topic (``otlp_spans`` by default); this stage maps
them with the one mapping of ``POST /v1/traces`` (pipeline/ingest/otel.py) and produces the turn
events onto the turns topic, keyed by conversation, where stage 1 validates, scores and stores
them as it does any event.

At-least-once: a batch's turn events are produced and acknowledged by the broker before the
batch returns (faust then commits its offsets); a crash in between produces them again, and the
store skips exact duplicates. Dead-letter rules as for turns: a record that is not an OTLP export
goes to the dead-letter topic as it came, with ``reason``/``detail``/``source``/``position``
headers; a span the mapping refuses goes there alone, as a one-span export in the topic's
encoding; a turn that fails validation is dead-lettered by stage 1.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pipeline.ingest import otel_wire as wire
from pipeline.ingest.events import PROCESSING_ERROR
from pipeline.ingest.otel import OtelOptions, map_request
from pipeline.ingest.otel_http import Throttled, summarize
from pipeline.kafka.lag import BatchSample, WorkerStats

log = logging.getLogger(__name__)
ENCODINGS = {"otlp_proto": wire.PROTOBUF, "otlp_json": wire.JSON}
# Dead-letter reason of a record that is not an OTLP trace export (docs/otel.md).
INVALID_OTLP = "invalid_otlp"
STAGE = "otlp"

# A topic's ``send``: enqueues the record, and its result is awaited until the broker has it.
Send = Callable[..., Awaitable[Awaitable[Any]]]
Admit = Callable[[Sequence[Any]], Awaitable[list[bool]]]


def one_span(request: Any, index: int) -> Any:
    """An export holding only the ``index``-th span of ``request`` (in ``map_request``'s order),
    with its resource and scope: what a refused span is dead-lettered as."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    seen = 0
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            if index < seen + len(ss.spans):
                out = ExportTraceServiceRequest()
                new_rs = out.resource_spans.add()
                new_rs.CopyFrom(rs)  # copies keep which fields were set, as the record had it
                del new_rs.scope_spans[:]
                new_ss = new_rs.scope_spans.add()
                new_ss.CopyFrom(ss)
                del new_ss.spans[:]
                new_ss.spans.append(ss.spans[index - seen])
                return out
            seen += len(ss.spans)
    raise IndexError(index)


def encode(request: Any, kind: str) -> bytes:
    if kind == wire.JSON:
        from google.protobuf import json_format

        return json_format.MessageToJson(request, indent=None).encode()
    return bytes(request.SerializeToString())


class OtlpStage:
    """OTLP records in, turn events out to the turns topic, refusals to the dead-letter topic."""

    def __init__(self, encoding: str, options: OtelOptions, stats: WorkerStats,
                 send_turn: Send, send_dlq: Send, admit: Admit | None = None,
                 max_bytes: int = 20 * 1024 * 1024) -> None:
        self.kind = ENCODINGS[encoding]
        self.options = options
        self.stats = stats
        self.send_turn = send_turn
        self.send_dlq = send_dlq
        self.admit = admit
        self.max_bytes = max_bytes
        self.warnings = Throttled()

    async def handle(self, events: Sequence[Any]) -> None:
        """Map and produce one batch. Like stage 1, it never returns before what it produced
        is acknowledged, and exits (the batch is redelivered) when it cannot finish."""
        t0 = time.perf_counter()
        if self.admit is not None:  # keep a partition's spans, and so its turns, in order
            keep = await self.admit([e.message for e in events])
            events = [e for e, ok in zip(events, keep, strict=True) if ok]
            if not events:
                return
        try:
            sends, produced, dead = self._plan(events)
            # Enqueued one by one, in order (a conversation's turns keep their order on its
            # partition), then all awaited until the broker has them.
            delivered = [await send(**kwargs) for send, kwargs in sends]
            await asyncio.gather(*delivered)
        except Exception:
            log.critical("otlp: cannot finish a batch of %d; exiting so it is redelivered",
                         len(events), exc_info=True)
            os._exit(70)
        self.stats.batch_done(
            BatchSample(STAGE, len(events), time.perf_counter() - t0, produced, dead),
            [(e.message.topic, e.message.partition, e.message.offset) for e in events])

    def _plan(self, events: Sequence[Any]) -> tuple[list[tuple[Send, dict[str, Any]]], int, int]:
        """The sends for a batch: turn events and dead letters, in record order."""
        sends: list[tuple[Send, dict[str, Any]]] = []
        produced = dead = 0
        for e in events:
            msg = e.message
            source, position = f"kafka:{msg.topic}", f"{msg.partition}:{msg.offset}"
            refusal: tuple[str, str] | None = None
            try:
                export = wire.decode(msg.value or b"", self.kind, None, self.max_bytes)
                mapped = map_request(export, self.options)
            except wire.WireError as exc:
                refusal = (INVALID_OTLP, str(exc))
            except Exception as exc:  # a record the mapping fails on must not stop the topic
                log.error("%s %s: mapping raised %s", source, position, type(exc).__name__)
                # the type only: an exception's message can quote the record
                refusal = (PROCESSING_ERROR, f"mapping this record raised {type(exc).__name__}")
            if refusal is not None:
                sends.append((self.send_dlq, dict(key=msg.key, value=msg.value,
                                                  headers=_headers(*refusal, source, position))))
                dead += 1
                continue
            _, message = summarize(mapped, [])
            if message:
                self.warnings.warn("%s %s: %s", source, position, message)
            for index, (reason, detail) in sorted(mapped.refused.items()):
                sends.append((self.send_dlq, dict(
                    key=msg.key, value=encode(one_span(export, index), self.kind),
                    headers=_headers(reason, detail, source, f"{position} span {index}"))))
                dead += 1
            for ev in mapped.events:
                sends.append((self.send_turn, dict(
                    key=str(ev.event["conversation_id"]).encode(),
                    # ASCII escapes: a lone surrogate from a JSON attribute cannot be encoded
                    # as UTF-8; escaped, stage 1 dead-letters it as lone_surrogate.
                    value=json.dumps(ev.event).encode(),
                    headers=[("source", source.encode()),
                             ("position", f"{position} {ev.position}".encode())])))
                produced += 1
        return sends, produced, dead


def _headers(reason: str, detail: str, source: str, position: str) -> list[tuple[str, bytes]]:
    return [("reason", reason.encode()), ("detail", detail.encode()),
            ("source", source.encode()), ("position", position.encode())]


def add_agent(app: Any, topic: str, encoding: str, batch_size: int, within_s: float,
              partitions: int, settings: Any, stats: WorkerStats, turns: Any, dlq: Any,
              admit: Admit) -> None:
    """The ``map_otlp`` agent on ``topic``, producing to ``turns`` and ``dlq``."""
    from pipeline.ingest.otel_http import options

    source = app.topic(topic, key_type=bytes, value_type=bytes, key_serializer="raw",
                       value_serializer="raw", partitions=partitions)
    stage = OtlpStage(encoding, options(settings), stats, turns.send, dlq.send, admit,
                      settings.otel_max_body_bytes)

    @app.agent(source, name="map_otlp")
    async def map_otlp(stream: Any) -> None:
        async for events in stream.take_events(batch_size, within=within_s):
            await stage.handle(events)
