"""the turn counts of ``rollups`` by their own narrow index (issue 41): ``ix_rollups_turns``
(measure, role, detector, bucket) INCLUDE (bot_id, n, flagged) WHERE label = ''. The harm and
bot-summary panels read a bot's replies and its flagged replies per detector; through
``ix_rollups_label_bucket`` (wide: every rollup column, and keyed only to the measure) they read
every detector's and role's turn rows of their range and filtered most away. On a cold cache
after a bulk fill that read took 1.24 s at 10M turns; at 1M, cold, it reads 2,797 pages through
the wide index and 356 through this one freshly built (0.42 s -> 0.04 s, 2-core AMD EPYC); at 3M
with the index as the sink's updates grew it, 6,562 and 2,358 (docs/bench/notes.md).

On PostgreSQL the index is built in the migration's transaction (a read of ``rollups``, 1.6 s
at 1M turns; the sink's writes wait meanwhile).

Revision ID: 0015_i41_turns_index
Revises: 0014_i41_judge_index
Create Date: 2026-11-29 20:55:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_i41_turns_index"
down_revision = "0014_i41_judge_index"
branch_labels = None
depends_on = None

NAME = "ix_rollups_turns"
TURN_ROWS = sa.text("label = ''")


def upgrade() -> None:
    op.create_index(NAME, "rollups", ["measure", "role", "detector", "bucket"],
                    postgresql_include=["bot_id", "n", "flagged"],
                    postgresql_where=TURN_ROWS, sqlite_where=TURN_ROWS)


def downgrade() -> None:
    op.drop_index(NAME, table_name="rollups")
