"""One stage of the Kafka worker: a batch of events in, ``Processor.process`` off the event loop,
Table writes, dead-letter and forward messages out, and only then the batch is acknowledged.

faust's ``stream.take_events`` acknowledges a batch when the ``async for`` body returns, even when
it raises, so ``Stage.handle`` never raises: a sink outage is retried with backoff (consumption
of this stage pauses meanwhile), and a batch that fails for another reason is split and the
records that still fail go to the dead-letter topic.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import Any, Protocol

from pipeline.errors import StoreUnavailable
from pipeline.ingest.events import PROCESSING_ERROR, RawRecord
from pipeline.kafka.lag import BatchSample, WorkerStats
from pipeline.scoring.process import BatchReport, Processor

log = logging.getLogger(__name__)
MAX_BACKOFF_S = 30.0


class Buffered(Protocol):
    def flush(self) -> int: ...

    def discard(self) -> None: ...


Send = Callable[..., Awaitable[Any]]
Forward = Callable[[Sequence[RawRecord], BatchReport], Awaitable[None]]
# Which messages of a batch may be processed now (``ContiguousConsumer.admit``: in offset order).
Admit = Callable[[Sequence[Any]], Awaitable[list[bool]]]


def record_of(event: Any) -> RawRecord:
    msg = event.message
    return RawRecord(f"kafka:{msg.topic}", f"{msg.partition}:{msg.offset}", msg.value)


def dlq_headers(row: dict[str, Any]) -> list[tuple[str, bytes]]:
    """The dead-letter reason and where the event came from, as Kafka headers."""
    keys = ("reason", "detail", "source", "position", "detector", "conversation_id", "turn")
    return [(k, str(row[k]).encode()) for k in keys if row.get(k) is not None]


class Stage:
    first_backoff_s = 0.5

    def __init__(self, name: str, processor: Processor, buffers: Sequence[Buffered],
                 stats: WorkerStats, send_dlq: Send, forward: Forward | None = None,
                 track: Callable[[int], AbstractContextManager[Any]] | None = None,
                 admit: Admit | None = None) -> None:
        self.name = name
        self.admit = admit
        self.track = track or (lambda _n: nullcontext())
        self.processor = processor
        self.buffers = list(buffers)
        self.stats = stats
        self.send_dlq = send_dlq
        self.forward = forward
        self.executor = ThreadPoolExecutor(1, thread_name_prefix=f"chatmon-{name}")
        # Held for a whole batch; the data lifecycle writes this stage's Table under it.
        self.lock = asyncio.Lock()

    async def handle(self, events: Sequence[Any]) -> None:
        """Process, store and forward one batch. A cancellation (worker stopping) waits for the
        batch to finish first, because faust acknowledges the batch as soon as this returns."""
        task = asyncio.ensure_future(self._handle(events))
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            await task
            raise

    async def _handle(self, events: Sequence[Any]) -> None:
        async with self.lock:
            await self._handle_batch(events)

    async def _handle_batch(self, events: Sequence[Any]) -> None:
        t0 = time.perf_counter()
        if self.admit is not None:  # a turn must not be scored before the one ahead of it
            keep = await self.admit([e.message for e in events])
            events = [e for e, ok in zip(events, keep, strict=True) if ok]
            if not events:
                return
        records = [record_of(e) for e in events]
        by_position = {r.position: e for r, e in zip(records, events, strict=True)}
        try:
            report, failed = await self._process_isolating(records)
            for buf in self.buffers:
                buf.flush()
            sends = [self._dead_letter(by_position.get(row["position"]), row)
                     for row in report.dead_letter_rows]
            sends += [self._dead_letter(by_position[rec.position], {
                "reason": PROCESSING_ERROR, "detail": err, "source": rec.source,
                "position": rec.position}) for rec, err in failed]
            await asyncio.gather(*sends)
            if self.forward is not None:
                await self._retrying(lambda: self.forward(records, report))  # type: ignore[misc]
        except Exception:
            # take_events acks the batch when this body returns or raises, and faust commits
            # acked offsets on shutdown: exit at once so the batch is redelivered after restart.
            log.critical("%s: cannot finish a batch of %d; exiting so it is redelivered",
                         self.name, len(events), exc_info=True)
            os._exit(70)
        self.stats.batch_done(
            BatchSample(self.name, len(records), time.perf_counter() - t0, report.turns_stored,
                        len(report.dead_letter_rows) + len(failed)),
            [(e.message.topic, e.message.partition, e.message.offset) for e in events])

    async def run_blocking(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def _process_isolating(
        self, records: Sequence[RawRecord]
    ) -> tuple[BatchReport, list[tuple[RawRecord, str]]]:
        """Process the batch; if it fails for a reason other than the sink, process its records
        one by one so only the ones that still fail are dead-lettered."""
        try:
            return await self._retrying(lambda: self._process(records)), []
        except Exception as exc:
            log.warning("%s: batch of %d failed (%s); isolating", self.name, len(records),
                        type(exc).__name__)
        total = BatchReport()
        failed: list[tuple[RawRecord, str]] = []
        for rec in records:
            try:
                part: BatchReport = await self._retrying(partial(self._process, [rec]))
                total.merge(part)
                total.dead_letter_rows += part.dead_letter_rows
            except Exception as exc:  # the type only: a message can quote the event
                failed.append((rec, f"processing this event raised {type(exc).__name__}"))
        return total, failed

    async def _process(self, records: Sequence[RawRecord]) -> BatchReport:
        try:
            with self.track(len(records)):  # Prometheus: received, batch latency, sink errors
                return await self.run_blocking(self.processor.process, records)
        except BaseException:
            for buf in self.buffers:  # the batch will be retried: forget its buffered writes
                buf.discard()
            raise

    async def _retrying(self, attempt: Callable[[], Awaitable[Any]]) -> Any:
        """Retry while the store is unavailable, with exponential backoff; other errors (a
        write the store refuses included: retrying it would block the partition) propagate."""
        delay = self.first_backoff_s
        while True:
            try:
                result = await attempt()
            except StoreUnavailable as exc:
                self.stats.sink_failed()
                log.warning("%s: sink unavailable (%s); retrying in %.1fs", self.name, exc, delay)
                await asyncio.sleep(delay)
                delay = min(MAX_BACKOFF_S, delay * 2)
                continue
            self.stats.sink_ok()
            return result

    async def _dead_letter(self, event: Any, row: dict[str, Any]) -> None:
        if event is None:
            return
        msg = event.message
        await self.send_dlq(key=msg.key, value=msg.value, headers=dlq_headers(row))
