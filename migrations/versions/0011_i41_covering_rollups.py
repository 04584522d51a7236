"""the rollups' panel index covers what the panels read (issue 41): on PostgreSQL
``ix_rollups_label_bucket`` (label, measure, bucket) now INCLUDEs role, bot, model, detector
and the counts and sums, so a panel reads its rows from the index alone (an index-only scan)
instead of visiting one table page per row, or scanning the whole table for the per-detector
'turns' rows. At 10M turns a day's rollups this is what keeps the panels under a second.
SQLite (the embedded default) has no INCLUDE and stays as it is.

The index is rebuilt in the migration's transaction: writes to ``rollups`` wait meanwhile
(about 2 s for the 600k rollup rows of 1M turns; docs/deploy.md). Downgrade rebuilds the
plain index.

Revision ID: 0011_i41_covering_rollups
Revises: 0010_i41_group_rollups
Create Date: 2026-11-29 14:00:00
"""
from __future__ import annotations

from alembic import op

revision = "0011_i41_covering_rollups"
down_revision = "0010_i41_group_rollups"
branch_labels = None
depends_on = None

NAME = "ix_rollups_label_bucket"
KEY = ["label", "measure", "bucket"]
INCLUDE = ["role", "bot_id", "model", "detector", "n", "flagged", "total", "total_sq"]


def _rebuild(include: list[str]) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.drop_index(NAME, table_name="rollups")
    op.create_index(NAME, "rollups", KEY, postgresql_include=include)


def upgrade() -> None:
    _rebuild(INCLUDE)


def downgrade() -> None:
    _rebuild([])
