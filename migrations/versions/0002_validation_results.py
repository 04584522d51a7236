"""validation_results: outcomes of chatmon validate (great-expectations suites)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 13:40:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "validation_results",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("validation_id", sa.String(length=36), nullable=False),
        sa.Column("checked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("suite", sa.String(length=64), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("expectation", sa.String(length=128), nullable=False),
        sa.Column("column_name", sa.String(length=128), nullable=False),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("unexpected_count", sa.Integer(), nullable=True),
        sa.Column("observed", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_validation_results")),
    )
    with op.batch_alter_table("validation_results", schema=None) as batch_op:
        batch_op.create_index("ix_validation_results_checked_at", ["checked_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("validation_results", schema=None) as batch_op:
        batch_op.drop_index("ix_validation_results_checked_at")
    op.drop_table("validation_results")
