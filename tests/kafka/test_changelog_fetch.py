"""Table changelog records fetched across a rebalance are not lost, against tansu.

faust passes aiokafka's ``fetched_records`` its live set of active partitions; a fetch that
waits across a rebalance sees it emptied (faust pauses every assigned partition) and aiokafka
then takes the records of every partition, which faust's fetch loop drops while the flow is
stopped. For a changelog partition Table recovery had already sought to its start, that left
recovery waiting for ever (pipeline/kafka/offsets.py, ``ChangelogKeepingThread``). Here the
worker's real consumer thread fetches with a real aiokafka consumer; only the rebalance is
played by hand, at a point the fetch is known to be waiting."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from faust.types import TP

from pipeline.kafka import offsets

pytestmark = [pytest.mark.kafka]


def test_changelog_records_taken_while_the_flow_is_stopped_are_fetched_again(
        kafka_bootstrap: str) -> None:
    group = f"chatmon-test-{uuid.uuid4().hex[:8]}"
    app = offsets.App(group, broker=f"kafka://{kafka_bootstrap}", store="memory://",
                      autodiscover=False, web_enabled=False)
    app.Table("context", default=None)  # registers its changelog topic
    owner = app.consumer
    changelog, turns = TP(f"{group}-context-changelog", 0), TP(f"{group}-turns", 0)
    assert owner._is_changelog_tp(changelog)

    async def scenario() -> tuple[list[str], int]:
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
        await admin.start()
        await admin.create_topics([NewTopic(tp.topic, 1, 1) for tp in (changelog, turns)])
        await admin.close()
        producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, max_batch_size=1)
        await producer.start()
        aio = AIOKafkaConsumer(bootstrap_servers=kafka_bootstrap, enable_auto_commit=False)
        try:
            for i in range(3):
                await producer.send_and_wait(changelog.topic, b"v%d" % i, key=b"k", partition=0)
            await aio.start()
            aio.assign([changelog, turns])
            aio.seek(changelog, 0)  # where Table recovery starts reading
            aio.seek(turns, 0)
            owner.flow_active = True
            active = owner._set_active_tps({turns})  # the changelog is not read yet

            async def rebalance() -> None:
                await asyncio.sleep(1.5)  # the changelog's records are buffered by now
                owner.stop_flow()  # a rebalance: the flow stops, every partition is paused
                owner.pause_partitions({turns})
                await producer.send_and_wait(turns.topic, b"t", partition=0)  # wakes the fetch

            task = asyncio.create_task(rebalance())
            records = await owner._thread._fetch_records(aio, active, timeout=15.0)
            await task
            return [tp.topic for tp in records], await aio.position(changelog)
        finally:
            await aio.stop()
            await producer.stop()

    topics, position = asyncio.run(scenario())
    # faust drops whatever comes back while the flow is stopped: the changelog's records must
    # not be among them, and the partition must be read again from where recovery put it
    assert changelog.topic not in topics
    assert position == 0
