"""Issue 41: the panels read the rollups the sink writes with the rows, and give the numbers
the row-based SQL gave (tests/dashboards/row_queries.py), on SQLite and PostgreSQL:

- a generated store (three bots, two tenants, two models, three weeks: seed.py) written the
  ways chatmon writes: turns with their first findings in batches, a replayed batch, findings
  added later to stored turns (the Kafka workers' second stage, the judge), a second finding
  of a label a turn already had, and a conversation deleted on request;
- the example data (``chatmon run`` of examples/transcripts.jsonl, real detectors), and its
  rows written through the sink into PostgreSQL.

A replayed batch changes no rollup; two sinks writing overlapping keys at once on PostgreSQL
leave the same numbers as one.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, select

from pipeline.cli import cli
from pipeline.kafka.tables import FindingsSink
from pipeline.lifecycle.purge import Purger, Request
from pipeline.store import db
from pipeline.store.deletions import CONVERSATION
from pipeline.store.models import (
    ConversationRollupRow,
    FindingRow,
    PhraseRollupRow,
    RollupRow,
    TurnRow,
)
from pipeline.store.sink import Sink, stable_id
from tests.dashboards.rollup_compare import (
    PANELS,
    compare_panels,
    ranges_over,
    rollups_match_rows,
)
from tests.dashboards.seed import END, START, rows

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "transcripts.jsonl"
LATER = ("empathy", "judge")  # detectors whose findings a second stage writes later
DELETED = "conv-0004"


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    url = (request.getfixturevalue("sqlite_url") if request.param == "sqlite"
           else request.getfixturevalue("postgres_url"))
    db.upgrade(url)
    return url


@pytest.fixture
def engine(url: str) -> Iterator[Engine]:
    engine = db.make_engine(url)
    yield engine
    engine.dispose()


def batches() -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """The seed's rows as chatmon would write them, in order: turns with the findings of the
    first stage, 40 turns a batch; the later stage's findings in batches cut elsewhere; a second
    flagged finding on turns that already had one of its label (and a flagged one where the
    first was not)."""
    turns, findings = rows()
    first = [f for f in findings if f["detector"] not in LATER]
    later = [f for f in findings if f["detector"] in LATER]
    out = []
    for i in range(0, len(turns), 40):
        ids = {t["id"] for t in turns[i:i + 40]}
        out.append((turns[i:i + 40], [f for f in first if f["turn_id"] in ids]))
    out.extend(([], later[i:i + 57]) for i in range(0, len(later), 57))
    again = [f for f in first if f["label"] in ("pii.leak", "repetition.stock_phrase",
                                                 "repetition.window")][::2]
    out.append(([], [{**f, "id": stable_id("again", f["id"]), "flagged": True, "score": 0.7}
                     for f in again]))
    return out


def write_all(engine: Engine, replay: bool = True) -> None:
    sink = Sink(engine)
    stage2 = FindingsSink(sink)
    done = batches()
    for i, (turns, findings) in enumerate(done):
        (sink if turns else stage2).write(turns, findings)
        if replay and i == 2:
            sink.write(*done[0])  # a replayed batch (at-least-once redelivery)


def snapshot(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    with engine.connect() as conn:
        for model in (RollupRow, PhraseRollupRow, ConversationRollupRow):
            table = model.__table__
            out[table.name] = [tuple(r) for r in conn.execute(
                select(table).order_by(*table.primary_key.columns))]
    return out


def test_generated_store_gives_the_same_numbers_as_the_rows(engine: Engine) -> None:
    write_all(engine)
    Purger(engine, "test").run(Request(CONVERSATION, (DELETED,)))
    with engine.connect() as conn:
        assert not conn.execute(select(TurnRow.id).where(
            TurnRow.conversation_id == DELETED)).all()
        assert not conn.execute(select(ConversationRollupRow.conversation_id).where(
            ConversationRollupRow.conversation_id == DELETED)).all()
    compared = compare_panels(engine, ranges_over(START, END))
    assert set(compared) == set(PANELS) and all(compared.values()), compared


def test_rollups_written_in_stages_equal_the_rows_aggregated_at_once(engine: Engine) -> None:
    write_all(engine)  # first stage, a replay, later findings, second findings of a label
    assert rollups_match_rows(engine) > 500


def test_a_replay_changes_no_rollup(engine: Engine) -> None:
    write_all(engine, replay=False)
    before = snapshot(engine)
    assert all(before.values())
    write_all(engine, replay=True)  # every batch again, and the first one twice
    assert snapshot(engine) == before


def test_the_turn_counts_stay_distinct_across_batches(engine: Engine) -> None:
    """A turn whose findings of a label arrive in two later batches counts once in the label's
    and the detector's 'turns' rows: as a turn with a finding after the first, as a flagged one
    after the second; the overall row counts it as flagged once."""
    turns, findings = rows(3)
    reply = next(t for t in turns if t["role"] == "assistant")
    mine = [{**f, "flagged": False} for f in findings if f["turn_id"] == reply["id"]]
    extra = [{**mine[0], "id": stable_id("x", k), "detector": "later", "label": "later.signal",
              "flagged": k > 0, "score": 0.5, "evidence": {}} for k in range(3)]
    sink = Sink(engine)
    sink.write([reply], mine)
    sink.write((), extra[:1])  # unflagged: the turn now has a finding of the label
    sink.write((), extra[1:2])  # flagged: the same turn, now flagged
    sink.write((), extra[2:])  # flagged again: nothing new about the turn

    def counts() -> dict[tuple[str, str, str], tuple[int, int]]:
        with engine.connect() as conn:
            return {(r.detector, r.label, r.measure): (r.n, r.flagged) for r in conn.execute(
                select(RollupRow).where(RollupRow.detector.in_(("later", ""))))}

    assert counts() == {("", "", ""): (1, 1), ("later", "later.signal", ""): (3, 2),
                        ("later", "later.signal", "turns"): (1, 1),
                        ("later", "", "turns"): (1, 1)}


@pytest.mark.postgres
def test_two_sinks_writing_overlapping_keys_at_once(postgres_url: str) -> None:
    """Two workers write the same hours, bots and labels at the same moment (one the even
    conversations of each batch, the other the odd ones, then each replays the other's first
    batch), then both write the same later findings (a redelivery racing its first delivery):
    no deadlock, no lost update, no turn counted twice."""
    engines = [db.make_engine(postgres_url) for _ in range(2)]
    first = [b for b in batches() if b[0]]
    later = [b for b in batches() if not b[0]]

    def part(batch: Any, parity: int) -> tuple[list[Any], list[Any]]:
        turns = [t for t in batch[0] if int(t["conversation_id"][-1]) % 2 == parity]
        ids = {t["id"] for t in turns}
        return turns, [f for f in batch[1] if f["turn_id"] in ids]

    plans = [([part(b, p) for b in first] + [part(first[0], 1 - p)], later) for p in (0, 1)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(2, timeout=120)

    def work(engine: Engine, plan: tuple[list[Any], list[Any]]) -> None:
        try:
            sink = Sink(engine)
            for phase in plan:
                barrier.wait()
                for turns, findings in phase:
                    sink.write(turns, findings)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(e, p))
               for e, p in zip(engines, plans, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    compared = compare_panels(engines[0], ranges_over(START, END)[:2])
    assert all(compared.values())
    assert rollups_match_rows(engines[0]) > 500
    for e in engines:
        e.dispose()


@pytest.mark.slow
def test_example_data_gives_the_same_numbers(tmp_path: Path, request: pytest.FixtureRequest
                                             ) -> None:
    url = f"sqlite:///{tmp_path / 'chatmon.db'}"
    res = CliRunner().invoke(cli, ["run", str(EXAMPLES), "--json", "--no-progress"],
                             env={"CHATMON_DATABASE_URL": url})
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["turns_stored"] == 460
    engine = db.make_engine(url)
    with engine.connect() as conn:
        turns = [dict(r._mapping) for r in conn.execute(
            select(TurnRow.__table__).order_by(TurnRow.ts, TurnRow.id))]
        findings = [dict(r._mapping) for r in conn.execute(select(FindingRow.__table__))]
    start = min(t["ts"] for t in turns)
    end = max(t["ts"] for t in turns)
    spans = ranges_over(start, end)
    compared = compare_panels(engine, spans)
    assert all(compared[p] for p in ("EMPATHY_WEEKLY", "HARMS_WEEKLY", "MECHANISMS",
                                     "STOCK_EMPATHY", "WORST_CONVERSATIONS", "BOT_SUMMARY"))
    engine.dispose()
    # The same rows written through the sink into PostgreSQL, in batches of 50 turns.
    pg = request.getfixturevalue("postgres_url")
    engine = db.make_engine(pg)
    sink = Sink(engine)
    for i in range(0, len(turns), 50):
        ids = {t["id"] for t in turns[i:i + 50]}
        sink.write([_row(t) for t in turns[i:i + 50]],
                   [_row(f) for f in findings if f["turn_id"] in ids])
    assert compare_panels(engine, spans) == compared
    engine.dispose()


def _row(r: dict[str, Any]) -> dict[str, Any]:
    out = dict(r)
    for k in ("ts", "stored_at", "created_at", "raw_expires_at"):
        if isinstance(out.get(k), datetime) and out[k].tzinfo is None:
            out[k] = out[k].replace(tzinfo=UTC)
    return out


def test_ranges_are_hour_aligned() -> None:
    for t_from, t_to in ranges_over(START, END):
        assert t_from < t_to and t_from.minute == 0 and t_to - t_from >= timedelta(hours=1)
