"""``POST /v1/traces`` in ``chatmon serve``: OTLP/HTTP trace exports in, chat turns stored.

The route speaks OTLP/HTTP as exporters expect it: protobuf or JSON bodies, gzip, the answer in
the request's encoding, partial success naming how many spans were refused and why (reasons
only, never text), 503 with Retry-After while the store is down (exporters retry, and a replay
stores nothing twice), 400/413/415 for a body that is not an export. Turns go through the same
batcher, validation, redaction and store as ``POST /v1/turns``.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from pipeline.errors import StoreUnavailable
from pipeline.ingest import otel_wire as wire
from pipeline.ingest.events import RawRecord
from pipeline.ingest.otel import Mapped, OtelOptions, map_request
from pipeline.metrics import get_metrics
from pipeline.settings import Settings

log = logging.getLogger(__name__)
CAPTURE_HINT = ("GenAI span(s) carried no message content: turn content capture on in the "
                "instrumentation (docs/otel.md)")
# google.rpc.Code values for the Status body of a refused request.
INVALID_ARGUMENT, UNAUTHENTICATED, UNAVAILABLE, INTERNAL = 3, 16, 14, 13


class Throttled:
    """A warning logged at most once per ``every_s``, saying how many were held back: a
    Collector exports every few seconds, and capture-off spans come in every export."""

    def __init__(self, every_s: float = 60.0) -> None:
        self.every_s = every_s
        self.last = float("-inf")
        self.held = 0

    def warn(self, message: str, *args: Any) -> None:
        now = time.monotonic()
        if now - self.last < self.every_s:
            self.held += 1
            return
        held, self.held, self.last = self.held, 0, now
        suffix = f" ({held} more like this in the last {self.every_s:.0f} s)" if held else ""
        log.warning(message + suffix, *args)


def options(settings: Settings) -> OtelOptions:
    return OtelOptions(conversation_attributes=tuple(settings.otel_conversation_attributes),
                       bot_attribute=settings.otel_bot_attribute,
                       tenant_attribute=settings.otel_tenant_attribute,
                       metadata_attributes=tuple(settings.otel_metadata_attributes))


def records_of(mapped: Mapped, source: str) -> list[RawRecord]:
    return [RawRecord(source, e.position, e.event) for e in mapped.events]


def summarize(mapped: Mapped, rejected: list[dict[str, Any]]) -> tuple[int, str]:
    """The partial-success answer: spans refused (by the mapping, or one of whose turns
    validation refused) and a message counting reasons; counts the outcomes as a metric."""
    reasons: dict[int, str] = {i: reason for i, (reason, _) in mapped.refused.items()}
    for r in rejected:
        reasons.setdefault(mapped.events[r["index"]].span, r["reason"])
    outcomes = Counter(mapped.outcomes)
    moved = sum(1 for i in reasons if i not in mapped.refused)  # chat spans a turn failed in
    outcomes["chat"] -= moved
    outcomes["refused"] += moved
    # Spans by what became of them (chatmon_otel_spans_total) and the messages of chat spans
    # that are not turns, counted where they are new (chatmon_otel_messages_skipped_total).
    get_metrics().otel_received(outcomes, mapped.skipped_messages)
    parts = []
    if reasons:
        by_reason = Counter(reasons.values())
        parts.append(f"{len(reasons)} of {mapped.spans} spans refused: " + ", ".join(
            f"{reason} x{n}" for reason, n in sorted(by_reason.items())))
    if mapped.outcomes["no_content"]:
        parts.append(f"{mapped.outcomes['no_content']} {CAPTURE_HINT}")
    return len(reasons), "; ".join(parts)


def traces_route(settings: Settings, submit: Callable[[list[RawRecord]], Awaitable[Any]],
                 authorized: Callable[[Any], bool],
                 read_body: Callable[[Any, int], Awaitable[bytes | None]],
                 retry_after_s: int) -> Callable[[Any], Awaitable[Any]]:
    """The ``/v1/traces`` handler over serve's batcher ``submit``, bearer check and body
    reader."""
    from starlette.responses import Response

    opts = options(settings)
    limit = settings.otel_max_body_bytes
    warnings = Throttled()

    def answer(body_kind: tuple[bytes, str], status: int = 200,
               headers: dict[str, str] | None = None) -> Response:
        body, kind = body_kind
        return Response(body, status_code=status, media_type=kind, headers=headers)

    async def traces(request: Any) -> Response:
        refusal: wire.WireError | None = None
        try:
            kind = wire.media_type(request.headers.get("content-type"))
        except wire.WireError as exc:
            kind, refusal = wire.JSON, exc
        if not authorized(request):
            return answer(wire.status(UNAUTHENTICATED, "missing or wrong bearer token", kind),
                          401, {"WWW-Authenticate": "Bearer"})
        if refusal is not None:
            return answer(wire.status(INVALID_ARGUMENT, str(refusal), kind), refusal.status)
        body = await read_body(request, limit)
        if body is None:
            return answer(wire.status(INVALID_ARGUMENT, f"body over {limit} bytes", kind), 413)
        try:
            export = wire.decode(body, kind, request.headers.get("content-encoding"), limit)
        except wire.WireError as exc:
            return answer(wire.status(INVALID_ARGUMENT, str(exc), kind), exc.status)
        req_id = uuid.uuid4().hex[:12]
        try:
            mapped = map_request(export, opts)
        except Exception as exc:  # a bug, not the client's: say so in OTLP's terms, no text
            log.error("trace export %s: mapping raised %s", req_id, type(exc).__name__)
            return answer(wire.status(INTERNAL, f"internal error (request {req_id})", kind), 500)
        records = records_of(mapped, f"otlp:{req_id}")
        rejected: list[dict[str, Any]] = []
        if records:
            try:
                result = await submit(records)
            except StoreUnavailable:
                return answer(wire.status(UNAVAILABLE, "the store is unavailable: send this "
                                          "export again later", kind),
                              503, {"Retry-After": str(retry_after_s)})
            except Exception as exc:
                log.error("trace export %s failed: %s", req_id, type(exc).__name__)
                return answer(wire.status(INTERNAL, f"internal error (request {req_id})", kind),
                              500)
            rejected = result["rejected"]
        refused, message = summarize(mapped, rejected)
        if message:
            warnings.warn("trace export %s: %s", req_id, message)
        return answer(wire.success(refused, message, kind))

    return traces
