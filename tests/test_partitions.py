"""Day partitions of turns and findings on PostgreSQL (issue 41, migration 0009,
pipeline/store/partitions.py), on a real server: partitions are made ahead and on demand (a
batch two years old lands), a replayed batch adds nothing, expiry drops whole partitions and
row-deletes the rest of a shorter-lived tenant, leaving nothing past any cut, deletion on
request reaches every partition, and the migration moves a filled store keeping every row."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, func, insert, select, text

from pipeline.lifecycle.audit import purge_log
from pipeline.lifecycle.purge import EXPIRED, Purger, Request
from pipeline.lifecycle.retention import Retention
from pipeline.store import db, partitions
from pipeline.store.deletions import CONVERSATION, TENANT
from pipeline.store.models import FindingRow, ReviewRow, TurnRow
from pipeline.store.sink import Sink, stable_id, turn_id

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)


@pytest.fixture
def engine(postgres_url: str) -> Iterator[Engine]:
    engine = db.make_engine(postgres_url)
    yield engine
    engine.dispose()


def turn_row(conv: str, n: int, ts: datetime, tenant: str = "acme") -> dict[str, Any]:
    body = f"[turn {n} of {conv}]"
    return {"id": turn_id(conv, n), "conversation_id": conv, "turn": n,
            "role": "user" if n % 2 == 0 else "assistant", "ts": ts, "bot_id": "bot-a",
            "model": "m1", "tenant": tenant, "lang": "en", "text_redacted": body,
            "content_hash": stable_id(body), "n_chars": len(body), "metadata": {},
            "text_raw": None, "raw_expires_at": None, "run_id": None, "stored_at": ts}


def finding_row(turn: dict[str, Any], label: str = "toxicity.insult") -> dict[str, Any]:
    keys = ("conversation_id", "turn", "role", "ts", "bot_id", "model", "tenant")
    return {"id": stable_id("f", turn["id"], label), "turn_id": turn["id"],
            **{k: turn[k] for k in keys}, "detector": label.split(".")[0],
            "detector_version": "1", "label": label, "score": 0.7, "flagged": True,
            "span_start": None, "span_end": None, "evidence": {}, "excerpt": "",
            "run_id": None, "created_at": turn["ts"], "suppressed": False,
            "suppressed_by": None, "policy_version": None}


def review_row(finding: dict[str, Any]) -> dict[str, Any]:
    return {"id": stable_id("r", finding["id"]), "finding_id": finding["id"], "reviewer": "ann",
            "present": True, "rating": None, "note": "", "source": "test",
            "imported_at": finding["ts"]}


def conversation(conv: str, start: datetime, tenant: str, turns: int = 2
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    t = [turn_row(conv, n, start + timedelta(minutes=n), tenant) for n in range(turns)]
    return t, [finding_row(x) for x in t]


def named(engine: Engine, table: str) -> set[str]:
    with engine.connect() as conn:
        return {p.name for p in partitions.partitions(conn, table)}


def ids(engine: Engine, column: Any) -> set[Any]:
    with engine.connect() as conn:
        return set(conn.execute(select(column)).scalars())


def test_partitions_are_made_ahead_and_on_demand_and_a_replay_adds_nothing(
        engine: Engine) -> None:
    today = datetime.now(UTC).date()
    ahead = {partitions.partition_name("turns", today + timedelta(days=i))
             for i in range(partitions.AHEAD_DAYS + 1)}
    assert ahead <= named(engine, "turns")  # made by `chatmon db upgrade`
    old = datetime(2024, 11, 29, 23, 59, 30, tzinfo=UTC)  # two years back, across midnight
    turns, findings = conversation("c-old", old, "acme", turns=3)
    assert "turns_p20241129" not in named(engine, "turns")
    sink = Sink(engine)
    sink.write(turns, findings)
    assert {"turns_p20241129", "turns_p20241130"} <= named(engine, "turns")
    assert {"findings_p20241129", "findings_p20241130"} <= named(engine, "findings")
    with engine.connect() as conn:
        where = conn.execute(text("SELECT tableoid::regclass::text, count(*) FROM turns "
                                  "GROUP BY 1 ORDER BY 1")).all()
    assert where == [("turns_p20241129", 1), ("turns_p20241130", 2)]
    assert ids(engine, TurnRow.id) == {t["id"] for t in turns}
    # A replay conflicts on (id, ts): nothing is added, in a fresh sink as in the same one.
    Sink(engine).write(turns, findings)
    sink.write(turns[:1], findings)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(TurnRow)).scalar_one() == 3
        assert conn.execute(select(func.count()).select_from(FindingRow)).scalar_one() == 3
    # The conflicting-duplicate check reads a turn by id alone, in whatever partition.
    assert sink.existing_hashes([turns[0]["id"], "nope"]) == {
        turns[0]["id"]: turns[0]["content_hash"]}


def test_the_last_day_a_timestamp_holds_gets_its_partition_and_finds_it_again(
        engine: Engine) -> None:
    """9999-12-31 is a valid ts (the store accepts it); its partition's upper bound is past what
    Python's datetime holds (a fuzzed event found the OverflowError that dead-lettered it)."""
    last = datetime(9999, 12, 31, 22, 0, tzinfo=UTC)
    turns, findings = conversation("c-last", last, "acme", turns=2)
    Sink(engine).write(turns, findings)
    assert "turns_p99991231" in named(engine, "turns")
    with engine.connect() as conn:
        parts = partitions.partitions(conn, "turns")
    assert parts[-1].name == "turns_p99991231" and parts[-1].hi.year == 9999
    Sink(engine).write(turns, findings)  # a fresh sink finds the partition: no second CREATE
    assert ids(engine, TurnRow.id) >= {t["id"] for t in turns}


