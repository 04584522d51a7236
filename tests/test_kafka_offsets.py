"""ContiguousConsumer's offset rules, deterministically.

The races these rules close (a rebalance while records are prefetched or queued) cannot be
triggered on demand against a real broker; tests/kafka/test_worker.py runs the whole worker
against tansu for that. Here a real faust app and consumer are built but never connected, so
the broker-facing calls (the fetch, seek and assignment) are replaced by recorders.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from faust.types import TP
from faust.types.tuples import ConsumerMessage

from pipeline.kafka import offsets

TURNS = TP("turns", 0)


def message(offset: int, generation: int = 1) -> ConsumerMessage:
    return ConsumerMessage("turns", 0, offset, 0.0, 0, None, b"k", b"v", None, tp=TURNS,
                           generation_id=generation)


@pytest.fixture
def consumer() -> Iterator[offsets.ContiguousConsumer]:
    app = offsets.App("chatmon-offsets-test", broker="kafka://127.0.0.1:1", store="memory://",
                      autodiscover=False, web_enabled=False)
    app.consumer_generation_id = 1
    app.topics.acking_topics.add("turns")  # what subscribing an agent to the topic does
    c = app.consumer
    assert isinstance(c, offsets.ContiguousConsumer)
    c.seeks = []  # type: ignore[attr-defined]

    async def seek(tp: TP, offset: int) -> None:  # stands in for the broker call
        c.seeks.append((tp, offset))  # type: ignore[attr-defined]

    c._seek = seek  # type: ignore[method-assign,assignment]
    c.assignment = lambda: {TURNS}  # type: ignore[method-assign]
    yield c


def test_commit_waits_for_an_unprocessed_head_offset(consumer: offsets.ContiguousConsumer) -> None:
    consumer._committed_offset[TURNS] = 10
    for offset in (11, 12):
        assert consumer.ack(message(offset))
    assert consumer._filter_committable_offsets([TURNS]) == {}  # faust alone commits 13
    assert consumer.ack(message(10))
    assert consumer._filter_committable_offsets([TURNS]) == {TURNS: 13}


def test_a_partition_never_committed_starts_from_its_floor(
        consumer: offsets.ContiguousConsumer) -> None:
    consumer._floor[TURNS] = 0
    consumer.ack(message(1))
    assert consumer._filter_committable_offsets([TURNS]) == {}
    consumer.ack(message(0))
    assert consumer._filter_committable_offsets([TURNS]) == {TURNS: 2}


def test_acks_from_an_earlier_generation_do_not_count(
        consumer: offsets.ContiguousConsumer) -> None:
    consumer._committed_offset[TURNS] = 5
    consumer.app.consumer_generation_id = 2
    stale = message(5, generation=1)
    assert consumer.ack(stale) is False
    assert stale.acked and not consumer._acked.get(TURNS)
    assert consumer.ack(message(5, generation=2))
    assert consumer._filter_committable_offsets([TURNS]) == {TURNS: 6}


def test_a_fetch_that_skips_offsets_is_sought_back(
        consumer: offsets.ContiguousConsumer, monkeypatch: pytest.MonkeyPatch) -> None:
    async def fetched(self: Any, timeout: float) -> AsyncIterator[tuple[TP, ConsumerMessage]]:
        for offset in (5, 6, 9, 10):  # 7 and 8 were cleared from the queues at a rebalance
            yield TURNS, message(offset)

    monkeypatch.setattr(offsets.faust_aiokafka.Consumer, "getmany", fetched)
    asyncio.run(consumer.seek(TURNS, 5))
    consumer.seeks.clear()  # type: ignore[attr-defined]

    async def drain() -> list[int]:
        out = []
        async for _tp, msg in consumer.getmany(1.0):
            consumer._read_offset[TURNS] = msg.offset  # what faust's fetch loop records
            out.append(msg.offset)
        return out

    assert asyncio.run(drain()) == [5, 6]
    assert consumer.seeks == [(TURNS, 7)]  # type: ignore[attr-defined]
    assert consumer._read_offset[TURNS] == 7 and consumer.rereads == 1


def test_a_head_offset_missing_for_the_stall_time_is_read_again(
        consumer: offsets.ContiguousConsumer) -> None:
    consumer._committed_offset[TURNS] = 10
    consumer.ack(message(11))
    asyncio.run(consumer._reread_stalled(100.0))
    asyncio.run(consumer._reread_stalled(100.0 + consumer.stall_s - 1))
    assert consumer.seeks == []  # type: ignore[attr-defined]
    asyncio.run(consumer._reread_stalled(100.0 + consumer.stall_s))
    assert consumer.seeks == [(TURNS, 10)]  # type: ignore[attr-defined]
    consumer.ack(message(10))
    asyncio.run(consumer._reread_stalled(200.0))
    assert consumer._filter_committable_offsets([TURNS]) == {TURNS: 12}


def test_a_partitions_dropped_tail_is_read_again(consumer: offsets.ContiguousConsumer,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A fetch took a partition's last events (10-19) and faust dropped them around a
    rebalance: no later event arrives to show the gap, so only the idle partition behind its
    highwater tells. It is read again from its committed offset once nothing of it has been on
    its way to a stage for the stall time, and not while a stage still holds an event."""
    consumer._committed_offset[TURNS] = 10
    highwater = {TURNS: 20}
    monkeypatch.setattr(consumer, "highwater", highwater.get)
    asyncio.run(consumer._reread_stalled(100.0))  # first seen: its fetch may just be starting
    asyncio.run(consumer._reread_stalled(100.0 + consumer.stall_s - 1))
    assert consumer.seeks == []  # type: ignore[attr-defined]
    taken = message(10)
    consumer._unacked_messages.add(taken)  # a stage took it and works on it
    asyncio.run(consumer._reread_stalled(100.0 + consumer.stall_s))
    assert consumer.seeks == []  # type: ignore[attr-defined]
    consumer._unacked_messages.discard(taken)  # dropped: faust skipped it as stale
    asyncio.run(consumer._reread_stalled(100.0 + consumer.stall_s))
    assert consumer.seeks == [(TURNS, 10)] and consumer.rereads == 1  # type: ignore[attr-defined]
    asyncio.run(consumer._reread_stalled(100.0 + consumer.stall_s + 1))
    assert len(consumer.seeks) == 1  # type: ignore[attr-defined]  # once per stall time


