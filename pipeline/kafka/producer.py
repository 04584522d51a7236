"""``chatmon produce``: replay JSON Lines into the turns topic with kafka-python.

Each line is validated first (the same ``pipeline.ingest.events.validate`` the workers run); invalid
lines are reported with their reason and not sent. Valid lines are sent as they are (the raw
JSON bytes), keyed by conversation_id so a conversation stays in one partition and in order,
with ``acks=all`` and one request in flight per connection (retries cannot reorder).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from pipeline.ingest import events
from pipeline.ingest.events import Accepted, RawRecord
from pipeline.ingest.readers import count_lines, read_records

OnSent = Callable[[Accepted, float], None]


@dataclass
class ProduceSummary:
    sent: int = 0
    invalid: list[tuple[str, str, str]] = field(default_factory=list)  # (source, line, reason)
    failed: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"sent": self.sent, "invalid": len(self.invalid), "failed": self.failed,
                "seconds": round(self.seconds, 3),
                "turns_per_s": round(self.sent / self.seconds, 1) if self.seconds else None}


def make_producer(bootstrap: str, **overrides: Any) -> Any:
    from kafka import KafkaProducer

    opts: dict[str, Any] = dict(bootstrap_servers=bootstrap.split(","), acks="all",
                                linger_ms=5, retries=5, max_in_flight_requests_per_connection=1,
                                client_id="chatmon-produce")
    opts.update(overrides)
    return KafkaProducer(**opts)


class RateLimiter:
    """Spaces sends to ``rate`` per second (None: as fast as possible)."""

    def __init__(self, rate: float | None) -> None:
        self.interval = 1.0 / rate if rate else 0.0
        self.next = time.perf_counter()

    def wait(self) -> None:
        if not self.interval:
            return
        now = time.perf_counter()
        if self.next > now:
            time.sleep(self.next - now)
        self.next = max(self.next, now) + self.interval


def produce(paths: Sequence[str], bootstrap: str, topic: str, *, rate: float | None = None,
            max_text_chars: int = 20_000, progress: bool = False,
            on_invalid: Callable[[str, str, str], None] | None = None,
            on_sent: OnSent | None = None, producer: Any = None) -> ProduceSummary:
    summary = ProduceSummary()
    prod = producer or make_producer(bootstrap)
    limiter = RateLimiter(rate)
    t0 = time.perf_counter()
    try:
        for path in paths:
            total = count_lines(path) if progress and path != "-" else None
            with tqdm(total=total, disable=not progress, unit="turn", leave=False,
                      desc=path if path != "-" else "stdin") as bar:
                for rec in read_records(path):
                    bar.update(1)
                    _send_one(prod, topic, rec, max_text_chars, limiter, summary, on_invalid,
                              on_sent)
        prod.flush()
    finally:
        if producer is None:
            prod.close()
    summary.seconds = time.perf_counter() - t0
    return summary


def _send_one(prod: Any, topic: str, rec: RawRecord, max_text_chars: int, limiter: RateLimiter,
              summary: ProduceSummary, on_invalid: Callable[[str, str, str], None] | None,
              on_sent: OnSent | None) -> None:
    res = events.validate(rec, max_text_chars)
    if not isinstance(res, Accepted):
        summary.invalid.append((rec.source, rec.position, res.reason))
        if on_invalid is not None:
            on_invalid(rec.source, rec.position, res.reason)
        return
    limiter.wait()
    value = rec.data if isinstance(rec.data, bytes) else str(rec.data).encode()
    future = prod.send(topic, key=res.turn.conversation_id.encode(), value=value)

    def failed(_exc: BaseException) -> None:
        summary.failed += 1

    future.add_errback(failed)
    summary.sent += 1
    if on_sent is not None:
        on_sent(res, time.time())


def send_raw(bootstrap: str, topic: str, messages: Iterable[tuple[bytes | None, bytes]],
             headers: Sequence[tuple[str, bytes]] = ()) -> int:
    """Send pre-built (key, value) messages as they are (tests and kcat-style raw values)."""
    prod = make_producer(bootstrap)
    n = 0
    try:
        for key, value in messages:
            prod.send(topic, key=key, value=value, headers=list(headers) or None)
            n += 1
        prod.flush()
    finally:
        prod.close()
    return n
