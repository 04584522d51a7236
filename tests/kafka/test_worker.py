"""Integration tests against a real Kafka-protocol broker (tansu) and PostgreSQL: chatmon
produce -> chatmon worker (two faust stages) -> one store. Each test has its own topics and
consumer group. Light detector set (repetition only) keeps worker start-up to seconds."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests.kafka.helpers import (
    PHRASE,
    KafkaNames,
    Worker,
    all_stored,
    balanced,
    chatmon,
    chatmon_env,
    db_counts,
    kill_mid_stream,
    make_turns,
    wait_until,
    write_jsonl,
)

pytestmark = [pytest.mark.kafka, pytest.mark.postgres]
ADMIN_PG = os.environ.get("CHATMON_TEST_POSTGRES_URL",
                          "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def _env(kafka_bootstrap: str, names: KafkaNames, postgres_url: str) -> dict[str, str]:
    env = chatmon_env(kafka_bootstrap, names, postgres_url)
    created = chatmon(["topics", "create"], env)
    assert created.returncode == 0, created.stderr
    assert f"{names.turns}: created" in created.stdout
    return env


def test_produce_2000_turns_gives_one_result_per_assistant_turn(
        kafka_bootstrap: str, names: KafkaNames, postgres_url: str, tmp_path: Path,
        workers: Callable[..., Worker]) -> None:
    env = _env(kafka_bootstrap, names, postgres_url)
    path = write_jsonl(tmp_path / "turns.jsonl", make_turns(500),
                       ('{"conversation_id": "x", "turn": 1}', "not json"))
    worker = workers(env)
    produced = chatmon(["produce", str(path), "--json"], env)
    assert produced.returncode == 0, produced.stderr
    summary = json.loads(produced.stdout.strip().splitlines()[-1])
    assert (summary["sent"], summary["invalid"], summary["failed"]) == (2000, 2, 0)
    assert "line 2001: missing_field" in produced.stderr
    assert "line 2002: invalid_json" in produced.stderr

    wait_until(lambda: db_counts(postgres_url)["window_turns"] >= 1000, 180,
               "a repetition result for every assistant turn")
    counts = db_counts(postgres_url)
    assert counts["turns"] == counts["distinct_turns"] == 2000
    assert counts["assistant"] == 1000
    assert counts["windows"] == counts["window_turns"] == 1000  # exactly one each
    assert counts["dead_letters"] == 0
    engine = create_engine(postgres_url)
    with engine.connect() as conn:
        flagged = conn.execute(text(
            "select count(distinct f.turn_id) from findings f join turns t on t.id = f.turn_id "
            "where f.label = 'repetition.stock_phrase' and t.text_redacted like :p"),
            {"p": f"%{PHRASE}%"}).scalar_one()
    engine.dispose()
    assert flagged > 0  # the planted stock phrase of bot-0 was found across conversations
    stats = wait_until(lambda: (s := worker.stats()) and s["lag"]["total"] == 0 and s, 30,
                       "lag to drain")
    assert stats["records"]["stage1"] == 2000 and stats["records"]["stage2"] == 1000
    assert stats["batch_latency_s"]["p50"] is not None

    # Table changelogs are co-partitioned with their input topics, so a partition's context and
    # per-bot state move with it on a rebalance.
    turns = _key_partitions(kafka_bootstrap, names.turns)
    contexts = _key_partitions(kafka_bootstrap, f"{names.group}-context-changelog")
    assert len(turns) == 500 and contexts == turns
    phrases = _key_partitions(kafka_bootstrap, names.phrases)
    states = _key_partitions(kafka_bootstrap, f"{names.group}-repetition-changelog")
    assert len(phrases) == 3 and states == phrases


def _key_partitions(bootstrap: str, topic: str) -> dict[bytes, set[int]]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=3000, group_id=None)
    out: dict[bytes, set[int]] = {}
    try:
        for m in consumer:
            out.setdefault(m.key, set()).add(m.partition)
    finally:
        consumer.close()
    return out


def test_two_workers_share_partitions(kafka_bootstrap: str, names: KafkaNames,
                                      postgres_url: str, tmp_path: Path,
                                      workers: Callable[..., Worker]) -> None:
    env = _env(kafka_bootstrap, names, postgres_url)
    a, b = workers(env, "a"), workers(env, "b")
    wait_until(lambda: balanced(a, b, names.turns), 60, "both workers to hold partitions")
    produced = chatmon(["produce", str(write_jsonl(tmp_path / "t.jsonl", make_turns(100))),
                        "--no-progress"], env)
    assert produced.returncode == 0, produced.stderr
    wait_until(lambda: db_counts(postgres_url)["window_turns"] >= 200, 90, "all results")
    counts = db_counts(postgres_url)
    assert counts["turns"] == 400 and counts["windows"] == 200
    done_a, done_b = a.stats()["records"]["stage1"], b.stats()["records"]["stage1"]
    assert done_a > 0 and done_b > 0 and done_a + done_b == 400


def test_sigkill_mid_stream_loses_nothing_and_stores_nothing_twice(
        kafka_bootstrap: str, names: KafkaNames, postgres_url: str, tmp_path: Path,
        workers: Callable[..., Worker]) -> None:
    env = _env(kafka_bootstrap, names, postgres_url)
    a, b = workers(env, "a"), workers(env, "b")
    wait_until(lambda: balanced(a, b, names.turns), 60, "both workers to hold partitions")
    # 1200 turns at 100/s: 12 s, so that the kill (after the victim's first 100) comes while
    # turns are still produced also on a slow machine (6 s at 200/s was too short for one)
    path = write_jsonl(tmp_path / "t.jsonl", make_turns(300))
    c = kill_mid_stream(env, path, 100, a, 100, lambda: workers(env, "a-restarted"))
    # after a SIGKILL the group needs a few rebalances on tansu; slow under load, so wait long
    try:
        wait_until(lambda: all_stored(postgres_url, 1200), 300, "all results")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: stored {db_counts(postgres_url)}; survivor's "
                             f"{b.describe()}; restarted worker's {c.describe()}") from None
    counts = db_counts(postgres_url)
    assert counts["turns"] == counts["distinct_turns"] == 1200
    assert counts["windows"] == counts["window_turns"] == 600
    assert counts["dead_letters"] == 0


def _read_topic(bootstrap: str, topic: str, expect: int) -> list[Any]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=3000, group_id=None)
    try:
        out: list[Any] = []
        wait_until(lambda: out.extend(consumer) or len(out) >= expect, 60, f"{expect} on {topic}")
        return out
    finally:
        consumer.close()


def test_poison_events_go_to_the_dlq_and_good_ones_around_them_are_stored(
        kafka_bootstrap: str, names: KafkaNames, postgres_url: str,
        workers: Callable[..., Worker]) -> None:
    from pipeline.kafka.producer import send_raw

    env = _env(kafka_bootstrap, names, postgres_url)
    good = make_turns(1, prefix="raw")  # 4 turns of one conversation
    kcat_style = ('{ "turn" : 1, "text": "' + good[1]["text"] + '", "role":"assistant", '
                  '"ts":"2026-03-01T10:00:00Z", "conversation_id":"raw00000", "bot_id": "bot-0" }')
    messages = [
        (b"raw00000", json.dumps(good[0]).encode()),
        (b"raw00000", b"{not json"),
        (None, kcat_style.encode()),  # raw JSON with no key, as `kcat -P` sends it
        (b"raw00000", json.dumps({"conversation_id": "raw00000", "turn": 5}).encode()),
        (b"raw00000", b"\xff\xfe{}"),
        (b"raw00000", json.dumps(good[2]).encode()),
        (b"raw00000", json.dumps(good[3]).encode()),
    ]
    assert send_raw(kafka_bootstrap, names.turns, messages) == 7
    worker = workers(env)
    wait_until(lambda: db_counts(postgres_url)["window_turns"] >= 2, 60, "good turns stored")
    counts = db_counts(postgres_url)
    assert counts["turns"] == 4 and counts["dead_letters"] == 3

    dlq = _read_topic(kafka_bootstrap, names.dlq, 3)
    assert len(dlq) == 3
    by_reason = {dict(m.headers)["reason"].decode(): m for m in dlq}
    assert set(by_reason) == {"invalid_json", "missing_field", "invalid_utf8"}
    assert by_reason["invalid_json"].value == b"{not json"  # the original bytes, unchanged
    assert by_reason["invalid_utf8"].value == b"\xff\xfe{}"
    for m in dlq:
        headers = dict(m.headers)
        assert headers["source"] == f"kafka:{names.turns}".encode()
        assert headers["position"].decode().split(":")[1].isdigit()
        assert headers["detail"]

    phrases = _read_topic(kafka_bootstrap, names.phrases, 2)  # stage 1 -> stage 2 wire format
    assert {m.key for m in phrases} == {b"repetition//bot-0"}
    values = [json.loads(m.value) for m in phrases]
    assert sorted(v["turn"] for v in values) == [1, 3]
    assert all(v["role"] == "assistant" and v["conversation_id"] == "raw00000" for v in values)

    metrics = wait_until(lambda: (m := worker.text("/metrics")) and "chatmon_consumer_lag{" in m
                         and m, 10, "lag on /metrics")
    assert 'chatmon_dead_letters_total{reason="invalid_json"} 1.0' in metrics


def test_sink_outage_pauses_and_retries_instead_of_dropping(
        kafka_bootstrap: str, names: KafkaNames, postgres_url: str, tmp_path: Path,
        workers: Callable[..., Worker]) -> None:
    env = _env(kafka_bootstrap, names, postgres_url)
    worker = workers(env)
    database = make_url(postgres_url).database
    admin = create_engine(ADMIN_PG, isolation_level="AUTOCOMMIT")

    def allow(on: bool) -> None:
        with admin.connect() as conn:
            conn.execute(text(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS {str(on).lower()}'))
            if not on:
                conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                  "WHERE datname = :d AND pid <> pg_backend_pid()"),
                             {"d": database})

    allow(False)
    try:
        produced = chatmon(["produce", str(write_jsonl(tmp_path / "t.jsonl", make_turns(10))),
                            "--no-progress"], env)
        assert produced.returncode == 0, produced.stderr
        stats = wait_until(lambda: (s := worker.stats()) and s.get("sink_retries", 0) >= 3 and s,
                           60, "the worker to retry the unavailable database")
        assert stats["status"] == "degraded" and stats["sink_down_for_s"] is not None
        assert worker.alive()
        assert stats["records"].get("stage1", 0) == 0  # nothing acknowledged while down
    finally:
        allow(True)
        admin.dispose()
    wait_until(lambda: db_counts(postgres_url)["window_turns"] >= 20, 90, "results after outage")
    counts = db_counts(postgres_url)
    assert counts["turns"] == 40 and counts["windows"] == 20
    assert wait_until(lambda: worker.stats().get("status") == "ok", 30, "status ok again")
