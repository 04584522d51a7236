"""Counts that outlive retention (the ``weekly_counts`` table).

When a batch of expired turns is deleted, what it adds to each ISO week (Monday 00:00 UTC),
tenant, bot, model and role is added to ``weekly_counts``, in the same transaction:

- overall (``detector`` and ``label`` empty): ``turns``;
- per detector (``label`` empty): ``turns`` with a flagged finding of it, and the detector's
  ``findings``, ``flagged`` and ``score_sum``;
- per label: ``findings``, ``flagged``, ``score_sum`` (``turns`` 0: no query reads it).

So a week's numbers are the stored rows' plus these, each turn counted once (a turn and all its
findings leave in one batch). The weekly dashboard's empathy and harm trends and the report's
empathy trend read both (``dashboards/queries.py``). Rows deleted on request are not counted:
their counts go with them, and a tenant's or bot's counts go when it is deleted.

The counts come from the rows the batch's ``DELETE ... RETURNING`` hands back, so they are
exactly what went, read once; the batch's turns are the transaction's alone (PostgreSQL: locked
``FOR UPDATE SKIP LOCKED``; SQLite: one writer at a time), so concurrent purges never count a
row twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection

from pipeline.store.db import dialect_insert
from pipeline.store.models import FindingRow, TurnRow, WeeklyCountRow

KEY = ("week", "tenant", "bot_id", "model", "role", "detector", "label")
VALUES = ("turns", "findings", "flagged", "score_sum")
# What DELETE ... RETURNING hands back for the counts.
TURN_COLUMNS = (TurnRow.ts, TurnRow.tenant, TurnRow.bot_id, TurnRow.model, TurnRow.role)
FINDING_COLUMNS = (FindingRow.ts, FindingRow.tenant, FindingRow.bot_id, FindingRow.model,
                   FindingRow.role, FindingRow.detector, FindingRow.label, FindingRow.flagged,
                   FindingRow.score, FindingRow.turn_id)


def week_of(ts: datetime) -> datetime:
    """Monday 00:00 UTC of ``ts``'s ISO week."""
    utc = ts.astimezone(UTC) if ts.tzinfo else ts.replace(tzinfo=UTC)
    return (utc - timedelta(days=utc.weekday())).replace(hour=0, minute=0, second=0,
                                                          microsecond=0)


def counts(turns: Iterable[Any], findings: Iterable[Any]) -> list[dict[str, Any]]:
    """``weekly_counts`` rows from deleted turns and findings (rows of the columns above)."""
    acc: dict[tuple[Any, ...], list[float]] = {}
    flagged_turns: dict[tuple[Any, ...], set[str]] = {}
    for ts, tenant, bot, model, role in turns:
        acc.setdefault((week_of(ts), tenant, bot, model, role, "", ""), [0, 0, 0, 0.0])[0] += 1
    for ts, tenant, bot, model, role, detector, label, flagged, score, turn_id in findings:
        base = (week_of(ts), tenant, bot, model, role, detector)
        for key in (base + ("",), base + (label,)):
            cell = acc.setdefault(key, [0, 0, 0, 0.0])
            cell[1] += 1
            cell[2] += int(bool(flagged))
            cell[3] += float(score)
        if flagged:
            flagged_turns.setdefault(base + ("",), set()).add(turn_id)
    for key, ids in flagged_turns.items():
        acc[key][0] = len(ids)
    return [{**dict(zip(KEY, key, strict=True)), "turns": int(c[0]), "findings": int(c[1]),
             "flagged": int(c[2]), "score_sum": c[3]} for key, c in acc.items()]


def add(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """Add ``rows`` to ``weekly_counts`` (an upsert that sums)."""
    if not rows:
        return
    table = WeeklyCountRow.__table__
    stmt = dialect_insert(conn.dialect.name)(table)
    conn.execute(stmt.on_conflict_do_update(
        index_elements=list(KEY),
        set_={v: table.c[v] + getattr(stmt.excluded, v) for v in VALUES}), rows)
