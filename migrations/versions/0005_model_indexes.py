"""model indexes: chatmon compare and chatmon findings --model select by model and time

Revision ID: 0005
Revises: 0002
Create Date: 2026-11-23 16:00:00
"""
from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.create_index("ix_turns_model_ts", ["model", "ts"], unique=False)
    with op.batch_alter_table("findings", schema=None) as batch_op:
        batch_op.create_index("ix_findings_model_ts", ["model", "ts"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("findings", schema=None) as batch_op:
        batch_op.drop_index("ix_findings_model_ts")
    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.drop_index("ix_turns_model_ts")
