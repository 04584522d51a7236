"""Kafka parity: the same file through two workers, one SIGKILLed and restarted mid-way, gives
the findings ``chatmon run`` gives (every detector but repetition, whose window depends on the
order replies arrive in across conversations). Real tansu, real PostgreSQL, real detectors.

The conversations below make the findings depend on the history a worker holds: advice given to
an upset user before any acknowledgement (``empathy.advice_before_ack`` needs the user's turn
before it), and a reply repeating the e-mail address the user gave two turns earlier (a
``pii.leak`` only if that turn is missing from the history). Turns are produced interleaved, as
live traffic arrives (turn 0 of every conversation, then turn 1...), so the killed worker's
conversations are continued by the other worker, and again by the restarted one, from the
recovered context Table.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from detectors.registry import REGISTRY
from pipeline.store import db
from tests.dashboards.rollup_compare import rollups_match_rows
from tests.kafka.helpers import (
    PARTITIONS,
    KafkaNames,
    Worker,
    chatmon,
    chatmon_env,
    wait_until,
    write_jsonl,
)

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.slow]

# Both sides run with their defaults (batch size, int8 encoder): each text is encoded alone, so
# only conversation context could make them differ (tests/test_determinism.py covers batches).

N_CONVERSATIONS, TURNS = 48, 6
OPENINGS = (
    "I've been charged twice for order {c} and nobody answers my emails. This is ridiculous.",
    "My mom passed away last week and I need to close her account {c}. I can't stop crying.",
    "My flight {c} was cancelled and I'm stuck at the airport with two tired kids, I'm so "
    "stressed.",
)
FIRST_REPLIES = (
    "You should contact your bank and dispute the charge on order {c}. Check your statement "
    "first.",
    "I'm so sorry, that sounds exhausting. I've refunded the second payment for order {c}.",
    "Open Settings, choose Billing and click Refund. It takes five days.",
)
FOLLOW_UPS = (
    "Still nothing has changed since yesterday and I'm losing my patience.",
    "Thank you, that really helps. I feel a bit better now.",
)
LAST_REPLIES = (
    "Open Settings, choose Billing and click Refund. You will get an email with a link.",
    "I understand that you're frustrated. Refunds usually take five to seven business days.",
    "I'm glad that helped. Is there anything else I can do for you today?",
)


def conversations() -> list[dict[str, Any]]:
    """48 conversations of 6 turns, interleaved by turn index."""
    rows: list[dict[str, Any]] = []
    for t in range(TURNS):
        for c in range(N_CONVERSATIONS):
            email = f"jane.doe{c}@example.com"
            text_ = [
                OPENINGS[c % 3].format(c=c),
                FIRST_REPLIES[c % 3].format(c=c),
                f"Please change my email to {email}, my phone is 415-555-{c:04d}.",
                f"Thanks, I've updated the email to {email}." if c % 4 else
                f"Sure, the account holder's email is tom.baker{c}@mailbox.org.",
                FOLLOW_UPS[c % 2],
                LAST_REPLIES[c % 3],
            ][t]
            rows.append({"conversation_id": f"p{c:03d}", "turn": t,
                         "role": "user" if t % 2 == 0 else "assistant", "text": text_,
                         "ts": f"2026-03-01T10:{t:02d}:{c % 60:02d}Z", "bot_id": f"bot-{c % 2}"})
    return rows


def findings(url: str) -> dict[tuple[Any, ...], tuple[float, bool]]:
    """Every stored finding but repetition's: (conversation, turn, label, span) -> (score,
    flagged)."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text(
                "select conversation_id, turn, detector, label, span_start, span_end, score, "
                "flagged from findings where detector <> 'repetition'")).all()
    finally:
        engine.dispose()
    return {tuple(r[:6]): (float(r[6]), bool(r[7])) for r in rows}


def stored_turns(url: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text("select count(*) from turns")).scalar_one())
    finally:
        engine.dispose()


def test_two_workers_with_one_sigkilled_find_what_the_embedded_runner_finds(
        kafka_bootstrap: str, names: KafkaNames, postgres_url: str, tmp_path: Path,
        workers: Callable[..., Worker]) -> None:
    rows = conversations()
    path = write_jsonl(tmp_path / "parity.jsonl", rows)
    detectors = tuple(REGISTRY)
    env = chatmon_env(kafka_bootstrap, names, postgres_url, detectors)

    assert chatmon(["topics", "create"], env).returncode == 0
    # the embedded run and the workers' start-up (model loading) overlap
    a, b = workers(env, "a", wait=False), workers(env, "b", wait=False)
    embedded_url = f"sqlite:///{tmp_path / 'embedded.db'}"
    ran = chatmon(["run", str(path)], {**env, "CHATMON_DATABASE_URL": embedded_url},
                  timeout=300)  # it shares the cores with two workers loading their models
    assert ran.returncode == 0, ran.stderr
    expected = findings(embedded_url)
    labels = {k[3] for k in expected}
    # the file exercises context: both context-dependent labels occur, and not on every reply
    assert {"empathy.advice_before_ack", "pii.leak"} <= labels
    leaks = {k[0] for k, (_, flagged) in expected.items() if k[3] == "pii.leak" and flagged}
    assert 0 < len(leaks) < N_CONVERSATIONS

    a.ready(), b.ready()
    wait_until(lambda: _balanced(a, b, names.turns), 60, "both workers to hold partitions")
    produced = chatmon(["produce", str(path), "--no-progress"], env)
    assert produced.returncode == 0, produced.stderr
    # Polled often: two workers store the whole stream in a second or two on a quiet machine.
    wait_until(lambda: a.stats().get("records", {}).get("stage1", 0) >= len(rows) // 10, 60,
               "worker a to be mid-stream", every=0.02)
    a.kill()
    assert stored_turns(postgres_url) < len(rows), "the kill should come mid-way"
    workers(env, "a-restarted")  # at once, while b is still taking over a's partitions
    wait_until(lambda: stored_turns(postgres_url) >= len(rows), 120, "every turn stored")

    got = findings(postgres_url)
    missing = {k: expected[k] for k in sorted(set(expected) - set(got))}
    extra = {k: got[k] for k in sorted(set(got) - set(expected))}
    assert (missing, extra) == ({}, {})  # no finding only embedded, none only in Kafka
    assert [k for k in expected if expected[k][1] != got[k][1]] == []  # no flag different
    worst = max(abs(expected[k][0] - got[k][0]) for k in expected)
    assert worst <= 1e-3
    # The rollups both stages wrote through the sink, across the kill, the redelivery and the
    # second stage's later findings, are what the stored rows add up to (issue 41).
    engine = db.make_engine(postgres_url)
    try:
        assert rollups_match_rows(engine) > 0
    finally:
        engine.dispose()


def _balanced(a: Worker, b: Worker, topic: str) -> bool:
    def parts(w: Worker) -> set[str]:
        lag = w.stats().get("lag", {}).get("partitions", {})
        return {p for p in lag if p.rsplit(":", 1)[0] == topic}

    pa, pb = parts(a), parts(b)
    return bool(pa) and bool(pb) and not pa & pb and len(pa | pb) == PARTITIONS

