"""Run every panel that reads the rollups beside its row-based SQL of before issue 41
(``row_queries.py``) and compare: the same rows, in the same order, numbers within 1e-9."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine, func, select

from dashboards import queries, sqlrun
from pipeline.store.models import FindingRow
from tests.dashboards import row_queries

PANELS = ("EMPATHY_WEEKLY", "EMPATHY_WEEKS", "MECHANISMS", "MECHANISMS_WEEKLY",
          "EMPATHY_MISSED_WEEKLY", "ALIGNMENT_WEEKLY", "STOCK_EMPATHY", "STOCK_EMPATHY_SHARE",
          "STOCK_PHRASES", "NEAR_DUPLICATES", "TEMPLATES", "DIVERSITY_WEEKLY", "HARMS_WEEKLY",
          "EMPATHY_GAP", "WEEK_OVER_WEEK", "BOT_SUMMARY", "WORST_CONVERSATIONS")
# A conversation counts whole in the worst-conversations list, in the range of its first
# finding (conversation_rollups), and a gap pair on the day of its reply (group_rollups); the
# rows counted findings inside the range. The two agree on ranges that split no conversation,
# so these are compared on those only.
WHOLE_CONVERSATIONS = ("WORST_CONVERSATIONS", "EMPATHY_GAP")
# phrase_rollups and group_rollups count per day (migration 0013): these panels count the
# whole days that start in the range, the rows counted findings inside it; the two agree on
# day-aligned ranges.
WHOLE_DAYS = ("STOCK_EMPATHY", "STOCK_PHRASES", "TEMPLATES", "EMPATHY_GAP")
TOLERANCE = 1e-9


def normal(value: Any, column: str) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, str) and column in ("time", "started") and len(value) >= 10:
        return (value[:19] if len(value) > 10 else value + " 00:00:00").replace("T", " ")
    return value


def same(new: list[dict[str, Any]], old: list[dict[str, Any]], where: str) -> None:
    assert len(new) == len(old), (where, new, old)
    for i, (a, b) in enumerate(zip(new, old, strict=True)):
        assert list(a) == list(b), where
        for k in a:
            x, y = normal(a[k], k), normal(b[k], k)
            if isinstance(x, float | int) and isinstance(y, float | int) and not (
                    isinstance(x, bool) or isinstance(y, bool)):
                assert abs(float(x) - float(y)) <= TOLERANCE, (where, i, k, a, b)
            else:
                assert x == y, (where, i, k, a, b)


def splits_a_conversation(engine: Engine, bound: datetime) -> bool:
    """Whether some conversation has findings both before ``bound`` and at or after it."""
    with engine.connect() as conn:
        spans = conn.execute(select(FindingRow.conversation_id, func.min(FindingRow.ts),
                                    func.max(FindingRow.ts))
                             .group_by(FindingRow.conversation_id)).all()
    return any(_utc(lo) < bound <= _utc(hi) for _, lo, hi in spans)


def _utc(when: datetime) -> datetime:
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def compare_panels(engine: Engine, ranges: list[tuple[datetime, datetime]]) -> dict[str, int]:
    """Compare every panel over every hour-aligned range; returns the rows compared per panel
    (so a caller can check that the data reached each one)."""
    compared: dict[str, int] = {}
    for t_from, t_to in ranges:
        assert t_from.minute == t_to.minute == t_from.second == t_to.second == 0
        whole = not (splits_a_conversation(engine, t_from)
                     or splits_a_conversation(engine, t_to))
        days = t_from.hour == t_to.hour == 0
        for name in PANELS:
            if (name in WHOLE_CONVERSATIONS and not whole) or (name in WHOLE_DAYS and not days):
                continue
            new = sqlrun.run(engine, getattr(queries, name).sql, t_from, t_to).records()
            old = sqlrun.run(engine, getattr(row_queries, name).sql, t_from, t_to).records()
            same(new, old, f"{name} {t_from:%Y-%m-%d %H}..{t_to:%Y-%m-%d %H}")
            compared[name] = compared.get(name, 0) + len(new)
    return compared


def hour(when: datetime) -> datetime:
    return when.replace(minute=0, second=0, microsecond=0)


def day(when: datetime) -> datetime:
    return hour(when).replace(hour=0)


def ranges_over(start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
    """The whole span and a week-aligned week, three days inside it (day-aligned), and two
    ranges cut at odd hours inside it."""
    lo, hi = day(start) - timedelta(days=7), day(end) + timedelta(days=8)
    monday = day(start) - timedelta(days=start.weekday()) + timedelta(days=7)
    span = end - start
    middle = day(start + span * 0.4)
    return [(lo, hi), (monday, monday + timedelta(days=7)),
            (middle, middle + timedelta(days=3)),
            (hour(start + span * 0.2) + timedelta(hours=5),
             hour(start + span * 0.7) + timedelta(hours=7)),
            (hour(start + span * 0.45) + timedelta(hours=13), hi)]


def rollups_match_rows(engine: Engine, tolerance: float = 1e-6) -> int:
    """The stored rollups equal the rollups of every stored row aggregated at once (each turn
    with all its findings: no 'prior' to get wrong, every gap pair's two sides at hand);
    returns the rollup rows compared."""
    from pipeline.store import rollups
    from pipeline.store.models import (
        ConversationRollupRow,
        GroupRollupRow,
        PhraseRollupRow,
        RollupRow,
        TurnRow,
    )

    # one snapshot: a worker may still be committing batches (rows and rollups together)
    options = {"isolation_level": "REPEATABLE READ"} if engine.dialect.name == "postgresql" \
        else {}
    with engine.connect().execution_options(**options) as conn:
        turns = [dict(r._mapping) for r in conn.execute(select(TurnRow.__table__))]
        findings = [dict(r._mapping) for r in conn.execute(select(FindingRow.__table__))]
        stored = {m.__tablename__: [dict(r._mapping) for r in conn.execute(
            select(m.__table__))] for m in (RollupRow, PhraseRollupRow, ConversationRollupRow,
                                            GroupRollupRow)}
        # every turn is whole here: the pairs are made from these rows alone, nothing read
        pairs = rollups.group_pairs(conn, findings, [(t["conversation_id"], t["turn"])
                                                     for t in turns])
    want = rollups.aggregate(turns, findings, pairs=pairs)
    keys = {"rollups": rollups.ROLLUP_KEY, "phrase_rollups": rollups.PHRASE_KEY,
            "conversation_rollups": ("conversation_id",), "group_rollups": rollups.GROUP_KEY}
    compared = 0
    for name, rows in (("rollups", want.rollups), ("phrase_rollups", want.phrases),
                       ("conversation_rollups", want.conversations),
                       ("group_rollups", want.groups)):
        def keyed(rs: list[dict[str, Any]], name: str = name) -> dict[Any, dict[str, Any]]:
            return {tuple(normal(r[k], k) for k in keys[name]): r for r in rs}
        got, exp = keyed(stored[name]), keyed(rows)
        assert set(got) == set(exp), (name, sorted(set(got) ^ set(exp))[:5])
        for k, r in exp.items():
            for col, v in r.items():
                g = got[k][col]
                if isinstance(v, float):
                    assert abs(v - g) <= tolerance, (name, k, col, v, g)
                elif isinstance(v, datetime):
                    assert _utc(v) == _utc(g), (name, k, col, v, g)
                else:
                    assert v == g, (name, k, col, v, g)
            compared += 1
    return compared
