"""The issue's proof, on SQLite and PostgreSQL: after ``chatmon purge --conversation C`` no
table holds anything of C (every table is read, so a table added later is searched too), the
weekly report shows nothing of C, the audit row says what went, the running process's state
forgets C, and a replay of C's old events stores nothing.

C is scored by the real PII and repetition detectors: its reply leaks a phone number (a
flagged finding, so the report lists C among the worst conversations), a later conversation's
reply is a near-copy of it (a finding whose evidence names C), a reviewer judged one of its
findings, and two of its events were dead-lettered (one names C only inside broken JSON)."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, MetaData, insert, select, text

from detectors.repetition.detector import RepetitionDetector
from pipeline.cli import cli
from pipeline.embedded.lifecycle import EmbeddedLifecycle
from pipeline.ingest.events import RawRecord
from pipeline.report.weekly import default_window, render
from pipeline.scoring.suite import DetectorSuite
from pipeline.store.models import FindingRow, ReviewRow
from pipeline.store.sink import stable_id

C = "c-erase-7f3a"
C_REPLY = ("I will call you on 415-555-0132 today about the warped shelf of order "
           "A-77, sorry for the trouble with the oak bookcase.")
NEAR_COPY = ("I will call you on 415-555-0199 today about the warped shelf of order "
             "A-77, sorry for the trouble with the oak bookcase!")


def turn(conv: str, n: int, role: str, body: str, minute: int) -> str:
    return json.dumps({"conversation_id": conv, "turn": n, "role": role, "text": body,
                       "ts": f"2026-11-20T10:{minute:02d}:0{n}Z", "bot_id": "helpdesk-a",
                       "tenant": "acme", "model": "support-llm"})


C_EVENTS = [
    turn(C, 0, "user", "My number is 415-555-0132, the oak bookcase shelf is warped.", 1),
    turn(C, 1, "assistant", C_REPLY, 1),
    turn(C, 2, "system", "Escalate this one to a person please.", 1),  # unknown_role
]
BROKEN = '{"conversation_id": "' + C + '", "turn": 3, "role": "user", "text": "still wai'
OTHERS = [
    turn("d-later", 0, "user", "Is my bookcase coming?", 5),
    turn("d-later", 1, "assistant", NEAR_COPY, 5),
    turn("e-plain", 0, "user", "Can I change my delivery address?", 3),
    turn("e-plain", 1, "assistant", "Yes, you can change it in your account settings.", 3),
]


def records(lines: list[str], tag: str) -> list[RawRecord]:
    return [RawRecord(f"test:{tag}", f"line {i}", line) for i, line in enumerate(lines)]


def every_value(engine: Engine) -> list[tuple[str, str]]:
    """(table, value as text) for every column of every row of every table there is."""
    meta = MetaData()
    meta.reflect(engine)
    out = []
    with engine.connect() as conn:
        for table in meta.sorted_tables:
            for row in conn.execute(select(table)):
                out += [(table.name, v if isinstance(v, str) else json.dumps(v, default=str))
                        for v in row]
    return out


def traces(engine: Engine, needles: list[str]) -> list[tuple[str, str]]:
    return [(t, n) for t, v in every_value(engine) for n in needles if n in v]


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, sqlite_url: str) -> str:
    return sqlite_url if request.param == "sqlite" else request.getfixturevalue("postgres_url")


def test_after_purging_a_conversation_nothing_of_it_remains(
        url: str, make_processor: Callable[..., Any], pii_suite: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    suite = DetectorSuite([*pii_suite.detectors, RepetitionDetector()])
    proc = make_processor(url, suite=suite)
    engine = proc.sink.engine
    lifecycle = EmbeddedLifecycle(proc, "run")
    proc.process(records([*C_EVENTS[:2], *OTHERS[2:], *OTHERS[:2]], "first"))
    proc.process(records([C_EVENTS[2], BROKEN], "bad"))
    with engine.connect() as conn:
        c_texts = [t for (t,) in conn.execute(text(
            "select text_redacted from turns where conversation_id = :c"), {"c": C})]
        near = conn.execute(select(FindingRow.evidence).where(
            FindingRow.conversation_id == "d-later",
            FindingRow.label == "repetition.near_duplicate")).scalar_one()
        finding = conn.execute(select(FindingRow.id).where(
            FindingRow.conversation_id == C, FindingRow.flagged)).scalars().first()
    with engine.begin() as conn:
        conn.execute(insert(ReviewRow), [{
            "id": stable_id("review", finding), "finding_id": finding, "reviewer": "ann",
            "present": True, "rating": None, "note": "right, it read the number back",
            "source": "test", "imported_at": datetime(2026, 11, 21, tzinfo=UTC)}])
    needles = [C, *c_texts]
    assert len(c_texts) == 2 and "0132" not in c_texts[1]  # redacted, still C's words
    assert finding is not None
    assert near["conversation_id"] == C  # the control: D's finding names C
    found = {t for t, _ in traces(engine, needles)}
    assert {"turns", "findings", "dead_letters"} <= found
    report = render(engine, default_window(engine))
    assert C in report

    monkeypatch.setenv("CHATMON_DATABASE_URL", url)
    done = CliRunner().invoke(cli, ["purge", "--conversation", C, "--json"])
    assert done.exit_code == 0, done.output
    result = json.loads(done.output)

    assert traces(engine, needles) == []
    report = render(engine, default_window(engine))
    assert not [n for n in needles if n in report or html.escape(n) in report]
    assert "d-later" in report  # the report itself is still there

    logged = CliRunner().invoke(cli, ["purge", "--log", "--json", "--conversation", C])
    (entry,) = json.loads(logged.output)
    assert entry["id"] == result["purge_id"] and entry["status"] == "done"
    assert entry["command"] == "chatmon purge --conversation"
    assert entry["rows"] == result["rows"]
    assert entry["rows"]["turns"] == 2 and entry["rows"]["reviews"] == 1
    assert entry["rows"]["dead_letters"] == 2 and entry["rows"]["findings.evidence"] == 1
    assert entry["rows"]["findings"] >= 3

    # The running process's state forgets C once it reads the deletion record: a new near-copy
    # of C's reply names nobody (D's reply, the other copy, is phrased apart enough).
    assert lifecycle.poll()["state.repetition"] >= 1
    again = proc.process(records([*C_EVENTS], "replay"))
    assert again.dropped == {"deleted": 3} and not again.turn_rows
    assert not again.dead_letter_rows
    assert traces(engine, needles) == []
    later = proc.process(records([turn("g-new", 1, "assistant", C_REPLY, 9)], "new"))
    named = [f["evidence"].get("conversation_id") for f in later.finding_rows
             if f["label"] == "repetition.near_duplicate"]
    assert C not in named
