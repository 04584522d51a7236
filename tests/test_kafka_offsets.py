"""ContiguousConsumer's offset rules, deterministically.

The races these rules close (a rebalance while records are prefetched or queued) cannot be
triggered on demand against a real broker; tests/kafka/test_worker.py runs the whole worker
against tansu for that. Here a real faust app and consumer are built but never connected, so
the broker-facing calls (the fetch, seek and assignment) are replaced by recorders.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
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


async def delivered(consumer: offsets.ContiguousConsumer) -> list[int]:
    """The offsets one getmany hands to the stages, recording each as faust's fetch loop does."""
    out = []
    async for _tp, msg in consumer.getmany(1.0):
        consumer._read_offset[TURNS] = msg.offset
        out.append(msg.offset)
    return out


def test_a_fetch_that_skips_offsets_is_sought_back(
        consumer: offsets.ContiguousConsumer, monkeypatch: pytest.MonkeyPatch) -> None:
    async def fetched(self: Any, timeout: float) -> AsyncIterator[tuple[TP, ConsumerMessage]]:
        for offset in (5, 6, 9, 10):  # 7 and 8 were cleared from the queues at a rebalance
            yield TURNS, message(offset)

    monkeypatch.setattr(offsets.faust_aiokafka.Consumer, "getmany", fetched)
    asyncio.run(consumer.seek(TURNS, 5))
    consumer.seeks.clear()  # type: ignore[attr-defined]

    assert asyncio.run(delivered(consumer)) == [5, 6]
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


def test_the_gate_never_waits_for_offsets_below_the_committed_one(
        consumer: offsets.ContiguousConsumer) -> None:
    """The gate started at the log start while the partition's first events were processed and
    committed (every detector on, a SIGKILLed worker's partitions taken over: stage 2 read a
    phrases partition from offset 0 again and again). Repeats below the committed offset are
    not counted, so a gate waiting for them held every later event back for good."""
    consumer._order.start(TURNS, 0)
    consumer._committed_offset[TURNS] = 26
    again = [message(offset) for offset in range(26)]
    assert all(asyncio.run(consumer.admit(again)))  # repeats are idempotent
    for m in again:
        assert consumer.ack(m) is False  # faust does not count offsets below the committed one
    assert asyncio.run(consumer.admit([message(26), message(27)])) == [True, True]
    assert consumer.seeks == []  # type: ignore[attr-defined]


def test_events_processed_while_the_log_start_is_asked_for_stay_processed(
        consumer: offsets.ContiguousConsumer, monkeypatch: pytest.MonkeyPatch) -> None:
    """perform_seek on a partition with nothing committed asks the broker for its log start; a
    stage processes a batch meanwhile. The gate must not start below that batch (it held the
    events after it back and re-read the partition without end)."""
    async def nothing_committed(self: Any) -> dict[TP, int | None]:
        return {TURNS: None}

    monkeypatch.setattr(offsets.faust_aiokafka.Consumer, "seek_to_committed", nothing_committed)
    batch = [message(offset) for offset in range(26)]

    async def earliest_offsets(*tps: TP) -> dict[TP, int]:
        if batch:  # the event loop runs a stage while the broker answers
            assert all(await consumer.admit(batch))
            for m in batch:
                assert consumer.ack(m)
            batch.clear()
        return {tp: 0 for tp in tps}

    consumer.earliest_offsets = earliest_offsets  # type: ignore[method-assign,assignment]
    asyncio.run(consumer.perform_seek())
    assert consumer.seeks == [(TURNS, 0)]  # type: ignore[attr-defined]  # 0-25 again: repeats
    assert consumer._order.done[TURNS] == 26
    assert asyncio.run(consumer.admit([message(26)])) == [True]
    assert consumer._filter_committable_offsets([TURNS]) == {TURNS: 26}


