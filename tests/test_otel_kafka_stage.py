"""The worker's OTLP stage (pipeline/kafka/otel.py) without a broker: fake topics record what it
produces. ``otlp_json`` records, turn events keyed by conversation in conversation order, the
dead-letter shapes, a lone surrogate that cannot stop the stage; the broker test is
tests/kafka/test_otel_worker.py."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format

from pipeline.ingest.otel import OtelOptions
from pipeline.kafka.lag import WorkerStats
from pipeline.kafka.otel import OtlpStage, one_span
from tests.otel_spans import chat_span, request, semconv


@dataclass
class Msg:
    value: bytes
    offset: int
    key: bytes | None = None
    topic: str = "otlp_spans"
    partition: int = 0


@dataclass
class Event:
    message: Msg


class FakeTopic:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def send(self, **kwargs: Any) -> asyncio.Future[None]:
        self.sent.append(kwargs)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done


def run(encoding: str, values: list[bytes]) -> tuple[FakeTopic, FakeTopic, WorkerStats]:
    turns, dlq, stats = FakeTopic(), FakeTopic(), WorkerStats()
    stage = OtlpStage(encoding, OtelOptions(), stats, turns.send, dlq.send)
    asyncio.run(stage.handle([Event(Msg(v, i)) for i, v in enumerate(values)]))
    return turns, dlq, stats


def test_otlp_json_records_become_turn_events_in_conversation_order() -> None:
    export = request(
        chat_span("j-1", [semconv("user", "Hi")], [semconv("assistant", "Hello")]),
        chat_span("j-2", [semconv("user", "Yo")], [semconv("assistant", "Hey")]))
    body = json_format.MessageToJson(export).encode()
    turns, dlq, stats = run("otlp_json", [body])
    assert dlq.sent == []
    events = [(m["key"], json.loads(m["value"])) for m in turns.sent]
    assert [(k, e["turn"], e["role"]) for k, e in events] == [
        (b"j-1", 0, "user"), (b"j-1", 1, "assistant"), (b"j-2", 0, "user"),
        (b"j-2", 1, "assistant")]
    assert dict(turns.sent[0]["headers"])["position"] == b"0:0 span 0 message 0"
    assert stats.records == {"otlp": 1}


def test_a_bad_record_and_a_refused_span_are_dead_lettered_apart_from_good_ones() -> None:
    good = chat_span("d-1", [semconv("user", "Hi")], [semconv("assistant", "Hello")])
    lost = chat_span("", [semconv("user", "My name is Ann Lee")], [semconv("assistant", "Hi")])
    record = request(good, lost).SerializeToString()
    turns, dlq, _ = run("otlp_proto", [b"\x0a\xff\xff", record])
    assert [json.loads(m["value"])["conversation_id"] for m in turns.sent] == ["d-1", "d-1"]
    first, second = (dict(m["headers"]) for m in dlq.sent)
    assert first["reason"] == b"invalid_otlp" and dlq.sent[0]["value"] == b"\x0a\xff\xff"
    assert second["reason"] == b"no_conversation_id" and second["position"] == b"0:1 span 1"
    assert b"Ann" not in second["detail"]
    assert dlq.sent[1]["value"] == one_span(request(good, lost), 1).SerializeToString()
    assert one_span(request(good, lost), 1) == request(lost)


def test_a_lone_surrogate_in_a_message_is_escaped_for_stage_1_to_refuse() -> None:
    span = chat_span("s-1", [], [semconv("assistant", "x")])
    for kv in span.attributes:
        if kv.key == "gen_ai.input.messages":
            kv.value.string_value = '[{"role": "user", "parts": [{"type": "text", ' \
                                    '"content": "bad \\ud800 here"}]}]'
    turns, dlq, _ = run("otlp_proto", [request(span).SerializeToString()])
    assert dlq.sent == [] and b"\\ud800" in turns.sent[0]["value"]


def test_a_record_the_mapping_fails_on_is_dead_lettered_and_the_next_one_mapped(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import pipeline.kafka.otel as stage

    real = stage.map_request
    calls = []

    def flaky(export, options):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 1:
            raise KeyError("secret text")
        return real(export, options)

    monkeypatch.setattr(stage, "map_request", flaky)
    record = request(chat_span("f-1", [semconv("user", "Hi")], [semconv("assistant", "Hello")]))
    turns, dlq, _ = run("otlp_proto", [record.SerializeToString()] * 2)
    headers = dict(dlq.sent[0]["headers"])
    assert headers["reason"] == b"processing_error" and b"secret" not in headers["detail"]
    assert len(dlq.sent) == 1 and len(turns.sent) == 2


def test_topics_create_makes_the_otlp_topic_only_when_one_is_configured(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from pipeline.cli import cli
    from pipeline.kafka import admin

    asked: list[list[str]] = []

    def create_topics(bootstrap: str, names: list[str], partitions: int,
                      replication: int = 1) -> dict[str, str]:
        asked.append(list(names))
        return {n: "created" for n in names}

    monkeypatch.setattr(admin, "create_topics", create_topics)
    for key in ("CHATMON_KAFKA_OTLP_TOPIC", "CHATMON_KAFKA_TURNS_TOPIC",
                "CHATMON_KAFKA_PHRASES_TOPIC", "CHATMON_KAFKA_DLQ_TOPIC"):
        monkeypatch.delenv(key, raising=False)
    res = CliRunner().invoke(cli, ["topics", "create"])
    assert res.exit_code == 0, res.output
    monkeypatch.setenv("CHATMON_KAFKA_OTLP_TOPIC", "otlp_spans")
    res = CliRunner().invoke(cli, ["topics", "create"])
    assert res.exit_code == 0, res.output
    assert asked == [["turns", "phrases", "turns.dlq"],
                     ["turns", "phrases", "turns.dlq", "otlp_spans"]]
    assert "otlp_spans: created" in res.output
