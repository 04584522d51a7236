"""judge: answer cache, daily usage, follow-mode cursors; turns indexed by stored_at

Revision ID: 0007_i29_judge
Revises: 0006_i31
Create Date: 2026-11-26 15:00:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_i29_judge"
down_revision = "0006_i31"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "judge_cache",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=200), nullable=True),
        sa.Column("rubric", sa.String(length=80), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("rating", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_judge_cache")),
    )
    op.create_index("ix_judge_cache_conversation", "judge_cache", ["conversation_id"])
    op.create_table(
        "judge_usage",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("requests", sa.Integer(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_judge_usage")),
    )
    op.create_table(
        "judge_cursors",
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("stored_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("turn_id", sa.String(length=40), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_judge_cursors")),
    )
    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.create_index("ix_turns_stored_at", ["stored_at", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.drop_index("ix_turns_stored_at")
    op.drop_table("judge_cursors")
    op.drop_table("judge_usage")
    op.drop_index("ix_judge_cache_conversation", table_name="judge_cache")
    op.drop_table("judge_cache")