def test_a_partition_processed_to_its_highwater_is_not_read_again(
        consumer: offsets.ContiguousConsumer, monkeypatch: pytest.MonkeyPatch) -> None:
    consumer._committed_offset[TURNS] = 10
    highwater = {TURNS: 12}
    monkeypatch.setattr(consumer, "highwater", highwater.get)
    for offset in (10, 11):  # processed, not yet committed
        consumer.ack(message(offset))
    for now in (100.0, 100.0 + 2 * consumer.stall_s):
        asyncio.run(consumer._reread_stalled(now))
    consumer._committed_offset.update(consumer._filter_committable_offsets([TURNS]))  # commit
    assert not consumer._acked[TURNS]
    asyncio.run(consumer._reread_stalled(100.0 + 4 * consumer.stall_s))
    assert consumer._committed_offset[TURNS] == 12 and consumer.seeks == []  # type: ignore[attr-defined]


def test_events_behind_a_missing_offset_are_held_back_and_read_again(
        consumer: offsets.ContiguousConsumer) -> None:
    """faust's stream drops an event around a rebalance and the ones behind it reach the stage:
    scoring them first would give a turn a shorter history, so they wait for the missing one."""
    consumer._committed_offset[TURNS] = 10
    consumer._order.start(TURNS, 10)  # what seeking to the committed offset does
    batch = [message(10), message(12), message(13)]  # 11 never reached the stage
    assert asyncio.run(consumer.admit(batch)) == [True, False, False]
    assert consumer.seeks == [(TURNS, 11)]  # type: ignore[attr-defined]
    for m in batch:  # take_events acknowledges the whole batch
        consumer.ack(m)
    committable = consumer._filter_committable_offsets([TURNS])
    assert committable == {TURNS: 11}  # the held ones do not count as done
    consumer._committed_offset.update(committable)  # what the commit records
    assert asyncio.run(consumer.admit([message(13)])) == [False]  # still queued from before
    assert consumer.seeks == [(TURNS, 11)]  # type: ignore[attr-defined]  # no second seek
    assert asyncio.run(consumer.admit([message(11)])) == [True]
    consumer.ack(message(11))
    committable = consumer._filter_committable_offsets([TURNS])
    assert committable == {TURNS: 12}  # not 14: 12 and 13 were held back, not processed
    consumer._committed_offset.update(committable)
    again = [message(12), message(13)]
    assert asyncio.run(consumer.admit(again)) == [True, True]
    for m in again:
        consumer.ack(m)
    assert consumer._filter_committable_offsets([TURNS]) == {TURNS: 14}


