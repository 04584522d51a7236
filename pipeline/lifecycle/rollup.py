"""Counts that outlive retention (the ``weekly_counts`` table).

Before a batch of expired turns is deleted, what it adds to each ISO week (Monday 00:00 UTC),
tenant, bot, model and role is added to ``weekly_counts``, in the same transaction:

- overall (``detector`` and ``label`` empty): ``turns``;
- per detector (``label`` empty): ``turns`` with a flagged finding of it, and the detector's
  ``findings``, ``flagged`` and ``score_sum``;
- per label: ``findings``, ``flagged``, ``score_sum`` (``turns`` 0: no query needs it, and a
  distinct count per label cost a tenth of the purge's time).

So a week's numbers are the stored rows' plus these, each turn counted once (a turn and all its
findings leave in one batch). The weekly dashboard's empathy and harm trends and the report's
empathy trend read both (``dashboards/queries.py``). Rows deleted on request are not counted:
their counts go with them, and a tenant's or bot's counts go when it is deleted.

One ``INSERT ... SELECT ... ON CONFLICT DO UPDATE`` per level, inside the delete's transaction,
reading rows that transaction holds (PostgreSQL: locked by the batch's ``FOR UPDATE``; SQLite:
one writer at a time), so concurrent purges never count a row twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    Connection,
    Float,
    String,
    case,
    cast,
    distinct,
    func,
    literal,
    literal_column,
    select,
    text,
    type_coerce,
)

from pipeline.lifecycle.scope import among
from pipeline.store.db import dialect_insert
from pipeline.store.models import FindingRow, TurnRow, WeeklyCountRow

KEY = ("week", "tenant", "bot_id", "model", "role", "detector", "label")
VALUES = ("turns", "findings", "flagged", "score_sum")


def week_of(column: Any, dialect: str) -> Any:
    """Monday 00:00 UTC of ``column``'s ISO week, as each store writes a timestamp."""
    if dialect == "postgresql":
        return func.date_trunc(literal_column("'week'"), column, literal_column("'UTC'"))
    # SQLite: the text SQLAlchemy writes for a datetime, so keys compare equal as text.
    monday = func.date(column, literal_column("'-6 days'"), literal_column("'weekday 1'"))
    return type_coerce(monday, String) + literal_column("' 00:00:00.000000'")


def add(conn: Connection, turn_ids: Sequence[str]) -> None:
    """Add what the turns ``turn_ids`` and their findings count to ``weekly_counts``."""
    if not turn_ids:
        return
    dialect = conn.dialect.name
    ids = list(turn_ids)
    t, f = TurnRow, FindingRow
    empty: Any = literal_column("''")
    flagged_turns = func.count(distinct(case((f.flagged, f.turn_id))))
    flagged = func.sum(case((f.flagged, 1), else_=0))
    turns = select(week_of(t.ts, dialect), t.tenant, t.bot_id, t.model, t.role, empty, empty,
                   func.count(), literal(0), literal(0), cast(literal(0.0), Float)) \
        .where(among(t.id, ids, dialect))
    per_detector = select(week_of(f.ts, dialect), f.tenant, f.bot_id, f.model, f.role,
                          f.detector, empty, flagged_turns, func.count(), flagged,
                          func.sum(f.score)).where(among(f.turn_id, ids, dialect))
    per_label = select(week_of(f.ts, dialect), f.tenant, f.bot_id, f.model, f.role, f.detector,
                       f.label, literal(0), func.count(), flagged, func.sum(f.score)) \
        .where(among(f.turn_id, ids, dialect))
    for query, keys in ((turns, 5), (per_detector, 6), (per_label, 7)):
        group = text(", ".join(str(i) for i in range(1, keys + 1)))
        conn.execute(_upsert(dialect, query.group_by(group)))


def _upsert(dialect: str, query: Any) -> Any:
    table = WeeklyCountRow.__table__
    stmt = dialect_insert(dialect)(table).from_select([*KEY, *VALUES], query)
    return stmt.on_conflict_do_update(
        index_elements=list(KEY),
        set_={v: table.c[v] + getattr(stmt.excluded, v) for v in VALUES})