def test_records_faust_fetched_but_did_not_deliver_are_read_again(
        consumer: offsets.ContiguousConsumer, monkeypatch: pytest.MonkeyPatch) -> None:
    """faust's fetch loop drops the rest of a fetch when flow stops or the generation changes,
    and the records of a partition paused meanwhile, after the fetch position moved past them.
    At the end of a stream no later record shows the hole: the partition stalled with lag (17
    turns never stored with every detector, the survivor of a SIGKILL holding the partitions)."""
    class Record:
        def __init__(self, offset: int) -> None:
            self.offset = offset

    async def wait_next_records(self: Any, timeout: float) -> tuple[Any, Any]:
        return {TURNS: [Record(o) for o in range(5, 10)]}, {TURNS}

    async def fetched(self: Any, timeout: float) -> AsyncIterator[tuple[TP, ConsumerMessage]]:
        await self._wait_next_records(timeout)
        for offset in (5, 6):  # then the partition is paused: 7-9 are dropped
            yield TURNS, message(offset)

    monkeypatch.setattr(offsets.faust_aiokafka.Consumer, "_wait_next_records",
                        wait_next_records)
    monkeypatch.setattr(offsets.faust_aiokafka.Consumer, "getmany", fetched)
    asyncio.run(consumer.seek(TURNS, 5))
    consumer.seeks.clear()  # type: ignore[attr-defined]

    assert asyncio.run(delivered(consumer)) == [5, 6]
    assert consumer.seeks == [(TURNS, 7)]  # type: ignore[attr-defined]
    assert consumer.rereads == 1


def test_a_partition_with_events_that_never_reach_a_stage_is_read_again(
        consumer: offsets.ContiguousConsumer) -> None:
    """Events beyond the ones processed exist (the fetch highwater says so), yet none was
    fetched or reached a stage for ``idle_s``: whatever dropped them, nothing later would show
    the hole, so the partition is read again from the first offset not processed."""
    consumer._order.start(TURNS, 10)
    consumer.highwater = lambda tp: 10  # type: ignore[method-assign,assignment]
    asyncio.run(consumer._reread_idle(100.0))
    asyncio.run(consumer._reread_idle(100.0 + 2 * consumer.idle_s))
    assert consumer.seeks == []  # type: ignore[attr-defined]  # nothing beyond offset 10
    consumer.highwater = lambda tp: 17  # type: ignore[method-assign,assignment]
    consumer._progress[TURNS] = 200.0
    asyncio.run(consumer._reread_idle(200.0 + consumer.idle_s - 1))
    assert consumer.seeks == []  # type: ignore[attr-defined]
    asyncio.run(consumer._reread_idle(200.0 + consumer.idle_s))
    assert consumer.seeks == [(TURNS, 10)]  # type: ignore[attr-defined]
    assert consumer.rereads == 1
    assert asyncio.run(consumer.admit([message(10)])) == [True]  # it arrives: progress
    asyncio.run(consumer._reread_idle(time.monotonic() + consumer.idle_s - 1))
    assert consumer.seeks == [(TURNS, 10)]  # type: ignore[attr-defined]


def test_no_idle_re_read_while_the_stage_has_a_batch_in_hand(
        consumer: offsets.ContiguousConsumer) -> None:
    """A batch waiting for the store (or a slow one) holds the events queued behind it: the
    partition is not idle then, whatever the clock says."""
    consumer._order.start(TURNS, 10)
    consumer.highwater = lambda tp: 17  # type: ignore[method-assign,assignment]
    in_hand = message(10)
    consumer._unacked_messages.add(in_hand)  # what the stream does when a stage takes it
    consumer._progress[TURNS] = 200.0
    asyncio.run(consumer._reread_idle(200.0 + 2 * consumer.idle_s))
    assert consumer.seeks == []  # type: ignore[attr-defined]
    consumer.ack(in_hand)  # processed: 11 is the first offset not processed
    asyncio.run(consumer._reread_idle(200.0 + 2 * consumer.idle_s))
    assert consumer.seeks == [(TURNS, 11)]  # type: ignore[attr-defined]
