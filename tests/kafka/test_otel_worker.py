"""``chatmon worker`` on an OTLP topic, against the test broker (tansu) and PostgreSQL: records
encoded with ``opentelemetry-proto`` as the OpenTelemetry Collector's Kafka exporter writes them
(``otlp_proto``), the conversation stored once though a record is replayed and the second span
repeats the history, and the dead-letter rules of the turns topic for a record that is not an
export and for a span the mapping refuses."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from sqlalchemy import create_engine, text

from pipeline.kafka.admin import create_topics
from pipeline.kafka.producer import send_raw
from tests.kafka.helpers import (
    PARTITIONS,
    KafkaNames,
    Worker,
    chatmon,
    chatmon_env,
    db_counts,
    wait_until,
)
from tests.kafka.test_worker import _read_topic
from tests.otel_spans import chat_span, request, semconv

pytestmark = [pytest.mark.kafka, pytest.mark.postgres]


def test_otlp_records_become_turns_once_and_refusals_go_to_the_dlq(
        kafka_bootstrap: str, names: KafkaNames, postgres_url: str,
        workers: Callable[..., Worker]) -> None:
    otlp = f"otlp_spans-{names.suffix}"
    env = chatmon_env(kafka_bootstrap, names, postgres_url, CHATMON_KAFKA_OTLP_TOPIC=otlp)
    assert chatmon(["topics", "create"], env).returncode == 0
    create_topics(kafka_bootstrap, [otlp], PARTITIONS)
    first = chat_span("k-1", [semconv("user", "Hi, my router is down")],
                      [semconv("assistant", "Sorry! Let's restart it.")])
    second = chat_span("k-1", [semconv("user", "Hi, my router is down"),
                               semconv("assistant", "Sorry! Let's restart it."),
                               semconv("user", "Done, still down")],
                       [semconv("assistant", "I'll send a technician.")], start_s=60)
    no_conversation = chat_span("", [semconv("user", "Hello?")], [semconv("assistant", "Hi")])
    export = request(first, second).SerializeToString()
    refused = request(no_conversation).SerializeToString()
    truncated = export[:-9]
    assert send_raw(kafka_bootstrap, otlp, [(None, export), (None, truncated), (None, refused),
                                            (None, export)]) == 4  # the last: a replay
    worker = workers(env)
    wait_until(lambda: db_counts(postgres_url)["turns"] >= 4, 90, "the conversation's turns")
    dlq = _read_topic(kafka_bootstrap, names.dlq, 2)
    assert worker.alive()
    counts = db_counts(postgres_url)
    assert counts["turns"] == counts["distinct_turns"] == 4 and counts["dead_letters"] == 0
    engine = create_engine(postgres_url)
    with engine.connect() as conn:
        rows = conn.execute(text("select turn, role, bot_id from turns order by turn")).all()
    engine.dispose()
    assert [tuple(r) for r in rows] == [(0, "user", "helpdesk-bot"),
                                        (1, "assistant", "helpdesk-bot"),
                                        (2, "user", "helpdesk-bot"),
                                        (3, "assistant", "helpdesk-bot")]

    by_reason = {dict(m.headers)["reason"].decode(): m for m in dlq}
    assert set(by_reason) == {"invalid_otlp", "no_conversation_id"}
    assert by_reason["invalid_otlp"].value == truncated  # the record as it came
    alone = ExportTraceServiceRequest.FromString(by_reason["no_conversation_id"].value)
    assert alone == request(no_conversation)  # the refused span alone, with its resource
    for m in dlq:
        headers = dict(m.headers)
        assert headers["source"] == f"kafka:{otlp}".encode() and headers["detail"]
        assert b"Hello" not in headers["detail"]
    stats = wait_until(lambda: (s := worker.stats()) and s["records"].get("otlp") == 4 and s,
                       30, "the otlp stage's count")
    assert stats["records"]["stage1"] >= 8  # both copies of the export reached stage 1
    metrics = worker.text("/metrics") or ""
    assert 'chatmon_otel_spans_total{outcome="chat"}' in metrics
    assert json.loads(json.dumps(stats))  # /health stays JSON with the new stage
