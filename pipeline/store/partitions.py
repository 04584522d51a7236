"""Day partitions of ``turns`` and ``findings`` on PostgreSQL (migration ``0009_i41_partitions``,
docs/deploy.md#partitions). SQLite stays one table each.

Both tables are ``PARTITION BY RANGE (ts)``, one partition per UTC day, named
``turns_p20261129`` and ``findings_p20261129``. A finding's ``ts`` is its turn's, so a turn and
its findings always share a day and go together. chatmon creates partitions:

- at ``chatmon db upgrade`` (the days the store holds, and ``AHEAD_DAYS`` ahead),
- in every sink before its first write and then every ``AHEAD_EVERY_S`` (``AHEAD_DAYS`` ahead:
  serve, worker and run write through a sink, so they keep the days ahead made),
- on demand, before a batch that holds a day without a partition (an old replay): a batch never
  fails for the lack of one. There is no DEFAULT partition.

Partitions made by something else (pg_partman, by week or month) are used as they are: a day that
one covers gets none of chatmon's, and expiry drops any partition, whatever its width, once it is
past every tenant's cut (``expire``).

Creation is ``CREATE TABLE`` then ``ATTACH PARTITION`` (a SHARE UPDATE EXCLUSIVE lock on the
parent: reads and writes go on), serialised between processes by an advisory lock.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import Connection, Engine, text

PARTITIONED = ("turns", "findings")  # turns first: the order every lock is taken in
AHEAD_DAYS = 7
AHEAD_EVERY_S = 3600.0
# pg_advisory_xact_lock key of partition maintenance ("chmp"): creation and expiry of partitions
# never run at once in two processes.
LOCK_KEY = 0x63686D70
# Expiry waits this long for the tables' locks (a long report query holds them), then leaves the
# day to the row deletes of this purge instead of queueing every reader behind it.
LOCK_TIMEOUT = "5s"
# A partition estimated (pg_class.reltuples) above this many rows is counted by the estimate in
# the purge's audit row; smaller ones are counted exactly before the drop.
EXACT_COUNT_BELOW = 1_000_000

_BOUND = re.compile(r"FROM \('([^']+)'\) TO \('([^']+)'\)")
_NAME = re.compile(r"^[a-z0-9_]+$")
_PARTITION = re.compile(r"^(turns|findings)_(p\w+|default)$")

# How the PostgreSQL schema differs from the models (which are SQLite's schema) on purpose:
# (alembic autogenerate's diff kind, name). tests/test_migrations.py allows exactly these.
PG_DIFFERENCES = frozenset({
    ("add_fk", "fk_findings_turn_id_turns"),  # no FK to a partitioned key without its ts
    ("add_fk", "fk_reviews_finding_id_findings"),
    ("remove_index", "ix_turns_conversation"),  # not unique: the key would need ts
    ("add_index", "ix_turns_conversation"),
})


def include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """Alembic autogenerate's filter: the partitions are made at run time, not by migrations."""
    return not (type_ == "table" and _PARTITION.match(name or ""))


@dataclass(frozen=True)
class Partition:
    table: str
    name: str
    lo: datetime
    hi: datetime  # exclusive


def day_of(ts: datetime | str) -> date:
    """The UTC day of a timestamp (a naive one is taken as UTC, as the store does)."""
    if isinstance(ts, str):
        ts = datetime.fromisoformat(ts)
    return (ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)).date()


# The upper bound of the partition of 9999-12-31, the last day a Python datetime holds (the
# store accepts it): PostgreSQL writes it as 10000-01-01, which Python cannot read.
_END = datetime.max.replace(tzinfo=UTC)
_END_SQL = "10000-01-01 00:00:00+00"


def day_bounds(day: date) -> tuple[datetime, datetime]:
    lo = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return lo, (_END if day == date.max else lo + timedelta(days=1))


def _literal(ts: datetime) -> str:
    return _END_SQL if ts == _END else ts.isoformat()


def partition_name(table: str, day: date) -> str:
    return f"{table}_p{day:%Y%m%d}"


def is_partitioned(conn: Connection) -> bool:
    """True on a PostgreSQL store whose turns are partitioned (migration 0009 applied)."""
    if conn.dialect.name != "postgresql":
        return False
    kind = conn.execute(text("SELECT relkind FROM pg_class WHERE oid = to_regclass('turns')"))
    return kind.scalar() == "p"


