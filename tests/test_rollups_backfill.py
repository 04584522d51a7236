"""Migrations 0008 and 0010 (issue 41): a store of before the rollups gets the rollups the sink
would have written for its rows, the empathy gap's ``group_rollups`` too (one INSERT ... SELECT
... GROUP BY per kind of row, SQLite and PostgreSQL), and its weekly_counts (counts of expired
rows) land in ``rollups`` at their week."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Engine, insert, select, text

from pipeline.store import db
from pipeline.store.models import (
    ConversationRollupRow,
    FindingRow,
    GroupRollupRow,
    PhraseRollupRow,
    RollupRow,
    TurnRow,
)
from pipeline.store.sink import Sink
from tests.dashboards.seed import rows

BEFORE = "0007_i29_judge"
WEEK = datetime(2026, 10, 26, tzinfo=UTC)  # a Monday before the seed's rows
# (detector, label, turns, findings, flagged, score_sum) of expired rows, as 0006 kept them.
WEEKLY = [("", "", 40, 0, 0, 0.0), ("toxicity", "", 3, 5, 4, 4.1),
          ("toxicity", "toxicity.insult", 0, 5, 4, 4.1)]


def _snapshot(engine: Engine) -> dict[str, list[dict[str, Any]]]:
    out = {}
    with engine.connect() as conn:
        for model in (RollupRow, PhraseRollupRow, ConversationRollupRow, GroupRollupRow):
            table = model.__table__
            out[table.name] = [dict(r._mapping) for r in conn.execute(
                select(table).order_by(*table.primary_key.columns))]
    return out


def _close(a: list[dict[str, Any]], b: list[dict[str, Any]], where: str) -> None:
    assert len(a) == len(b), where
    for x, y in zip(a, b, strict=True):
        assert x.keys() == y.keys()
        for k in x:
            if isinstance(x[k], float) and isinstance(y[k], float):
                assert abs(x[k] - y[k]) <= 1e-9, (where, k, x, y)
            else:
                assert x[k] == y[k], (where, k, x, y)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_backfill_equals_what_the_sink_writes(backend: str, sqlite_url: str,
                                                  tmp_path: Any, request: Any) -> None:
    turns, findings = rows()
    # What the sink writes, on a store at the newest schema.
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    db.upgrade(fresh)
    written = db.make_engine(fresh)
    Sink(written).write(turns, findings)
    expected = _snapshot(written)
    written.dispose()
    assert all(expected.values())

    # The same rows in a store of before, upgraded.
    url = sqlite_url if backend == "sqlite" else request.getfixturevalue("postgres_server_url")
    if backend == "postgres":
        db.downgrade(url, "base")
    db.upgrade(url, BEFORE)
    old = db.make_engine(url)
    with old.begin() as conn:
        conn.execute(insert(TurnRow.__table__), turns)
        conn.execute(insert(FindingRow.__table__), findings)
        conn.execute(text(
            "INSERT INTO weekly_counts (week, tenant, bot_id, model, role, detector, label, "
            "turns, findings, flagged, score_sum) VALUES (:week, 'acme', 'helpdesk-a', "
            "'support-llm-2026-09', 'assistant', :d, :l, :t, :f, :fl, :s)"),
            [{"week": WEEK if backend == "postgres" else "2026-10-26 00:00:00.000000",
              "d": d, "l": lab, "t": t, "f": f, "fl": fl, "s": s}
             for d, lab, t, f, fl, s in WEEKLY])
    old.dispose()
    db.upgrade(url)
    engine = db.make_engine(url)
    try:
        got = _snapshot(engine)
        moved = [r for r in got["rollups"] if r["bucket"] == WEEK]
        got["rollups"] = [r for r in got["rollups"] if r["bucket"] != WEEK]
        for name in expected:
            _close(got[name], expected[name], name)
        assert {(r["detector"], r["label"], r["measure"]): (r["n"], r["flagged"], r["total"])
                for r in moved} == {("", "", ""): (40, 0, 0.0),
                                    ("toxicity", "", "turns"): (3, 3, 0.0),
                                    ("toxicity", "toxicity.insult", ""): (5, 4, 4.1)}
        with engine.connect() as conn:
            tables = set(conn.dialect.get_table_names(conn))
        assert "weekly_counts" not in tables
    finally:
        engine.dispose()
        if backend == "postgres":
            db.downgrade(url, "base")
