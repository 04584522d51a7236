"""turns and findings partitioned by UTC day on PostgreSQL (SQLite unchanged)

A partitioned table's unique constraints must hold its partition key, so on PostgreSQL the primary
keys become (id, ts), ``ix_turns_conversation`` stops being unique (the turn id, derived from the
conversation and turn, stays checked by the sink's lookup by id), and the two foreign keys
(findings.turn_id -> turns.id, reviews.finding_id -> findings.id) go: they cannot name
(id) alone any more, and expiry drops a day's findings and turns partitions together after
deleting the reviews of its findings (``pipeline/store/partitions.py``). The purge has always
deleted children first; it does not lean on the cascades.

The move: the old tables are renamed, their indexes dropped, the partitioned tables created with
a partition for every day that holds rows (and the days ahead), the rows copied with
``INSERT ... SELECT``, the indexes built on the partitioned tables, the old tables dropped. It
runs in the migration's one transaction: the store is locked meanwhile (docs/deploy.md: 386 s
for 1M turns with 5M findings, 3.4 GB, on two loaded cores). Downgrade copies back to plain
tables and restores the keys.

Revision ID: 0009_i41_partitions
Revises: 0008_i41_rollups
Create Date: 2026-11-29 03:20:00
"""
from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import sqlalchemy as sa
from alembic import op

from pipeline.store import partitions

revision = "0009_i41_partitions"
down_revision = "0008_i41_rollups"
branch_labels = None
depends_on = None

TABLES = ("turns", "findings")
# Unique on the plain tables, plain on the partitioned ones (no ts in it).
UNIQUE_WHEN_PLAIN = {"ix_turns_conversation"}
FOREIGN_KEYS = (
    ("fk_findings_turn_id_turns", "findings", "turn_id", "turns"),
    ("fk_reviews_finding_id_findings", "reviews", "finding_id", "findings"),
)


def _indexes(conn: sa.Connection, table: str) -> list[tuple[str, str]]:
    """(name, CREATE INDEX statement) of the table's indexes but its primary key."""
    return [(name, ddl) for name, ddl in conn.execute(sa.text(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = :t "
        "AND schemaname = current_schema() AND indexname <> :pk ORDER BY indexname"),
        {"t": table, "pk": f"pk_{table}"})]


def _set_aside(conn: sa.Connection, table: str) -> list[tuple[str, str]]:
    """Rename ``table`` to ``<table>_old`` with its key, drop its other indexes (their names
    are wanted by the new table); return those indexes' statements."""
    found = _indexes(conn, table)
    conn.execute(sa.text(f"ALTER TABLE {table} RENAME TO {table}_old"))
    conn.execute(sa.text(f"ALTER TABLE {table}_old RENAME CONSTRAINT pk_{table} "
                         f"TO pk_{table}_old"))
    for name, _ in found:
        conn.execute(sa.text(f"DROP INDEX {name}"))
    return found


def _days(conn: sa.Connection, table: str) -> set[date]:
    return {d for (d,) in conn.execute(sa.text(
        f"SELECT DISTINCT (ts AT TIME ZONE 'UTC')::date FROM {table}_old"))}


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "postgresql":
        return
    for name, table, _, _ in FOREIGN_KEYS:
        conn.execute(sa.text(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {name}"))
    indexes = {t: _set_aside(conn, t) for t in TABLES}
    days: set[date] = set()
    for table in TABLES:
        conn.execute(sa.text(f"CREATE TABLE {table} (LIKE {table}_old INCLUDING DEFAULTS) "
                             "PARTITION BY RANGE (ts)"))
        conn.execute(sa.text(f"ALTER TABLE {table} ADD CONSTRAINT pk_{table} "
                             "PRIMARY KEY (id, ts)"))
        days |= _days(conn, table)
    today = partitions.day_of(datetime.now(UTC))
    ahead = {today + timedelta(days=i) for i in range(-1, partitions.AHEAD_DAYS + 1)}
    partitions.ensure(conn, days | ahead)
    for table in TABLES:
        conn.execute(sa.text(f"INSERT INTO {table} SELECT * FROM {table}_old"))
        for name, ddl in indexes[table]:
            if name in UNIQUE_WHEN_PLAIN:
                ddl = ddl.replace("CREATE UNIQUE INDEX", "CREATE INDEX", 1)
            conn.execute(sa.text(ddl))
    for table in reversed(TABLES):
        conn.execute(sa.text(f"DROP TABLE {table}_old"))
    conn.execute(sa.text(f"ANALYZE {', '.join(TABLES)}"))


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "postgresql":
        return
    indexes = {t: _set_aside(conn, t) for t in TABLES}
    for table in TABLES:
        conn.execute(sa.text(f"CREATE TABLE {table} (LIKE {table}_old INCLUDING DEFAULTS)"))
        conn.execute(sa.text(f"ALTER TABLE {table} ADD CONSTRAINT pk_{table} PRIMARY KEY (id)"))
        conn.execute(sa.text(f"INSERT INTO {table} SELECT * FROM {table}_old"))
        for name, ddl in indexes[table]:
            if name in UNIQUE_WHEN_PLAIN:
                ddl = ddl.replace("CREATE INDEX", "CREATE UNIQUE INDEX", 1)
            conn.execute(sa.text(ddl))
    for table in reversed(TABLES):
        conn.execute(sa.text(f"DROP TABLE {table}_old CASCADE"))
    for name, table, column, parent in FOREIGN_KEYS:
        conn.execute(sa.text(f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY ({column}) "
                             f"REFERENCES {parent} (id) ON DELETE CASCADE"))
