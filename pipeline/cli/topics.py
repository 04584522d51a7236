"""``chatmon topics create``: the worker's Kafka topics."""

from __future__ import annotations

import click

from pipeline.cli.context import Ctx, pass_ctx, topic_options


@click.group("topics")
def topics_group() -> None:
    """Kafka topics of the worker."""


@topics_group.command("create")
@topic_options
@click.option("--replication", type=int, default=1, show_default=True)
@pass_ctx
def topics_create(obj: Ctx, turns_topic: str | None, phrases_topic: str | None,
                  dlq_topic: str | None, partitions: int | None, replication: int) -> None:
    """Create the turns, phrases and dead-letter topics, and the OTLP topic where
    CHATMON_KAFKA_OTLP_TOPIC names one (existing ones are left as they are)."""
    from pipeline.kafka.admin import create_topics

    s = obj.settings()
    names = [turns_topic or s.kafka_turns_topic, phrases_topic or s.kafka_phrases_topic,
             dlq_topic or s.kafka_dlq_topic]
    # The worker reads it from its start, and a broker without auto-creation would leave the
    # Collector's exporter failing until someone made it.
    if s.kafka_otlp_topic:
        names.append(s.kafka_otlp_topic)
    result = create_topics(s.kafka_bootstrap, names, partitions or s.kafka_partitions, replication)
    for name, state in result.items():
        click.echo(f"{name}: {state}")
