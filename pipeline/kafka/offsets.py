"""At-least-once offsets for the faust worker: a consumer that never commits past a turn it did
not process.

faust-streaming's consumer can lose events around a rebalance (found with the SIGKILL test on
tansu; faust-streaming issues #596 and #606 describe the same family):

1. A newly assigned partition starts fetching before the consumer seeks it to its committed
   offset; the seek then rewinds the read position, but records prefetched beyond what was
   delivered keep arriving. faust sees the read offset jump (60 -> 121, say) and records the
   offsets in between as a *gap*, as if they did not exist (meant for compacted topics and
   transaction markers). Gaps count as acknowledged, so the commit walks over events that were
   cleared from the agents' queues at the rebalance and never processed.
2. The first event after a rebalance, on a partition the worker kept, can pass the fetch loop
   and never reach the agent; the commit guard lets exactly one unacknowledged offset at the
   head through (``min(acked) - committed > 1``), so it is committed over.
3. With no committed offset yet, ``seek_to_committed`` does not move a partition the consumer
   already held, so events cleared from the queues at a rebalance are never fetched again.

Our topics (``turns``, ``phrases``) are neither compacted nor transactional, so their offsets are
contiguous and a jump always means skipped events. ``ContiguousConsumer`` therefore tracks the
next offset it expects per partition and, when a fetch jumps ahead, drops the rest of that
partition's fetched records and seeks back to the expected offset; it withholds commits while
the head offset is unacknowledged, and reads the partition again from that offset when it is
still missing ``stall_s`` after later ones were processed, or when the partition has events
past its committed offset and none of them has been on its way to a stage for ``stall_s`` (a
fetch took and faust dropped the partition's last events around a rebalance, so no later event
shows the gap: tests/deploy/test_workers.py stopped at 313 of 320 turns); it does not count
acknowledgements of events fetched in an earlier generation (faust acknowledges the stale
events it skips); and it seeks partitions without a committed offset to the start of the log.
Events are re-read, never skipped: writes are idempotent, so a re-read costs time, not correctness.

Order matters too: a conversation's context is built turn by turn, so a turn processed before
the one ahead of it in its partition would see a shorter history. faust's stream drops events
fetched while flow was stopped or in an earlier generation (around a rebalance) without telling
anyone; the events behind them reach the agent. ``admit`` therefore lets a stage process a
partition's events only in offset order: events behind a missing offset are held back (not
processed, their acknowledgements not counted) and the partition is read again from the missing
offset at once. Topics whose
events are not acknowledged (table changelogs, which may be compacted) keep faust's behaviour,
except that ``ChangelogKeepingThread`` never lets a fetch take changelog records faust then drops
(Table recovery waited for ever on them after a rebalance; see that class).
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import AsyncIterator, Sequence
from typing import Any

import faust
from faust.transport.drivers import aiokafka as faust_aiokafka
from faust.types import TP, Message

log = logging.getLogger(__name__)


class ContiguousConsumer(faust_aiokafka.Consumer):
    """faust's aiokafka consumer with the fixes in the module docstring."""

    # How long the head offset of a partition may stay unacknowledged while later offsets are
    # acknowledged before the partition is read again from its committed offset. Each stage
    # acknowledges its batches in order, so this happens only to an event lost in transit.
    stall_s = 5.0
    # ``admit`` seeks a partition back to the same offset at most this often.
    reseek_s = 1.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._expected: dict[TP, int] = {}  # next offset to deliver, per acknowledged partition
        self._floor: dict[TP, int] = {}  # where to start committing when nothing is committed
        self._stalled: dict[TP, float] = {}  # since when the head offset has been missing
        self._order = OrderGate()  # which fetched events a stage may process now
        self._held: weakref.WeakSet[Message] = weakref.WeakSet()  # held back by admit()
        self._sought: dict[TP, tuple[int, float]] = {}  # last seek admit() made, and when
        self._delivered: dict[TP, float] = {}  # when an event was last delivered or sought
        self.rereads = 0  # seek-backs and stall re-reads (/health offset_rereads)
        super().__init__(*args, **kwargs)

    def _contiguous(self, tp: TP) -> bool:
        return bool(self.app.topics.acks_enabled_for(tp.topic))

    def _new_consumer_thread(self) -> faust_aiokafka.AIOKafkaConsumerThread:
        return ChangelogKeepingThread(self, loop=self.loop, beacon=self.beacon)

    async def seek_to_committed(self) -> Any:
        """faust sets its read offsets from this result without yielding to the fetch loop in
        between, so the expected offsets are set here, in the same step."""
        committed = await super().seek_to_committed()
        for tp, offset in committed.items():
            if self._contiguous(tp):
                if offset:
                    self._expected[tp] = offset
                    self._order.start(tp, offset)
                else:
                    self._expected.pop(tp, None)
                    self._order.forget(tp)
        return committed

    async def perform_seek(self) -> None:
        """Seek to the committed offsets (faust), then to the log start where none exists."""
        await super().perform_seek()
        uncommitted = [tp for tp in self.assignment()
                       if self._contiguous(tp) and not self._committed_offset.get(tp)]
        starts = dict(await self.earliest_offsets(*uncommitted)) if uncommitted else {}
        for tp in uncommitted:
            start = int(starts.get(tp) or 0)
            self._floor[tp] = start
            self._order.start(tp, start)
            await self.seek(tp, start)

    async def seek(self, partition: TP, offset: int) -> None:
        await super().seek(partition, offset)
        if self._contiguous(partition):
            self._expected[partition] = offset
            self._delivered[partition] = time.monotonic()  # its events are on their way

    async def on_partitions_revoked(self, revoked: set[TP]) -> None:
        for tp in revoked:
            for state in (self._expected, self._floor, self._stalled, self._sought,
                          self._delivered):
                state.pop(tp, None)
            self._order.forget(tp)
        await super().on_partitions_revoked(revoked)

    async def getmany(self, timeout: float) -> AsyncIterator[tuple[TP, Message]]:
        """faust's fetch loop, minus any record that would skip offsets of our topics: the
        partition is sought back to the first offset not yet delivered instead. faust reads its
        read offset right after this yields, so the check sees the same value."""
        rewound: set[TP] = set()
        async for tp, message in super().getmany(timeout):
            if tp in rewound:
                continue
            if not self._contiguous(tp):
                yield tp, message
                continue
            offset = message.offset
            expected = self._expected.get(tp)
            read = self._read_offset.get(tp)  # faust: the last offset read, or the seek target
            if ((expected is not None and offset > expected)
                    or (read is not None and offset > read + 1)):
                # the first offset not delivered; faust's read offset lower than that means
                # it was reset by a seek in between, so start from there
                target = expected if expected is not None else read
                assert target is not None
                if read is not None and read < target - 1:
                    target = read
                rewound.add(tp)
                self.rereads += 1
                log.warning("%s[%d]: fetched offset %d while %d is next; seeking back so "
                            "nothing is skipped", tp.topic, tp.partition, offset, target)
                await self.seek(tp, target)
                continue
            if read is None or offset >= read:  # faust delivers it (it drops older offsets)
                self._expected[tp] = offset + 1
            self._delivered[tp] = time.monotonic()
            yield tp, message

    def ack(self, message: Message) -> bool:
        """Count an event as done only in the generation that fetched it. faust acknowledges
        events it skips as stale after a rebalance; those were not processed, and the partition
        is read again from its committed offset anyway."""
        if self._contiguous(message.tp) and (
                message.generation_id != self.app.consumer_generation_id
                or message in self._held):
            message.acked = True
            self._unacked_messages.discard(message)
            return False
        counted = bool(super().ack(message))
        if self._contiguous(message.tp):
            # Processed now, also when faust does not count it: an offset it acknowledged before
            # the order gate started (events a stage took between the assignment and the seek to
            # the committed offset), read again from the log start. Leaving it out kept the gate
            # waiting for an offset the stage had just processed: the partition was read again
            # without end, or stopped (tests/deploy/test_workers.py).
            self._order.processed(message.tp, message.offset)
        return counted

    async def admit(self, messages: Sequence[Message]) -> list[bool]:
        """Which of a batch's messages a stage may process now: per partition, those in offset
        order from the first offset not yet processed (earlier ones too: a repeat is
        idempotent). The rest are held back, their acknowledgements not counted, and the
        partition is sought back to the missing offset, so they come again after it."""
        keep, gaps = self._order.split(
            [(m.tp, m.offset) for m in messages if self._contiguous(m.tp)])
        flags = iter(keep)
        out = [next(flags) if self._contiguous(m.tp) else True for m in messages]
        self._held.update(m for m, ok in zip(messages, out, strict=True) if not ok)
        now = time.monotonic()
        for tp, offset in gaps.items():
            if self._sought.get(tp, (None, 0.0))[0] == offset and \
                    now - self._sought[tp][1] < self.reseek_s:
                continue  # already sought back there; what was fetched before is draining
            if self.flow_active and tp in self.assignment():
                self._sought[tp] = (offset, now)
                self.rereads += 1
                log.warning("%s[%d]: offset %d did not reach the stage before later ones; "
                            "holding them back and reading again from it", tp.topic,
                            tp.partition, offset)
                await self.seek(tp, offset)
        return out

    def _head(self, tp: TP) -> int | None:
        """The partition's committed offset, or its log start when nothing is committed."""
        return self._committed_offset.get(tp) or self._floor.get(tp)

    def _missing_head(self, tp: TP) -> int | None:
        """The committed offset when it is unacknowledged while later offsets are."""
        acked = self._acked.get(tp)
        if acked and self._contiguous(tp):
            head = self._head(tp)
            if head is not None and min(acked) > head:
                return int(head)
        return None

    def _dropped_tail(self, tp: TP, now: float) -> int | None:
        """The committed offset when the partition has events past it (the fetch highwater)
        and none of them is on its way to a stage: none of the partition acknowledged since the
        commit, none of its topic taken by a stage and not yet acknowledged, none delivered or
        sought for ``stall_s``. A stage taking events acknowledges them batch by batch, so this
        holds only for events a fetch took and faust dropped."""
        if self._acked.get(tp):
            return None
        head = self._head(tp)
        highwater = self.highwater(tp)
        if head is None or highwater is None or highwater <= head:
            return None
        if now - self._delivered.get(tp, now) < self.stall_s:
            return None
        if any(m.tp.topic == tp.topic and not m.acked for m in list(self._unacked_messages)):
            return None
        return int(head)

    def _new_offset(self, tp: TP) -> int | None:
        """Commit only a run of acknowledged offsets that starts at the committed offset."""
        if self._missing_head(tp) is not None:
            return None
        return super()._new_offset(tp)  # type: ignore[no-any-return]

    async def commit(self, *args: Any, **kwargs: Any) -> bool:
        if self.flow_active:
            await self._reread_stalled(time.monotonic())
        return await super().commit(*args, **kwargs)  # type: ignore[no-any-return]

    async def _reread_stalled(self, now: float) -> None:
        """Read a partition again from its committed offset when that event has been missing
        for ``stall_s`` while later ones were processed, or when the events past it were
        dropped with none after them (``_dropped_tail``): lost between fetch and stage."""
        for tp in sorted(tp for tp in self.assignment() if self._contiguous(tp)):
            self._delivered.setdefault(tp, now)  # assigned now: its fetch starts
            head = self._dropped_tail(tp, now)
            if head is not None:
                self.rereads += 1
                log.warning("%s[%d]: offsets from %d were fetched but never reached the stage; "
                            "reading again from it", tp.topic, tp.partition, head)
                await self.seek(tp, head)
                self._delivered[tp] = now
        for tp in list(self._acked):
            head = self._missing_head(tp)
            if head is None:
                self._stalled.pop(tp, None)
                continue
            since = self._stalled.setdefault(tp, now)
            if now - since >= self.stall_s and tp in self.assignment():
                del self._stalled[tp]
                self.rereads += 1
                log.warning("%s[%d]: offset %d was never processed while later ones were; "
                            "reading again from it", tp.topic, tp.partition, head)
                await self.seek(tp, head)

    async def _add_gap(self, tp: TP, offset_from: int, offset_to: int) -> None:
        if self._contiguous(tp):
            # getmany seeks back before a jump reaches here; never mark real events as absent
            log.error("%s[%d]: offsets %d-%d were skipped; not treating them as a gap",
                      tp.topic, tp.partition, offset_from, offset_to - 1)
            return
        await super()._add_gap(tp, offset_from, offset_to)


