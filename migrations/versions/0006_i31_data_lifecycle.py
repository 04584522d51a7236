"""data lifecycle: deletion records, the purge audit log, weekly counts that outlive retention,
and the indexes that keep purges cheap (turns by tenant and time, dead letters by conversation
and by time)

Revision ID: 0006_i31
Revises: 0005
Create Date: 2026-11-26 15:00:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_i31"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "deletions",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("purge_id", sa.String(length=36), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deletions")),
    )
    with op.batch_alter_table("deletions", schema=None) as batch_op:
        batch_op.create_index("ix_deletions_key", ["key"], unique=False)
        batch_op.create_index("ix_deletions_deleted_at", ["deleted_at"], unique=False)
    op.create_table(
        "purges",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("command", sa.String(length=200), nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("rows", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_purges")),
    )
    with op.batch_alter_table("purges", schema=None) as batch_op:
        batch_op.create_index("ix_purges_started_at", ["started_at"], unique=False)
    op.create_table(
        "weekly_counts",
        sa.Column("week", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("bot_id", sa.String(length=200), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("detector", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=128), nullable=False),
        sa.Column("turns", sa.Integer(), nullable=False),
        sa.Column("findings", sa.Integer(), nullable=False),
        sa.Column("flagged", sa.Integer(), nullable=False),
        sa.Column("score_sum", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("week", "tenant", "bot_id", "model", "role", "detector", "label",
                                name=op.f("pk_weekly_counts")),
    )
    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.create_index("ix_turns_tenant_ts", ["tenant", "ts"], unique=False)
    with op.batch_alter_table("dead_letters", schema=None) as batch_op:
        batch_op.create_index("ix_dead_letters_conversation", ["conversation_id"], unique=False)
        batch_op.create_index("ix_dead_letters_created_at", ["created_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("dead_letters", schema=None) as batch_op:
        batch_op.drop_index("ix_dead_letters_created_at")
        batch_op.drop_index("ix_dead_letters_conversation")
    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.drop_index("ix_turns_tenant_ts")
    op.drop_table("weekly_counts")
    with op.batch_alter_table("purges", schema=None) as batch_op:
        batch_op.drop_index("ix_purges_started_at")
    op.drop_table("purges")
    with op.batch_alter_table("deletions", schema=None) as batch_op:
        batch_op.drop_index("ix_deletions_deleted_at")
        batch_op.drop_index("ix_deletions_key")
    op.drop_table("deletions")
