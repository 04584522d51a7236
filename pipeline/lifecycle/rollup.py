"""The purges' side of the rollups (``pipeline/store/rollups.py``, docs/privacy.md).

- Deletion of a conversation on request takes its rows' contributions out of ``rollups``,
  ``phrase_rollups`` and ``group_rollups`` (from the rows the batch's ``DELETE ... RETURNING``
  hands back, so exactly what went, read once; a gap pair whose other side another batch
  deletes is taken out by whichever batch goes first) and deletes its ``conversation_rollups``
  row.
- Deletion of a tenant or a bot deletes their rows of all four tables.
- Retention leaves ``rollups``, ``phrase_rollups`` and ``group_rollups`` as they are: counts
  outlive the rows (the ``weekly_counts`` of before issue 41, kept per hour, and since the rows
  were written). It deletes the ``conversation_rollups`` rows whose last finding is past the
  tenant's cut.

The batch's turns are the transaction's alone (PostgreSQL: locked ``FOR UPDATE SKIP LOCKED``;
SQLite: one writer at a time), so concurrent purges never subtract a row twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Table, delete

from pipeline.store import rollups
from pipeline.store.models import (
    ConversationRollupRow,
    FindingRow,
    GroupRollupRow,
    PhraseRollupRow,
    RollupRow,
    TurnRow,
)

TABLES = ("rollups", "phrase_rollups", "conversation_rollups", "group_rollups")
# What DELETE ... RETURNING hands back for the subtraction.
TURN_COLUMNS = tuple(TurnRow.__table__.c[c] for c in rollups.TURN_COLUMNS)
FINDING_COLUMNS = tuple(FindingRow.__table__.c[c] for c in rollups.FINDING_COLUMNS)


def subtract(conn: Connection, turns: Sequence[Any], findings: Sequence[Any]) -> None:
    """Take deleted rows (tuples of the columns above) out of the rollups; called after the
    deletes, so the gap pairs' other sides are read as they are left."""
    gone = rollups.as_dicts(turns, rollups.TURN_COLUMNS)
    found = rollups.as_dicts(findings, rollups.FINDING_COLUMNS)
    pairs = rollups.group_pairs(conn, found, [(t["conversation_id"], t["turn"]) for t in gone])
    rollups.subtract(conn, gone, found, pairs)


def drop_conversations(conn: Connection, conversations: Sequence[str]) -> int:
    """Delete the conversations' ``conversation_rollups`` rows; how many went."""
    table = ConversationRollupRow.__table__
    return conn.execute(delete(table).where(
        table.c.conversation_id.in_(list(conversations)))).rowcount or 0


def drop_owner(conn: Connection, column: str, name: str) -> Counter[str]:
    """Delete a tenant's (``column`` 'tenant') or a bot's ('bot_id') rows of the rollups."""
    got: Counter[str] = Counter()
    for model in (RollupRow, PhraseRollupRow, ConversationRollupRow, GroupRollupRow):
        table: Table = model.__table__  # type: ignore[assignment]
        got[table.name] = conn.execute(delete(table).where(table.c[column] == name)).rowcount \
            or 0
    return got


def expire_conversations(conn: Connection, tenant: str, cut: datetime) -> int:
    """Delete the tenant's ``conversation_rollups`` rows whose last finding is before ``cut``."""
    table = ConversationRollupRow.__table__
    return conn.execute(delete(table).where(table.c.tenant == tenant,
                                            table.c["last"] < cut)).rowcount or 0
