"""the empathy gap's rollup (issue 41): ``group_rollups``, per hour of the reply, tenant, bot,
model and the user group its user turn mentions: how many replies, the sum and sum of squares
of their empathy; backfilled from the stored ``bias.user_group`` and ``empathy.score`` findings.

Downgrade drops the table.

Revision ID: 0010_i41_group_rollups
Revises: 0009_i41_partitions
Create Date: 2026-11-29 10:00:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_i41_group_rollups"
down_revision = "0009_i41_partitions"
branch_labels = None
depends_on = None

KEY = ("bucket", "tenant", "bot_id", "model", "category", "user_group")


def _hour(dialect: str, column: str) -> str:
    if dialect == "postgresql":
        return f"date_trunc('hour', {column})"
    return f"strftime('%Y-%m-%d %H:00:00.000000', {column})"


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.create_table(
        "group_rollups",
        sa.Column("bucket", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("bot_id", sa.String(length=200), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("category", sa.String(length=128), nullable=False),
        sa.Column("user_group", sa.String(length=200), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.Column("total", sa.Float(), nullable=False),
        sa.Column("total_sq", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint(*KEY, name=op.f("pk_group_rollups")),
    )
    op.create_index("ix_group_rollups_bucket", "group_rollups", ["bucket"])
    hour = _hour(dialect, "e.ts")
    # a reply counts once per group its user turn mentions, however many findings say it
    op.execute(f"""
        INSERT INTO group_rollups ({', '.join(KEY)}, n, total, total_sq)
        SELECT {hour}, e.tenant, e.bot_id, e.model, g.category, g.grp, COUNT(*),
               SUM(e.score), SUM(e.score * e.score)
        FROM (SELECT DISTINCT conversation_id, turn,
                     COALESCE(evidence->>'category', '') AS category,
                     COALESCE(evidence->>'group', '') AS grp
              FROM findings WHERE label = 'bias.user_group') g
        JOIN findings e ON e.conversation_id = g.conversation_id AND e.turn = g.turn + 1
          AND e.label = 'empathy.score'
        GROUP BY {hour}, e.tenant, e.bot_id, e.model, g.category, g.grp""")


def downgrade() -> None:
    op.drop_index("ix_group_rollups_bucket", table_name="group_rollups")
    op.drop_table("group_rollups")