class OrderGate:
    """Per partition, the offset after the run of processed offsets that starts at the
    committed one; which offsets of a fetched batch may be processed now."""

    def __init__(self) -> None:
        self.done: dict[TP, int] = {}
        self._ahead: dict[TP, set[int]] = {}  # processed beyond ``done`` (not in order)

    def start(self, tp: TP, offset: int) -> None:
        """The partition is (re)assigned and read from ``offset``."""
        self.done[tp] = offset
        self._ahead.pop(tp, None)

    def forget(self, tp: TP) -> None:
        self.done.pop(tp, None)
        self._ahead.pop(tp, None)

    def processed(self, tp: TP, offset: int) -> None:
        done = self.done.get(tp)
        if done is None or offset < done:
            return
        ahead = self._ahead.setdefault(tp, set())
        ahead.add(offset)
        while done in ahead:
            ahead.discard(done)
            done += 1
        self.done[tp] = done

    def split(self, batch: Sequence[tuple[TP, int]]) -> tuple[list[bool], dict[TP, int]]:
        """For each (partition, offset) in batch order whether it may be processed (it is the
        next offset, or a repeat of a processed one), and per partition with a gap the first
        offset missing. Partitions the gate does not know (not started) pass."""
        cursor: dict[TP, int] = {}
        gaps: dict[TP, int] = {}
        keep: list[bool] = []
        for tp, offset in batch:
            start = self.done.get(tp)
            nxt = cursor.get(tp, start)
            if nxt is None or (tp not in gaps and offset <= nxt):
                if nxt is not None:
                    cursor[tp] = max(nxt, offset + 1)
                keep.append(True)
                continue
            gaps.setdefault(tp, nxt)
            keep.append(False)
        return keep, gaps