def partitions(conn: Connection, table: str) -> list[Partition]:
    """The partitions of ``table`` with their bounds, oldest first (a DEFAULT partition, if a
    team added one, is not listed)."""
    conn.execute(text("SET LOCAL TimeZone = 'UTC'"))
    rows = conn.execute(text(
        "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
        "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass(:t)"), {"t": table})
    out = []
    for name, bound in rows:
        m = _BOUND.search(bound or "")
        if m is None or "MINVALUE" in bound or "MAXVALUE" in bound:
            continue
        out.append(Partition(table, name, _ts(m.group(1)), _ts(m.group(2))))
    return sorted(out, key=lambda p: p.lo)


def _ts(literal: str) -> datetime:
    if literal.startswith("10000-"):
        return _END
    value = datetime.fromisoformat(literal.replace(" ", "T"))
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _covered(parts: list[Partition], day: date) -> bool:
    lo, hi = day_bounds(day)
    return any(p.lo <= lo and hi <= p.hi for p in parts)


def ensure(conn: Connection, days: Iterable[date]) -> list[str]:
    """Create the partitions of both tables for each of ``days`` that none covers yet; the names
    created. Run it in a transaction of its own: it takes the maintenance advisory lock."""
    wanted = sorted(set(days))
    if not wanted:
        return []
    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": LOCK_KEY})
    made = []
    for table in PARTITIONED:
        parts = partitions(conn, table)
        for day in wanted:
            if _covered(parts, day):
                continue
            name = partition_name(table, day)
            lo, hi = day_bounds(day)
            # CREATE then ATTACH: ATTACH takes SHARE UPDATE EXCLUSIVE on the parent, so the
            # sinks' inserts and every read go on meanwhile (CREATE ... PARTITION OF would block
            # them). LIKE copies the columns, NOT NULLs and defaults; ATTACH adds the indexes.
            conn.execute(text(f"CREATE TABLE {name} (LIKE {table} INCLUDING DEFAULTS)"))
            conn.execute(text(f"ALTER TABLE {table} ATTACH PARTITION {name} FOR VALUES FROM "
                              f"('{_literal(lo)}') TO ('{_literal(hi)}')"))
            made.append(name)
    return made


def ensure_ahead(engine: Engine, now: datetime | None = None, ahead: int = AHEAD_DAYS,
                 since: Iterable[date] = ()) -> list[str]:
    """Partitions for today, ``ahead`` days after and the days ``since`` (a store's stored days):
    ``chatmon db upgrade`` and the sinks call it. Nothing on SQLite or an unpartitioned store."""
    today = day_of(now or datetime.now(UTC))
    days = {today + timedelta(days=i) for i in range(-1, ahead + 1)} | set(since)
    with engine.begin() as conn:
        if not is_partitioned(conn):
            return []
        return ensure(conn, days)


class Cover:
    """A sink's partitions: before each batch, the days it holds get a partition if they have
    none (one query the first time and after a miss; a set lookup otherwise), and every
    ``AHEAD_EVERY_S`` the days ahead are made."""

    def __init__(self, engine: Engine, clock: Callable[[], float] = time.monotonic) -> None:
        self.engine = engine
        self.clock = clock
        self.known: set[date] = set()
        self.partitioned: bool | None = None
        self.next_ahead = 0.0

    def __call__(self, timestamps: Iterable[datetime]) -> list[str]:
        if self.partitioned is False:
            return []
        days = {day_of(ts) for ts in timestamps} - self.known
        made: list[str] = []
        if self.clock() >= self.next_ahead:
            made += ensure_ahead(self.engine)
            self.next_ahead = self.clock() + AHEAD_EVERY_S
            self._refresh()
        if self.partitioned and days - self.known:
            with self.engine.begin() as conn:
                made += ensure(conn, days)
            self._refresh()
        return made

    def _refresh(self) -> None:
        with self.engine.connect() as conn:
            self.partitioned = is_partitioned(conn)
            if not self.partitioned:
                return
            parts = partitions(conn, "turns")
            findings = partitions(conn, "findings")
        self.known = {d for p in parts for d in _days(p) if _covered(findings, d)}


def _days(p: Partition) -> Iterable[date]:
    day = p.lo.date()
    while datetime(day.year, day.month, day.day, tzinfo=UTC) < p.hi:
        if day_bounds(day)[0] >= p.lo and day_bounds(day)[1] <= p.hi:
            yield day
        if day == date.max:
            return
        day += timedelta(days=1)


# -- expiry ------------------------------------------------------------------------------------

