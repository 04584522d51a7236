"""the judge's findings by time (issue 41): ``ix_findings_judge_ts`` (ts) WHERE detector =
'judge', a partial index holding the judge's findings only. The classifier-vs-judge agreement
panel read them through ``ix_findings_detector_label`` of every day partition in its range, so
its time grew with the store (8.8x from 1M to 10M turns with no judge finding at all); the
judge rates a budgeted sample, and the partial index grows with that sample alone.

On PostgreSQL the index is built on every partition of ``findings`` in the migration's
transaction (a read of the table; writes to ``findings`` wait meanwhile: docs/deploy.md); a
partition made later gets it from the parent.

Revision ID: 0014_i41_judge_index
Revises: 0013_i41_day_rollups
Create Date: 2026-11-30 17:10:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_i41_judge_index"
down_revision = "0013_i41_day_rollups"
branch_labels = None
depends_on = None

NAME = "ix_findings_judge_ts"
JUDGE = sa.text("detector = 'judge'")


def upgrade() -> None:
    op.create_index(NAME, "findings", ["ts"], postgresql_where=JUDGE, sqlite_where=JUDGE)


def downgrade() -> None:
    op.drop_index(NAME, table_name="findings")
