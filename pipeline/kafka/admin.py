"""``chatmon topics create``: the worker's topics through kafka-python's admin client."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def create_topics(bootstrap: str, names: Sequence[str], partitions: int,
                  replication: int = 1) -> dict[str, str]:
    """Create each topic unless it exists; returns name -> "created" | "exists"."""
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), client_id="chatmon-admin")
    out: dict[str, str] = {}
    try:
        existing = set(admin.list_topics())
        for name in names:
            if name in existing:
                out[name] = "exists"
                continue
            try:
                admin.create_topics([NewTopic(name, partitions, replication)])
                out[name] = "created"
            except TopicAlreadyExistsError:
                out[name] = "exists"
    finally:
        admin.close()
    return out


def describe(bootstrap: str, names: Sequence[str]) -> dict[str, Any]:
    """Partition count per topic (absent topics are left out)."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","))
    try:
        return {n: len(consumer.partitions_for_topic(n) or ()) for n in names
                if consumer.partitions_for_topic(n)}
    finally:
        consumer.close()
