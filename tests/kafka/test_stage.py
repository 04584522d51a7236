"""Unit tests of one worker stage without a broker: what goes to the dead-letter topic (with
which headers), retries while the sink is down without doubling context, isolation of a record
that makes processing fail, the Table adapters, lag from the fetch highwater, the hand-over to
stage 2."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from detectors.base import Finding, ScoringInput, Turn
from pipeline.errors import StoreUnavailable
from pipeline.ingest.events import RawRecord
from pipeline.kafka.agents import PROCESSING_ERROR, Stage
from pipeline.kafka.lag import WorkerStats
from pipeline.kafka.offsets import OrderGate
from pipeline.kafka.phrases import assistant_turn_ids, stored_phrases
from pipeline.kafka.tables import TableContextStore, TableStateStore
from pipeline.scoring.context import MemoryContextStore
from pipeline.scoring.process import BatchReport, Processor
from pipeline.scoring.suite import DetectorSuite
from pipeline.settings import Settings
from pipeline.store import db
from pipeline.store.sink import Sink


class Exploding:
    """Scores "sorry" and raises on a batch holding "BOOM" (a poison event for a detector)."""

    name, version, roles = "exploding", "1", frozenset({"assistant"})

    def load(self) -> None:
        pass

    def score(self, batch: Sequence[ScoringInput]) -> list[list[Finding]]:
        if any("BOOM" in item.turn.text for item in batch):
            raise ValueError("cannot score this")
        return [[Finding(self.name, self.version, "exploding.sorry", 0.9)]
                if "sorry" in item.turn.text else [] for item in batch]


@dataclass
class Msg:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes


@dataclass
class Event:
    message: Msg


def events(values: Sequence[bytes], partition: int = 0) -> list[Event]:
    return [Event(Msg("turns", partition, i, b"c1", v)) for i, v in enumerate(values)]


def turn(t: int, role: str, text: str, conv: str = "c1") -> bytes:
    return json.dumps({"conversation_id": conv, "turn": t, "role": role, "text": text,
                       "ts": "2026-03-01T10:00:00Z", "bot_id": "b"}).encode()


class FlakySink(Sink):
    """A real SQLite sink whose first ``fail`` writes raise as if the database were down."""

    def __init__(self, url: str, fail: int) -> None:
        super().__init__(db.make_engine(url))
        self.fail = fail

    def write(self, *args: Any, **kwargs: Any) -> None:
        if self.fail > 0:
            self.fail -= 1
            raise StoreUnavailable("cannot write batch: OperationalError")
        super().write(*args, **kwargs)


def make_stage(url: str, fail: int = 0) -> tuple[Stage, dict[bytes, Any], list[dict[str, Any]]]:
    db.upgrade(url)
    settings = Settings(database_url=url)
    table: dict[bytes, Any] = {}
    contexts = TableContextStore(table, max_turns=3)
    proc = Processor(settings, DetectorSuite([Exploding()]), FlakySink(url, fail),
                     contexts=contexts)
    sent: list[dict[str, Any]] = []

    async def send_dlq(**kwargs: Any) -> None:
        sent.append(kwargs)

    stage = Stage("stage1", proc, [contexts], WorkerStats(), send_dlq)
    stage.first_backoff_s = 0.01
    return stage, table, sent


def test_invalid_and_detector_poison_events_go_to_the_dlq_with_reasons(sqlite_url: str) -> None:
    stage, table, sent = make_stage(sqlite_url)
    batch = events([turn(0, "user", "hi"), b"{oops", turn(1, "assistant", "BOOM sorry"),
                    json.dumps({"turn": 2}).encode()])
    asyncio.run(stage.handle(batch))
    reasons = sorted(dict(s["headers"])["reason"] for s in sent)
    assert reasons == [b"detector_error", b"invalid_json", b"missing_field"]
    boom = next(s for s in sent if dict(s["headers"])["reason"] == b"detector_error")
    assert dict(boom["headers"])["detector"] == b"exploding"
    assert dict(boom["headers"])["position"] == b"0:2"
    assert boom["value"] == batch[2].message.value and boom["key"] == b"c1"
    assert [t["turn"] for t in table[b"c1"]] == [0, 1]  # both valid turns are in the context
    assert stage.stats.records["stage1"] == 4


def test_sink_outage_is_retried_and_context_is_not_doubled(sqlite_url: str) -> None:
    stage, table, sent = make_stage(sqlite_url, fail=2)
    asyncio.run(stage.handle(events([turn(0, "user", "hi"), turn(1, "assistant", "sorry")])))
    assert stage.stats.sink_retries == 2 and stage.stats.sink_down_since is None
    assert [t["turn"] for t in table[b"c1"]] == [0, 1]  # not [0, 1, 0, 1, 0, 1]
    assert sent == []
    from sqlalchemy import text

    with db.make_engine(sqlite_url).connect() as conn:
        assert conn.execute(text("select count(*) from turns")).scalar_one() == 2
        assert conn.execute(text("select label from findings")).scalars().all() == [
            "exploding.sorry"]


def test_hostile_events_get_their_reasons_and_headers_without_their_values(
        sqlite_url: str) -> None:
    stage, _, sent = make_stage(sqlite_url)
    name = "Jonathan Whitfield"
    hostile = [
        json.dumps({"conversation_id": "c1", "turn": 1, "role": "user", "text": "bad \ud800",
                    "ts": "2026-03-01T10:00:00Z"}).encode(),
        json.dumps({"conversation_id": "c\udc00" * 201, "turn": 2**63, "role": name,
                    "text": "x", "ts": "2026-03-01T10:00:00Z"}).encode(),
        json.dumps({"conversation_id": "c1", "turn": 2, "role": "user", "text": "x",
                    "ts": "2026-03-01T10:00:00Z", "bot_id": name}).encode(),
        b"[" * 10_000 + b"]" * 10_000,
    ]
    asyncio.run(stage.handle(events([turn(0, "user", "hi"), *hostile])))
    headers = [dict(s["headers"]) for s in sent]
    assert [h["reason"] for h in headers] == [b"lone_surrogate", b"lone_surrogate",
                                              b"invalid_label", b"nesting_too_deep"]
    assert all(b"Whitfield" not in b"".join(h.values()) for h in headers)
    assert b"conversation_id" not in headers[1]  # not storable, so not kept
    from sqlalchemy import text

    with db.make_engine(sqlite_url).connect() as conn:
        assert conn.execute(text("select count(*) from turns")).scalar_one() == 1


def test_a_write_the_store_refuses_is_not_retried_forever(sqlite_url: str) -> None:
    from sqlalchemy import text

    stage, _, sent = make_stage(sqlite_url)
    engine = db.make_engine(sqlite_url)
    with engine.begin() as conn:  # the real store refuses one conversation's turns
        conn.execute(text("CREATE TRIGGER refuse BEFORE INSERT ON turns WHEN "
                          "NEW.conversation_id = 'refused' BEGIN SELECT RAISE(ABORT, 'no'); END"))
    batch = events([turn(0, "user", "hi"), turn(0, "user", "hi", conv="refused"),
                    turn(1, "assistant", "sorry")])
    asyncio.run(asyncio.wait_for(stage.handle(batch), 60))
    assert [dict(s["headers"])["reason"] for s in sent] == [PROCESSING_ERROR.encode()]
    assert stage.stats.sink_retries == 0
    with engine.connect() as conn:
        assert conn.execute(text("select count(*) from turns")).scalar_one() == 2


class CrashingProcessor:
    """Fails a whole batch when it holds the record b"crash" (a bug, not a bad event)."""

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def process(self, records: Sequence[RawRecord]) -> BatchReport:
        self.seen.append([r.position for r in records])
        if any(r.data == b"crash" for r in records):
            raise RuntimeError("bug")
        return BatchReport(records=len(records), turns_stored=len(records))


def test_a_record_that_breaks_processing_is_isolated_and_dead_lettered() -> None:
    proc = CrashingProcessor()
    sent: list[dict[str, Any]] = []

    async def send_dlq(**kwargs: Any) -> None:
        sent.append(kwargs)

    stage = Stage("stage1", proc, [], WorkerStats(), send_dlq)  # type: ignore[arg-type]
    asyncio.run(stage.handle(events([b"a", b"crash", b"b"])))
    assert proc.seen == [["0:0", "0:1", "0:2"], ["0:0"], ["0:1"], ["0:2"]]
    assert len(sent) == 1 and sent[0]["value"] == b"crash"
    headers = dict(sent[0]["headers"])
    assert headers["reason"] == PROCESSING_ERROR.encode() and b"RuntimeError" in headers["detail"]


class SlowProcessor(CrashingProcessor):
    def process(self, records: Sequence[RawRecord]) -> BatchReport:
        import time

        time.sleep(0.3)
        return super().process(records)


def test_a_stopping_worker_finishes_its_batch_before_faust_acks_it() -> None:
    proc = SlowProcessor()
    forwarded: list[int] = []

    async def forward(records: Sequence[RawRecord], _report: BatchReport) -> None:
        forwarded.append(len(records))

    async def send_dlq(**kwargs: Any) -> None:
        raise AssertionError("nothing to dead-letter")

    stage = Stage("stage1", proc, [], WorkerStats(), send_dlq, forward)  # type: ignore[arg-type]

    async def stop_mid_batch() -> None:
        task = asyncio.ensure_future(stage.handle(events([b"a", b"b"])))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(stop_mid_batch())
    assert forwarded == [2] and stage.stats.records["stage1"] == 2


def _turn(t: int) -> Turn:
    return Turn("c", t, "user", f"text {t}", datetime(2026, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize("appended, expected", [(2, [0, 1]), (5, [2, 3, 4])])
def test_context_adapter_buffers_and_bounds_history(appended: int, expected: list[int]) -> None:
    table: dict[bytes, Any] = {}
    store = TableContextStore(table, max_turns=3)
    for t in range(appended):
        store.append(_turn(t))
    assert [x.turn for x in store.history("c")] == expected  # reads see buffered writes
    assert table == {}  # nothing written before flush
    assert store.flush() == 1
    assert [x["turn"] for x in table[b"c"]] == expected
    store.append(_turn(9))
    store.discard()
    assert [x.turn for x in store.history("c")] == expected


# Arrival orders a worker can see for turns 0-4 of one conversation: in order; a batch
# redelivered after a SIGKILL (3-4 again); a turn replayed after later ones; out of order.
# The history is the same function of turn index in every case, in both stores.
@pytest.mark.parametrize("arrivals", [
    [0, 1, 2, 3, 4],
    [0, 1, 2, 3, 4, 3, 4],
    [0, 1, 2, 3, 4, 2],
    [3, 0, 4, 1, 2],
])
def test_context_history_does_not_depend_on_arrival_order_or_redelivery(
        arrivals: list[int]) -> None:
    table: dict[bytes, Any] = {}
    worker = TableContextStore(table, max_turns=3)
    embedded = MemoryContextStore(max_turns=3)
    for i, t in enumerate(arrivals):
        worker.append(_turn(t))
        embedded.append(_turn(t))
        if i % 2:
            worker.flush()  # batches end anywhere; a new worker reads what was flushed
            worker = TableContextStore(table, max_turns=3)
    worker.flush()
    assert [x.turn for x in worker.history("c")] == [2, 3, 4]
    assert worker.history("c") == embedded.history("c")


P0, P1 = ("turns", 0), ("turns", 1)


# (processed run starts, batch of (partition, offset), which may be processed, first missing)
@pytest.mark.parametrize("starts, batch, keep, gaps", [
    ({P0: 10}, [(P0, 10), (P0, 11), (P0, 12)], [True, True, True], {}),
    ({P0: 10}, [(P0, 11), (P0, 12)], [False, False], {P0: 10}),  # 10 was dropped on the way
    ({P0: 10}, [(P0, 10), (P0, 12), (P0, 13)], [True, False, False], {P0: 11}),
    ({P0: 10}, [(P0, 8), (P0, 9), (P0, 10)], [True, True, True], {}),  # repeats are harmless
    ({P0: 10, P1: 3}, [(P0, 10), (P1, 5), (P0, 11), (P1, 3)], [True, False, True, False],
     {P1: 3}),  # partitions are independent; nothing passes a gap within the batch
    ({}, [(P0, 7), (P0, 9)], [True, True], {}),  # not started (no assignment seen): passes
])
def test_order_gate_lets_a_partition_through_only_in_offset_order(
        starts: dict[Any, int], batch: list[Any], keep: list[bool], gaps: dict[Any, int]) -> None:
    gate = OrderGate()
    for tp, offset in starts.items():
        gate.start(tp, offset)
    assert gate.split(batch) == (keep, gaps)


def test_order_gate_advances_over_the_processed_run_only() -> None:
    gate = OrderGate()
    gate.start(P0, 10)
    for offset in (10, 11, 13):
        gate.processed(P0, offset)
    assert gate.done[P0] == 12  # 13 is processed, 12 is not: the run stops at 12
    gate.processed(P0, 12)
    assert gate.done[P0] == 14
    gate.start(P0, 5)  # a rebalance: read again from the committed offset
    assert gate.split([(P0, 5), (P0, 7)]) == ([True, False], {P0: 6})


def test_stage_processes_only_what_the_order_gate_admits(sqlite_url: str) -> None:
    stage, table, _ = make_stage(sqlite_url)
    gate = OrderGate()
    gate.start(P0, 0)

    async def admit(messages: Sequence[Msg]) -> list[bool]:
        return gate.split([((m.topic, m.partition), m.offset) for m in messages])[0]

    stage.admit = admit
    # turn 1 (offset 1) never reached the stage: turn 2 must wait for it
    batch = [Event(Msg("turns", 0, 0, b"c1", turn(0, "user", "hi"))),
             Event(Msg("turns", 0, 2, b"c1", turn(2, "user", "still there?")))]
    asyncio.run(stage.handle(batch))
    assert [t["turn"] for t in table[b"c1"]] == [0]
    assert stage.stats.records["stage1"] == 1


def test_state_adapter_reads_through_and_discards() -> None:
    table: dict[bytes, Any] = {b"repetition//b": {"v": 1}}
    store = TableStateStore(table)
    assert store.get("repetition//b") == {"v": 1} and store.get("other") is None
    store.set("repetition//b", {"v": 2})
    assert store.get("repetition//b") == {"v": 2} and table[b"repetition//b"] == {"v": 1}
    store.discard()
    assert store.get("repetition//b") == {"v": 1}
    store.set("x", [1])
    store.flush()
    assert table[b"x"] == [1]


def test_lag_is_measured_from_the_fetch_highwater() -> None:
    from pipeline.kafka.lag import BatchSample

    stats = WorkerStats()
    seen: list[tuple[str, Any]] = []
    stats.subscribe(lambda kind, sample: seen.append((kind, sample)))
    stats.subscribe(lambda kind, sample: 1 / 0)  # a broken listener must not break stats
    stats.batch_done(BatchSample("stage1", 3, 0.2, 3, 0), [("t", 0, 7), ("t", 0, 9)])
    lag = stats.update_lag({("t", 0): 15, ("t", 1): 10, ("t", 2): 4}, {("t", 1): 6})
    assert lag.by_partition == {"t:0": 5, "t:1": 4, "t:2": 4}
    assert lag.total == 13
    assert [k for k, _ in seen] == ["stage1", "lag"]
    snap = stats.snapshot()
    assert snap["lag"]["total"] == 13 and snap["batch_latency_s"]["p50"] == 0.2


def test_stage1_hands_stored_redacted_assistant_turns_to_stage2(sqlite_url: str) -> None:
    stage, _, _ = make_stage(sqlite_url)
    values = [turn(0, "user", "hi"), turn(1, "assistant", "mail me at ann@example.com"),
              turn(3, "assistant", "never stored")]
    asyncio.run(stage.handle(events(values[:2])))
    records = [RawRecord("kafka:turns", f"0:{i}", v) for i, v in enumerate(values)]
    ids = assistant_turn_ids(records, 20_000)
    assert len(ids) == 2
    messages = stored_phrases(stage.processor.sink.engine, ids)
    assert len(messages) == 1  # only the stored assistant turn
    key, value = messages[0]
    assert key == b"repetition//b"
    event = json.loads(value)
    assert event["turn"] == 1 and "ann@example.com" not in event["text"]
    assert "<EMAIL_ADDRESS>" in event["text"] and event["ts"].endswith("+00:00")