class ChangelogKeepingThread(faust_aiokafka.AIOKafkaConsumerThread):
    """faust's consumer thread, except that it never lets a Table changelog's records be
    consumed without handing them to faust.

    faust passes aiokafka's ``fetched_records`` its live set of active partitions. A fetch that
    waits across a rebalance sees that set emptied (faust pauses every assigned partition at
    assignment), and aiokafka reads an empty set as *every* partition: it takes the records of
    all of them and moves its positions past them, while faust's fetch loop drops them (flow
    stopped, partition paused). When Table recovery had already sought a changelog partition
    to its start, the records it waits for were gone and never fetched again: recovery waited
    for ever ("No event received for active tp ... since recovery start") and the worker never
    processed the partitions it had taken over (tests/deploy/test_workers.py: 306 of 320 turns
    stored). Here the partition is sought back to the first record faust would drop, in the
    same step of the consumer thread's loop as the fetch, so no seek can come in between.
    Stream topics keep faust's behaviour: ``ContiguousConsumer`` seeks them back when a fetch
    jumps."""

    async def _fetch_records(self, consumer: Any, active_partitions: set[TP],
                             timeout: float | None = None,
                             max_records: int | None = None) -> Any:
        records = dict(await super()._fetch_records(consumer, active_partitions,
                                                    timeout=timeout, max_records=max_records))
        owner = self.consumer  # faust's consumer: what its fetch loop will deliver
        for tp in [tp for tp, batch in records.items() if batch and owner._is_changelog_tp(tp)]:
            if owner.flow_active and (tp in active_partitions
                                      or tp in owner._buffered_partitions):
                continue
            first = records.pop(tp)[0].offset
            log.info("%s[%d]: changelog records fetched while faust drops them (rebalance); "
                     "reading them again from %d", tp.topic, tp.partition, first)
            consumer.seek(tp, first)
        return records


class ContiguousTransport(faust_aiokafka.Transport):
    Consumer = ContiguousConsumer


class App(faust.App):
    """faust.App whose consumer is ``ContiguousConsumer``."""

    def _new_transport(self) -> Any:
        return ContiguousTransport(self.conf.broker_consumer, self)
