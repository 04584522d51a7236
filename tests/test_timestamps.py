"""Every stored time comes back with its zone (RFC 3339), on SQLite and PostgreSQL alike: turns
sent with +05:00 and -08:00 offsets are stored as the same instants in UTC, and ``chatmon
findings --json``, ``chatmon review sample``, ``--since`` filters and the report's window see
those instants (SQLite used to keep the wall-clock time of the offset and drop the offset)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from click.testing import CliRunner
from sqlalchemy import select
from sqlalchemy.orm import Session

from pipeline.cli import cli
from pipeline.embedded import runner
from pipeline.report.weekly import default_window
from pipeline.store import db
from pipeline.store.models import DeadLetterRow, FindingRow, Run, TurnRow

# An e-mail address in each assistant turn: the PII detector always finds it.
TURNS = {
    ("tz-east", 1): "2026-11-19T17:59:00+05:00",  # 12:59 UTC
    ("tz-west", 1): "2026-11-19T06:30:00-08:00",  # 14:30 UTC
}


def _instant(ts: str) -> datetime:
    return datetime.fromisoformat(ts).astimezone(UTC)


def _rfc3339_utc(value: str) -> datetime:
    """``value`` parsed; fails unless it carries a zone and that zone is UTC."""
    parsed = datetime.fromisoformat(value)
    assert parsed.tzinfo is not None, f"no zone in {value!r}"
    assert parsed.utcoffset() == timedelta(0), value
    assert "T" in value, value
    return parsed


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path, make_processor, monkeypatch):  # type: ignore[no-untyped-def]
    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "postgres_url")
    lines = []
    for (conv, turn), ts in TURNS.items():
        lines.append({"conversation_id": conv, "turn": 0, "role": "user", "ts": ts,
                      "text": "Hi, I need help with my account."})
        lines.append({"conversation_id": conv, "turn": turn, "role": "assistant", "ts": ts,
                      "text": "Sure. I sent the details to dana.whitfield@example.com today."})
    lines.append({"conversation_id": "tz-bad", "turn": 0, "role": "user",
                  "ts": "2026-11-19T17:59:00", "text": "no zone"})  # a dead letter
    src = tmp_path / "tz.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in lines))
    proc = make_processor(url)
    runner.run([str(src)], proc.settings, progress=False, processor=proc)
    monkeypatch.setenv("CHATMON_DATABASE_URL", url)
    return url


def test_stored_times_come_back_aware_in_utc(store) -> None:  # type: ignore[no-untyped-def]
    engine = db.make_engine(store)
    with Session(engine) as session:
        turns = session.scalars(select(TurnRow).where(TurnRow.role == "assistant")).all()
        assert {(t.conversation_id, t.turn): t.ts for t in turns} == {
            k: _instant(v) for k, v in TURNS.items()}
        for t in turns:
            assert t.ts.utcoffset() == timedelta(0) and t.stored_at.utcoffset() == timedelta(0)
        finding = session.scalars(select(FindingRow)).first()
        dead = session.scalars(select(DeadLetterRow)).first()
        run = session.scalars(select(Run)).first()
        assert finding is not None and dead is not None and run is not None
        for value in (finding.ts, finding.created_at, dead.created_at, run.started_at):
            assert value.utcoffset() == timedelta(0)
    engine.dispose()


def test_findings_json_prints_rfc3339_with_zone(store) -> None:  # type: ignore[no-untyped-def]
    res = CliRunner().invoke(cli, ["findings", "--json", "--limit", "100"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    seen = {(r["conversation_id"], r["turn"]) for r in rows}
    assert seen == set(TURNS)
    for r in rows:
        assert _rfc3339_utc(r["ts"]) == _instant(TURNS[(r["conversation_id"], r["turn"])])


@pytest.mark.parametrize(("since", "expected"), [
    ("2026-11-19T18:00:00+05:00", {"tz-west"}),  # 13:00 UTC: after tz-east's 12:59
    ("2026-11-19T12:59:00Z", {"tz-east", "tz-west"}),
    ("2026-11-19T14:31:00+00:00", set()),
])
def test_since_compares_instants_whatever_the_offset(store, since, expected) -> None:  # type: ignore[no-untyped-def]
    res = CliRunner().invoke(cli, ["findings", "--json", "--limit", "100", "--since", since])
    assert res.exit_code == 0, res.output
    assert {r["conversation_id"] for r in json.loads(res.output)} == expected


def test_review_sample_prints_rfc3339_with_zone(store) -> None:  # type: ignore[no-untyped-def]
    res = CliRunner().invoke(cli, ["review", "sample", "--out", "-", "--n", "10"])
    assert res.exit_code == 0, res.output
    lines = [json.loads(line) for line in res.output.splitlines()]
    assert lines
    for line in lines:
        assert _rfc3339_utc(line["ts"]) == _instant(
            TURNS[(line["conversation_id"], line["turn"])])


def test_report_window_is_utc_and_ends_after_the_newest_turn(store) -> None:  # type: ignore[no-untyped-def]
    engine = db.make_engine(store)
    window = default_window(engine)
    # the midnight (UTC) after the newest turn (14:30 UTC): the report counts whole days
    assert window.end == datetime(2026, 11, 20, 0, 0, tzinfo=UTC)
    assert window.end - _instant(TURNS[("tz-west", 1)]) == timedelta(hours=9, minutes=30)
    assert window.end.utcoffset() == timedelta(0)
    other = default_window(engine, until=datetime(2026, 11, 20, 5, 0,
                                                  tzinfo=timezone(timedelta(hours=5))))
    assert other.end == datetime(2026, 11, 20, 0, 0, tzinfo=UTC)
    assert other.end.utcoffset() == timedelta(0)
    engine.dispose()
