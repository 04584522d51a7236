"""Per-worker numbers: consumer lag (from the fetch highwater), batch latency, throughput.

tansu under-reports a partition's end offset when a produce batch holds several records, so
lag is measured against the highwater the consumer sees in fetch responses, minus the offset
after the last event this worker finished. Other code (Prometheus metrics) subscribes with
``WorkerStats.subscribe(callback)``; callbacks get ``(stage, BatchSample)`` after every batch
and ``("lag", LagSample)`` after every lag poll.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchSample:
    stage: str
    records: int
    seconds: float  # from taking the batch to its rows being stored and forwarded
    stored: int
    dead_letters: int


@dataclass(frozen=True)
class LagSample:
    by_partition: Mapping[str, int]  # "topic:partition" -> messages behind the highwater

    @property
    def total(self) -> int:
        return sum(self.by_partition.values())


Listener = Callable[[str, Any], None]


@dataclass
class WorkerStats:
    started_at: float = field(default_factory=time.time)
    ready: bool = False
    sink_down_since: float | None = None
    sink_retries: int = 0
    offset_rereads: int = 0  # the consumer sought back so as not to skip events (offsets.py)
    records: dict[str, int] = field(default_factory=dict)
    batches: dict[str, int] = field(default_factory=dict)
    last_done: dict[tuple[str, int], int] = field(default_factory=dict)
    lag: LagSample = field(default_factory=lambda: LagSample({}))
    _latencies: deque[float] = field(default_factory=lambda: deque(maxlen=1000))
    _recent: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=200))
    _listeners: list[Listener] = field(default_factory=list)

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def _emit(self, kind: str, sample: Any) -> None:
        for listener in self._listeners:
            try:
                listener(kind, sample)
            except Exception:  # a metrics hook must never stop processing
                log.exception("stats listener failed")

    def batch_done(self, sample: BatchSample, offsets: Iterable[tuple[str, int, int]]) -> None:
        self.records[sample.stage] = self.records.get(sample.stage, 0) + sample.records
        self.batches[sample.stage] = self.batches.get(sample.stage, 0) + 1
        for topic, partition, offset in offsets:
            key = (topic, partition)
            self.last_done[key] = max(offset, self.last_done.get(key, -1))
        self._latencies.append(sample.seconds)
        self._recent.append((time.monotonic(), sample.records))
        self._emit(sample.stage, sample)

    def sink_failed(self) -> None:
        self.sink_retries += 1
        if self.sink_down_since is None:
            self.sink_down_since = time.time()

    def sink_ok(self) -> None:
        self.sink_down_since = None

    def update_lag(self, highwaters: Mapping[tuple[str, int], int],
                   committed: Mapping[tuple[str, int], int | None]) -> LagSample:
        out: dict[str, int] = {}
        for (topic, partition), hw in highwaters.items():
            done = self.last_done.get((topic, partition))
            start = done + 1 if done is not None else committed.get((topic, partition)) or 0
            out[f"{topic}:{partition}"] = max(0, hw - start)
        self.lag = LagSample(out)
        self._emit("lag", self.lag)
        return self.lag

    def throughput(self, window_s: float = 30.0) -> float:
        now = time.monotonic()
        recent = [(t, n) for t, n in self._recent if now - t <= window_s]
        if not recent:
            return 0.0
        span = max(now - recent[0][0], 1.0)
        return sum(n for _, n in recent) / span

    def snapshot(self) -> dict[str, Any]:
        lat = sorted(self._latencies)
        pick = (lambda q: round(lat[min(len(lat) - 1, int(q * len(lat)))], 4)) if lat else None
        return {
            "status": "degraded" if self.sink_down_since is not None else "ok",
            "ready": self.ready,
            "uptime_s": round(time.time() - self.started_at, 1),
            "records": dict(self.records),
            "batches": dict(self.batches),
            "turns_per_s": round(self.throughput(), 2),
            "batch_latency_s": {"p50": pick(0.5) if pick else None,
                                "p99": pick(0.99) if pick else None},
            "lag": {"total": self.lag.total, "partitions": dict(self.lag.by_partition)},
            "sink_down_for_s": round(time.time() - self.sink_down_since, 1)
            if self.sink_down_since is not None else None,
            "sink_retries": self.sink_retries,
            "offset_rereads": self.offset_rereads,
        }
