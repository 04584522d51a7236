"""the worst-conversations panel reads its rows off an index in its own order (issue 41):
``ix_conversation_rollups_worst`` (harm_flagged DESC, empathy_total / NULLIF(empathy_n, 0),
conversation_id) replaces ``ix_conversation_rollups_harm_flagged`` (harm_flagged, started),
which gave the flagged count's order only, so PostgreSQL sorted every conversation tied at the
top count (thousands at 10M turns) to find the 20 least empathic.

Downgrade restores the old index.

Revision ID: 0012_i41_worst_index
Revises: 0011_i41_covering_rollups
Create Date: 2026-11-29 13:40:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_i41_worst_index"
down_revision = "0011_i41_covering_rollups"
branch_labels = None
depends_on = None

TABLE = "conversation_rollups"


def upgrade() -> None:
    op.drop_index("ix_conversation_rollups_harm_flagged", table_name=TABLE)
    op.create_index("ix_conversation_rollups_worst", TABLE, [
        sa.text("harm_flagged DESC"), sa.text("(empathy_total / NULLIF(empathy_n, 0))"),
        "conversation_id"])


def downgrade() -> None:
    op.drop_index("ix_conversation_rollups_worst", table_name=TABLE)
    op.create_index("ix_conversation_rollups_harm_flagged", TABLE, ["harm_flagged", "started"])
