"""ContiguousConsumer's offset rules, deterministically.

The races these rules close (a rebalance while records are prefetched or queued) cannot be
triggered on demand against a real broker; tests/kafka/test_worker.py runs the whole worker
against tansu for that. Here a real faust app and consumer are built but never connected, so
the broker-facing calls (the fetch, seek and assignment) are replaced by recorders.
"""

from __future__ import annotations

import asyncio
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