def test_expiry_drops_whole_partitions_and_row_deletes_the_rest(engine: Engine) -> None:
    """Days 1-20 of November: acme keeps 20 days (cut 5 Nov 12:00), globex 5 (cut 20 Nov
    12:00), 'hold' has no retention and one conversation on 3 Nov, which keeps that day."""
    retention = Retention(None, {"acme": 20, "globex": 5})
    cuts = {t: NOW - timedelta(days=d) for t, d in retention.tenants.items()}
    turns: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    for day in range(1, 21):
        for tenant in ("acme", "globex"):
            for hour in (6, 18):
                t, f = conversation(f"{tenant}-{day}-{hour}",
                                    datetime(2026, 11, day, hour, tzinfo=UTC), tenant)
                turns += t
                findings += f
    held, held_f = conversation("hold-3", datetime(2026, 11, 3, 9, tzinfo=UTC), "hold")
    sink = Sink(engine)
    sink.write(turns + held, findings + held_f)
    with engine.begin() as conn:
        conn.execute(insert(ReviewRow), [review_row(f) for f in findings + held_f])
    kept = {t["id"] for t in turns if t["ts"] >= cuts[t["tenant"]]} | {t["id"] for t in held}
    before = named(engine, "turns")

    purger = Purger(engine, "test", batch_size=7)
    dry = purger.run(Request(EXPIRED, retention=retention), dry_run=True, now=NOW)
    result = purger.run(Request(EXPIRED, retention=retention), now=NOW)

    gone = {f"turns_p202611{d:02d}" for d in (1, 2, 4)}  # wholly before both cuts; not 3rd
    # (an earlier test's empty partitions of other months go too: nothing holds them)
    assert {n for n in before - named(engine, "turns") if "_p202611" in n} == gone
    assert {n.replace("turns", "findings") for n in gone}.isdisjoint(named(engine, "findings"))
    with engine.connect() as conn:
        inherits = {r for (r,) in conn.execute(text(
            "SELECT inhrelid::regclass::text FROM pg_inherits "
            "WHERE inhparent IN ('turns'::regclass, 'findings'::regclass)"))}
    assert not inherits & (gone | {n.replace("turns", "findings") for n in gone})
    assert {n for n in result.partitions if "_p2026" in n} == gone | {
        n.replace("turns", "findings") for n in gone}
    assert ids(engine, TurnRow.id) == kept  # nothing past a cut is left, by drop or by row
    assert ids(engine, FindingRow.turn_id) == kept
    assert ids(engine, ReviewRow.finding_id) == ids(engine, FindingRow.id)
    assert result.rows["turns"] == len(turns) + len(held) - len(kept)
    assert result.rows == dry.rows  # the dropped partitions were counted exactly
    assert result.rows["reviews"] == result.rows["findings"] == result.rows["turns"]
    (log,) = purge_log(engine)
    assert log["rows"] == dict(result.rows) and log["status"] == "done"
    again = purger.run(Request(EXPIRED, retention=retention), now=NOW)
    assert not again.rows and not again.partitions


