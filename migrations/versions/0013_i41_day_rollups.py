"""phrase_rollups and group_rollups per day, not per hour (issue 41): the phrase panels
(formulaic empathy, procedural phrases, template sequences) and the empathy gap sum every row
of their range, one per hour, bot and phrase (or bot, model and user group), and a busy bot
says most of its phrases, and hears most groups, every hour: ``phrase_rollups`` had 124k rows
at 1M turns and 830k at 10M, and the panels' time grew 8x (the gap's 3.7x). Per day the rows
stop growing once a bot says its phrases every day. The stored hours are summed into their UTC
day (counts and sums added, the largest share and reply count kept), in the migration's
transaction: writes to the two tables wait meanwhile (seconds: they are small).

Downgrade leaves the day rows (an hour cannot be recovered from a day); the older code reads
them as rows of each day's first hour, so its panels keep their totals on day-aligned ranges.

Revision ID: 0013_i41_day_rollups
Revises: 0012_i41_worst_index
Create Date: 2026-11-30 17:00:00
"""
from __future__ import annotations

from alembic import op

revision = "0013_i41_day_rollups"
down_revision = "0012_i41_worst_index"
branch_labels = None
depends_on = None

# table -> (its key after the bucket, its other columns with how days combine them)
TABLES = {
    "phrase_rollups": ("tenant, bot_id, label, phrase_key",
                       {"phrase": "MIN", "n": "SUM", "max_share": "MAX", "max_replies": "MAX"}),
    "group_rollups": ("tenant, bot_id, model, category, user_group",
                      {"n": "SUM", "total": "SUM", "total_sq": "SUM"}),
}


def _day(dialect: str) -> str:
    if dialect == "postgresql":
        return "date_trunc('day', bucket, 'UTC')"
    return "strftime('%Y-%m-%d 00:00:00.000000', bucket)"


def upgrade() -> None:
    day = _day(op.get_bind().dialect.name)
    for table, (key, values) in TABLES.items():
        combined = ", ".join(f"{how}({col}) AS {col}" for col, how in values.items())
        columns = f"bucket, {key}, {', '.join(values)}"
        op.execute(f"""
            CREATE TEMPORARY TABLE day_rows AS
            SELECT {day} AS bucket, {key}, {combined}
            FROM {table} GROUP BY {day}, {key}""")
        op.execute(f"DELETE FROM {table}")
        op.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM day_rows")
        op.execute("DROP TABLE day_rows")


def downgrade() -> None:
    """Nothing to undo: the day rows stay (see the module's docstring)."""
