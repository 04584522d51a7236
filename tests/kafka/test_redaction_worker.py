"""Redaction in the Kafka worker (issue 16.3) against a real broker (tansu) and PostgreSQL: with
only the repetition detector enabled (no PII detector), the worker's redaction stage still
redacts every turn before it is stored or forwarded to the ``phrases`` topic."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests.kafka.helpers import (
    KafkaNames,
    Worker,
    chatmon,
    chatmon_env,
    wait_until,
    write_jsonl,
)
from tests.test_pii_never_stored import PLANTED, _needles

pytestmark = [pytest.mark.kafka, pytest.mark.postgres]


def _turns() -> list[dict[str, Any]]:
    p = PLANTED
    texts = [
        ("user", f"Hi, I'm {p['name']}, I live at {p['address']}, Springfield."),
        ("assistant", f"Thanks {p['name']}! I'll send the parcel to {p['address']}."),
        ("user", f"My card is {p['card']}, mail {p['email']}."),
        ("assistant", f"Noted, {p['name']}. We'll write to {p['email']}."),
    ]
    return [{"conversation_id": "kafka-pii", "turn": i, "role": r, "text": t,
             "ts": f"2026-11-20T10:00:0{i}Z", "bot_id": "b"} for i, (r, t) in enumerate(texts)]


def _stored(url: str) -> list[tuple[int, str]]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(  # type: ignore[misc]
                "select turn, text_redacted from turns order by turn"))]
    finally:
        engine.dispose()


def _all_rows(url: str) -> str:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return "".join(repr(conn.execute(text(f"select * from {t}")).all())
                           for t in ("turns", "findings", "dead_letters"))
    finally:
        engine.dispose()


def test_worker_without_the_pii_detector_still_redacts(
        kafka_bootstrap: str, names: KafkaNames, postgres_url: str, tmp_path,
        workers: Callable[..., Worker]) -> None:
    from kafka import KafkaConsumer

    env = chatmon_env(kafka_bootstrap, names, postgres_url, detectors=("repetition",))
    assert chatmon(["topics", "create"], env).returncode == 0
    src = write_jsonl(tmp_path / "pii.jsonl", _turns())
    produced = chatmon(["produce", str(src)], env)
    assert produced.returncode == 0, produced.stderr
    worker = workers(env)
    stored = wait_until(lambda: len(rows := _stored(postgres_url)) == 4 and rows, 90,
                        "4 turns stored")
    assert "<PERSON>" in stored[0][1] and "<STREET_ADDRESS>" in stored[0][1]
    blob = _all_rows(postgres_url)
    consumer = KafkaConsumer(names.phrases, bootstrap_servers=kafka_bootstrap,
                             auto_offset_reset="earliest", consumer_timeout_ms=3000, group_id=None)
    try:
        phrases: list[Any] = []
        wait_until(lambda: phrases.extend(consumer) or len(phrases) >= 2, 60, "2 phrases")
    finally:
        consumer.close()
    blob += "".join(json.loads(m.value)["text"] for m in phrases)
    blob += worker.log_path.read_text(errors="replace")
    for needle in _needles():
        assert needle not in blob, needle