class FakeAiokafka:
    """Stands in for aiokafka's consumer in faust's consumer thread. Its ``fetched_records``
    drains as aiokafka 0.14 does (an empty set of partitions means every partition), moving
    the positions past what it returns; with ``rebalance`` the fetch waits across one first:
    faust stops the flow and pauses every assigned partition, emptying the live set of active
    partitions it passed in."""

    def __init__(self, owner: offsets.ContiguousConsumer, buffered: dict[TP, list[int]],
                 rebalance: bool) -> None:
        self._closed = False
        self._fetcher = self._subscriptions = self
        self.owner, self.buffered, self.rebalance = owner, buffered, rebalance
        self.position = {tp: offs[0] for tp, offs in buffered.items()}
        self.seeks: list[tuple[TP, int]] = []

    def fetch_context(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()

    async def fetched_records(self, partitions: set[TP], timeout: float = 0,
                              max_records: int | None = None) -> dict[TP, list[Any]]:
        await asyncio.sleep(0)  # waiting for records
        if self.rebalance:
            self.owner.stop_flow()
            self.owner.pause_partitions(set(partitions))  # the same set object, emptied
        drained = {}
        for tp, offs in self.buffered.items():
            if partitions and tp not in partitions:
                continue
            drained[tp] = [SimpleNamespace(offset=o) for o in offs]
            self.position[tp] = offs[-1] + 1
        return drained

    def seek(self, tp: TP, offset: int) -> None:
        self.seeks.append((tp, offset))
        self.position[tp] = offset


def fetch(consumer: offsets.ContiguousConsumer, aio: FakeAiokafka) -> dict[TP, list[int]]:
    """One fetch of faust's consumer thread, its active partitions those ``aio`` holds."""
    consumer.flow_active = True
    active = consumer._set_active_tps(set(aio.buffered))
    records = asyncio.run(consumer._thread._fetch_records(aio, active, timeout=1.0))
    return {tp: [r.offset for r in batch] for tp, batch in records.items()}


def test_changelog_records_fetched_across_a_rebalance_are_read_again(
        consumer: offsets.ContiguousConsumer) -> None:
    """A fetch begun before a rebalance took a changelog partition's records after Table
    recovery had sought it to its start, and faust's fetch loop dropped them (flow stopped):
    recovery then waited for ever for offsets nobody fetched again, and the worker never
    processed the partitions it took over. The partition must go back to the first of them."""
    consumer.app.Table("context", default=None)  # registers its changelog topic
    changelog = TP(f"{consumer.app.conf.id}-context-changelog", 2)
    aio = FakeAiokafka(consumer, {changelog: [0, 1], TURNS: [7, 8]}, rebalance=True)
    records = fetch(consumer, aio)
    assert changelog not in records  # faust would drop them unseen
    assert aio.seeks == [(changelog, 0)] and aio.position[changelog] == 0  # fetched again
    assert records[TURNS] == [7, 8]  # faust's behaviour; ContiguousConsumer seeks jumps back


def test_changelog_records_faust_delivers_are_not_read_again(
        consumer: offsets.ContiguousConsumer) -> None:
    consumer.app.Table("context", default=None)
    changelog = TP(f"{consumer.app.conf.id}-context-changelog", 2)
    aio = FakeAiokafka(consumer, {changelog: [0, 1]}, rebalance=False)
    assert fetch(consumer, aio) == {changelog: [0, 1]}
    assert aio.seeks == [] and aio.position[changelog] == 2


def test_an_offset_processed_again_moves_the_order_gate(
        consumer: offsets.ContiguousConsumer) -> None:
    """A stage took 0-2 between the assignment and the seek to the committed offset (nothing
    committed: the log start), before the order gate started. Read again from 0, their second
    acknowledgement is not counted by faust (acknowledged already); the gate must still move,
    or it waits for ever for offset 0 and the partition is read again without end."""
    for offset in (0, 1, 2):
        assert consumer.ack(message(offset))
    consumer._order.start(TURNS, 0)  # what seeking a partition with nothing committed does
    assert asyncio.run(consumer.admit([message(3)])) == [False]
    assert consumer.seeks == [(TURNS, 0)]  # type: ignore[attr-defined]
    again = [message(offset) for offset in (0, 1, 2, 3)]
    assert asyncio.run(consumer.admit(again)) == [True] * 4
    for m in again:
        consumer.ack(m)
    assert asyncio.run(consumer.admit([message(4)])) == [True]
    assert consumer.seeks == [(TURNS, 0)]  # type: ignore[attr-defined]  # no second re-read