def expire(engine: Engine, cut_of: Callable[[str], datetime | None],
           before: datetime) -> tuple[list[str], Counter[str], int]:
    """Drop the partitions of turns (and the findings partition of the same bounds, with the
    reviews of its findings) that are wholly before the cut of every tenant with rows in them;
    only partitions ending at or before ``before`` (the latest cut of any tenant) are looked at.
    One transaction per partition pair, each under the maintenance lock, with the parents and the
    pair locked ACCESS EXCLUSIVE (turns then findings, as the sink takes them) so no row arrives
    between the check and the drop.

    Returns (partitions dropped, rows per table, rows of the counts that are estimates)."""
    rows: Counter[str] = Counter()
    estimated = 0
    dropped: list[str] = []
    with engine.connect() as conn:
        if not is_partitioned(conn):
            return dropped, rows, estimated
        candidates = [p for p in partitions(conn, "turns") if p.hi <= before]
        findings = {(p.lo, p.hi): p for p in partitions(conn, "findings")}
    for part in candidates:
        pair = findings.get((part.lo, part.hi))
        if pair is None:
            continue  # a findings partition of other bounds: the row deletes handle the day
        got = _drop_pair(engine, part, pair, cut_of)
        if got is None:
            continue
        counts, est = got
        rows.update(counts)
        estimated += est
        dropped += [part.name, pair.name]
    return dropped, rows, estimated


def _drop_pair(engine: Engine, turns: Partition, findings: Partition,
               cut_of: Callable[[str], datetime | None]) -> tuple[Counter[str], int] | None:
    for name in (turns.name, findings.name):
        if not _NAME.match(name):
            return None
    from sqlalchemy.exc import OperationalError

    try:
        with engine.begin() as conn:
            conn.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": LOCK_KEY})
            conn.execute(text("LOCK TABLE ONLY turns, ONLY findings IN ACCESS EXCLUSIVE MODE"))
            if conn.execute(text("SELECT to_regclass(:n)"), {"n": turns.name}).scalar() is None:
                return None  # another process dropped it meanwhile
            conn.execute(text(f"LOCK TABLE {turns.name}, {findings.name} "
                              "IN ACCESS EXCLUSIVE MODE"))
            tenants = _tenants(conn, turns.name)
            for tenant in tenants:
                cut = cut_of(tenant)
                if cut is None or cut < turns.hi:
                    return None
            counts: Counter[str] = Counter()
            estimated = 0
            for table, part in (("turns", turns.name), ("findings", findings.name)):
                n, exact = _count(conn, part)
                counts[table] = n
                estimated += 0 if exact else n
            counts["reviews"] = conn.execute(text(
                f"DELETE FROM reviews r WHERE EXISTS (SELECT 1 FROM {findings.name} f "
                "WHERE f.id = r.finding_id)")).rowcount or 0
            conn.execute(text(f"DROP TABLE {findings.name}"))
            conn.execute(text(f"DROP TABLE {turns.name}"))
    except OperationalError as exc:
        if "lock timeout" in str(exc.orig) or getattr(exc.orig, "sqlstate", "") == "55P03":
            return None  # busy: this purge's row deletes take the day's expired rows instead
        raise
    return +counts, estimated


def tenants(conn: Connection) -> list[str]:
    """PostgreSQL: the distinct tenants of the stored turns, one probe of each partition's
    (tenant, ts) index per tenant (``SELECT DISTINCT`` read the whole index: 0.5-0.9 s at a
    million turns, minutes at a billion)."""
    return _tenants(conn, "turns")


def _tenants(conn: Connection, name: str) -> list[str]:
    """The distinct tenants of a table or partition by a loose index scan of its (tenant, ts)
    index: one probe per tenant instead of reading every row."""
    return [t for (t,) in conn.execute(text(
        f"WITH RECURSIVE t(tenant) AS ((SELECT tenant FROM {name} ORDER BY tenant LIMIT 1) "
        f"UNION ALL SELECT (SELECT x.tenant FROM {name} x WHERE x.tenant > t.tenant "
        "ORDER BY x.tenant LIMIT 1) FROM t WHERE t.tenant IS NOT NULL) "
        "SELECT tenant FROM t WHERE tenant IS NOT NULL"))]


def _count(conn: Connection, name: str) -> tuple[int, bool]:
    """Rows of a partition: exact below ``EXACT_COUNT_BELOW`` by the planner's estimate, else
    the estimate itself (pg_class.reltuples, kept by autovacuum's analyze)."""
    est = conn.execute(text("SELECT reltuples FROM pg_class WHERE oid = to_regclass(:n)"),
                       {"n": name}).scalar()
    if est is not None and est >= EXACT_COUNT_BELOW:
        return int(est), False
    return int(conn.execute(text(f"SELECT count(*) FROM {name}")).scalar_one()), True
