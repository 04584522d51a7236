"""Deletion on request reaches a Kafka worker's Tables, against a real Kafka-protocol broker
(tansu) and PostgreSQL: after ``chatmon purge --conversation C`` the worker tombstones C's
context and writes each bot's repetition state without C; a restarted worker restores that
from the changelogs, so C's reply is matched by nothing; a replay of C's events stores
nothing; the worker's own audit row says what it removed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from detectors.repetition.sketch import unpack
from detectors.repetition.state import conversation_hash
from pipeline.lifecycle.audit import purge_log
from pipeline.store import db
from tests.kafka.helpers import (
    KafkaNames,
    Worker,
    chatmon,
    chatmon_env,
    db_counts,
    make_turns,
    wait_until,
    write_jsonl,
)

pytestmark = [pytest.mark.kafka, pytest.mark.postgres]
GONE, TWIN, AFTER = "gone-c", "twin-e", "after-d"
STATE_KEY = b"repetition//bot-0"
REPLY = ("Your walnut bookcase left our Darlington depot; the courier brings it on Friday "
         "between eight and noon, and the driver will ring you first.")


def conversation(conv: str, minute: int) -> list[dict[str, Any]]:
    return [{"conversation_id": conv, "turn": t, "role": role, "text": body,
             "ts": f"2026-03-01T11:{minute:02d}:0{t}Z", "bot_id": "bot-0"}
            for t, (role, body) in enumerate([("user", "Where is my bookcase?"),
                                              ("assistant", REPLY)])]


def latest(bootstrap: str, topic: str) -> dict[bytes, Any]:
    """The value a restore ends with, per key (None: a tombstone)."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=3000, group_id=None)
    out: dict[bytes, Any] = {}
    try:
        for m in consumer:
            out[m.key] = None if m.value is None else json.loads(m.value)
    finally:
        consumer.close()
    return out


def near_duplicates(url: str, conv: str) -> list[Any]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(text("select evidence from findings where conversation_id = :c "
                                 "and label = 'repetition.near_duplicate'"), {"c": conv}).all()
    engine.dispose()
    return [json.loads(r[0]) if isinstance(r[0], str) else r[0] for r in rows]


def windows(url: str, conv: str) -> int:
    engine = create_engine(url)
    with engine.connect() as conn:
        n = conn.execute(text("select count(*) from findings where conversation_id = :c "
                              "and label = 'repetition.window'"), {"c": conv}).scalar_one()
    engine.dispose()
    return int(n)


def turns_of(url: str, conv: str) -> int:
    engine = create_engine(url)
    with engine.connect() as conn:
        n = conn.execute(text("select count(*) from turns where conversation_id = :c"),
                         {"c": conv}).scalar_one()
    engine.dispose()
    return int(n)


def produce(env: dict[str, str], path: Path, rows: list[dict[str, Any]]) -> None:
    done = chatmon(["produce", str(write_jsonl(path, rows)), "--no-progress"], env)
    assert done.returncode == 0, done.stderr


def test_purge_reaches_the_worker_tables_and_survives_a_restart(
        kafka_bootstrap: str, names: KafkaNames, postgres_url: str, tmp_path: Path,
        workers: Callable[..., Worker]) -> None:
    env = chatmon_env(kafka_bootstrap, names, postgres_url, CHATMON_DELETION_POLL_S="1")
    assert chatmon(["topics", "create"], env).returncode == 0
    worker = workers(env)
    produce(env, tmp_path / "a.jsonl", make_turns(12) + conversation(GONE, 1)
            + conversation(TWIN, 2))
    wait_until(lambda: db_counts(postgres_url)["window_turns"] >= 26, 120, "all results")
    # The control: C's reply and the twin's are near-copies (the later one, whichever stage 2
    # saw second, names the other), and the Tables hold C.
    pairs = {(conv, e["conversation_id"]) for conv in (GONE, TWIN)
             for e in near_duplicates(postgres_url, conv)}
    assert pairs in ({(TWIN, GONE)}, {(GONE, TWIN)})
    contexts = f"{names.group}-context-changelog"
    states = f"{names.group}-repetition-changelog"
    assert latest(kafka_bootstrap, contexts)[GONE.encode()]
    state = latest(kafka_bootstrap, states)[STATE_KEY]
    assert conversation_hash(GONE) in unpack(state["rows"]["conv"], "u4").tolist()

    purged = chatmon(["purge", "--conversation", GONE], env)
    assert purged.returncode == 0, purged.stderr
    engine = db.make_engine(postgres_url)
    log = wait_until(lambda: [r for r in purge_log(engine)
                              if r["command"].startswith("chatmon worker")], 60,
                     "the worker to apply the deletion record")
    assert log[0]["rows"]["state.context"] == 1 and log[0]["rows"]["state.repetition"] >= 1
    assert latest(kafka_bootstrap, contexts)[GONE.encode()] is None  # a tombstone
    state = latest(kafka_bootstrap, states)[STATE_KEY]
    assert conversation_hash(GONE) not in unpack(state["rows"]["conv"], "u4").tolist()
    assert GONE not in json.dumps(state)

    # A restarted worker restores the Tables from the changelogs: C is matched by nothing,
    # the twin still is; C's replayed events store nothing.
    worker.stop()
    restarted = workers(env, "restarted")
    produce(env, tmp_path / "b.jsonl", conversation(AFTER, 3) + conversation(GONE, 1))
    wait_until(lambda: windows(postgres_url, AFTER), 120, "the new conversation's result")
    wait_until(lambda: restarted.stats().get("records", {}).get("stage1", 0) >= 4, 60,
               "the replayed events to be read")
    assert [e["conversation_id"] for e in near_duplicates(postgres_url, AFTER)] == [TWIN]
    assert turns_of(postgres_url, GONE) == 0
    engine.dispose()
