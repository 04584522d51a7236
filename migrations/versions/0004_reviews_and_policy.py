"""reviews table; findings record the policy that decided them (suppressed, suppressed_by,
policy_version)

Revision ID: 0004
Revises: 0002
Create Date: 2026-11-24 10:00:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("findings", schema=None) as batch_op:
        batch_op.add_column(sa.Column("suppressed", sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
        batch_op.add_column(sa.Column("suppressed_by", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("policy_version", sa.String(length=64), nullable=True))
    op.create_table(
        "reviews",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("finding_id", sa.String(length=40), nullable=False),
        sa.Column("reviewer", sa.String(length=100), nullable=False),
        sa.Column("present", sa.Boolean(), nullable=False),
        sa.Column("rating", sa.Integer(), nullable=True),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("imported_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["finding_id"], ["findings.id"],
                                name=op.f("fk_reviews_finding_id_findings"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reviews")),
    )
    with op.batch_alter_table("reviews", schema=None) as batch_op:
        batch_op.create_index("ix_reviews_finding", ["finding_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("reviews", schema=None) as batch_op:
        batch_op.drop_index("ix_reviews_finding")
    op.drop_table("reviews")
    with op.batch_alter_table("findings", schema=None) as batch_op:
        batch_op.drop_column("policy_version")
        batch_op.drop_column("suppressed_by")
        batch_op.drop_column("suppressed")