def test_deletion_on_request_reaches_every_partition(engine: Engine) -> None:
    day = datetime(2026, 11, 10, 23, 59, tzinfo=UTC)
    c_turns, c_findings = conversation("c-two-days", day, "acme", turns=3)  # 10 and 11 Nov
    t_turns, t_findings = conversation("t-other", day - timedelta(days=5), "globex")
    u_turns, u_findings = conversation("t-more", day + timedelta(days=6), "globex")
    keep_turns, keep_findings = conversation("k-keep", day, "acme")
    sink = Sink(engine)
    sink.write(c_turns + t_turns + u_turns + keep_turns,
               c_findings + t_findings + u_findings + keep_findings)
    with engine.begin() as conn:
        conn.execute(insert(ReviewRow), [review_row(f) for f in c_findings + t_findings])
    assert len({partitions.day_of(t["ts"]) for t in c_turns}) == 2

    Purger(engine, "test").run(Request(CONVERSATION, ("c-two-days",)))
    left = ids(engine, TurnRow.conversation_id)
    assert "c-two-days" not in left and "c-two-days" not in ids(engine,
                                                                FindingRow.conversation_id)
    Purger(engine, "test").run(Request(TENANT, tenant="globex"))
    assert ids(engine, TurnRow.conversation_id) == ids(engine, FindingRow.conversation_id) \
        == {"k-keep"}
    assert ids(engine, ReviewRow.id) == set()


def test_migration_moves_a_filled_store_and_back(postgres_server_url: str) -> None:
    url = postgres_server_url
    db.upgrade(url)
    db.downgrade(url, "0008_i41_rollups")
    engine = db.make_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("TRUNCATE turns, findings, reviews CASCADE"))
        turns: list[dict[str, Any]] = []
        findings: list[dict[str, Any]] = []
        for i in range(40):
            t, f = conversation(f"m-{i}", datetime(2026, 10, 1, tzinfo=UTC)
                                + timedelta(hours=13 * i), "acme")
            turns += t
            findings += f
        with engine.begin() as conn:  # plain tables at 0008: written as the old sink did
            conn.execute(insert(TurnRow), turns)
            conn.execute(insert(FindingRow), findings)
            conn.execute(insert(ReviewRow), [review_row(f) for f in findings[::3]])

        def snapshot() -> tuple[set[Any], ...]:
            with engine.connect() as conn:
                return tuple(set(conn.execute(select(*cols)).all()) for cols in (
                    (TurnRow.id, TurnRow.ts, TurnRow.content_hash, TurnRow.tenant),
                    (FindingRow.id, FindingRow.turn_id, FindingRow.ts, FindingRow.score),
                    (ReviewRow.id, ReviewRow.finding_id)))

        stored = snapshot()
        days = {partitions.day_of(t["ts"]) for t in turns}
        db.upgrade(url)
        engine.dispose()
        assert snapshot() == stored
        assert {partitions.partition_name("turns", d) for d in days} <= named(engine, "turns")
        with engine.connect() as conn:
            assert partitions.is_partitioned(conn)
            keys = dict(conn.execute(text(
                "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE conrelid IN ('turns'::regclass, 'findings'::regclass, "
                "'reviews'::regclass) AND contype IN ('p', 'f')")).all())
        assert keys == {"pk_turns": "PRIMARY KEY (id, ts)", "pk_findings": "PRIMARY KEY (id, ts)",
                        "pk_reviews": "PRIMARY KEY (id)"}
        Sink(engine).write(turns, findings)  # the sink's replay of the moved rows adds nothing
        assert snapshot() == stored

        db.downgrade(url, "0008_i41_rollups")
        engine.dispose()
        assert snapshot() == stored
        with engine.connect() as conn:
            assert not partitions.is_partitioned(conn)
            fks = set(conn.execute(text(
                "SELECT conname FROM pg_constraint WHERE contype = 'f' AND conrelid IN "
                "('findings'::regclass, 'reviews'::regclass)")).scalars())
        assert fks == {"fk_findings_turn_id_turns", "fk_reviews_finding_id_findings"}
    finally:
        engine.dispose()
        db.upgrade(url)


def test_a_busy_table_leaves_the_day_to_the_row_deletes(engine: Engine,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A long reader holds the turns table: the drop gives up after the lock timeout and the
    expired rows still go, by rows; nothing past the cut is left."""
    monkeypatch.setattr(partitions, "LOCK_TIMEOUT", "300ms")
    turns, findings = conversation("busy", datetime(2026, 11, 2, 6, tzinfo=UTC), "acme")
    Sink(engine).write(turns, findings)
    reader = engine.connect()
    try:
        reader.execute(text("SELECT count(*) FROM turns"))  # ACCESS SHARE until it ends
        result = Purger(engine, "test").run(Request(EXPIRED, retention=Retention(10)), now=NOW)
    finally:
        reader.rollback()
        reader.close()
    assert not result.partitions and "turns_p20261102" in named(engine, "turns")
    assert result.rows["turns"] == 2 and result.rows["findings"] == 2
    assert ids(engine, TurnRow.id) == set() and ids(engine, FindingRow.id) == set()
