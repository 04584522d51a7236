"""Deletion records (the ``deletions`` table) and the write transactions ordered against them.

A record says that a conversation, a tenant or a bot was deleted on request at ``deleted_at``;
events it covers with ``ts`` at or before that time are never stored again (the no-resurrection
rule, docs/privacy.md#data-lifecycle). A conversation is recorded by the SHA-256 hex digest of
its id, never the id.

Race: a batch being scored while the purge runs must not store its rows after the purge
deleted the conversation's. So the sink checks the records inside its write transaction, and
that transaction is ordered against the one recording deletions: on PostgreSQL by an advisory
lock (writers share it, recording a deletion takes it alone, so a writer either committed before
the record, and the purge deletes its rows, or sees the record); on SQLite by ``BEGIN
IMMEDIATE`` (one writer at a time, and the check runs inside the write transaction).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, or_, select, text

from pipeline.store.db import dialect_insert
from pipeline.store.models import DeletionRow

CONVERSATION, TENANT, BOT = "conversation", "tenant", "bot"
SCOPES = (CONVERSATION, TENANT, BOT)
_LOCK_KEY = 0x63686D31  # "chm1": PostgreSQL advisory lock of writes against deletions


def conversation_key(conversation_id: str) -> str:
    """How the store names a deleted conversation: the SHA-256 hex digest of its id."""
    return hashlib.sha256(conversation_id.encode()).hexdigest()


def deletion_id(scope: str, key: str) -> str:
    return hashlib.sha256(f"deletion\x1f{scope}\x1f{key}".encode()).hexdigest()[:40]


@contextmanager
def write_txn(engine: Engine, exclusive: bool = False) -> Iterator[Connection]:
    """A write transaction ordered against deletion records (see the module docstring);
    ``exclusive`` for the one that records them."""
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            fn = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
            conn.execute(text(f"SELECT {fn}(:k)"), {"k": _LOCK_KEY})
        elif conn.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        yield conn


@dataclass(frozen=True, slots=True)
class Subject:
    """What an event or a row is about, for the rule. ``ts`` None: unknown (an invalid event),
    covered by any record of its conversation."""

    conversation_id: str | None
    tenant: str = ""
    bot: str = ""
    ts: datetime | None = None


class Deletions:
    """The records that concern some subjects."""

    def __init__(self, records: Mapping[tuple[str, str], datetime]) -> None:
        self.records = dict(records)

    @classmethod
    def load(cls, conn: Connection, subjects: Iterable[Subject]) -> Deletions:
        convs, tenants, bots = set(), set(), set()
        for s in subjects:
            if s.conversation_id is not None:
                convs.add(conversation_key(s.conversation_id))
            if s.tenant:
                tenants.add(s.tenant)
            if s.bot:
                bots.add(s.bot)
        wanted = [(CONVERSATION, convs), (TENANT, tenants), (BOT, bots)]
        conds = [(DeletionRow.scope == scope) & DeletionRow.key.in_(sorted(keys))
                 for scope, keys in wanted if keys]
        if not conds:
            return cls({})
        rows = conn.execute(select(DeletionRow.scope, DeletionRow.key, DeletionRow.deleted_at)
                            .where(or_(*conds)))
        return cls({(r.scope, r.key): r.deleted_at for r in rows})

    def __bool__(self) -> bool:
        return bool(self.records)

    def covers(self, s: Subject) -> bool:
        cuts = [self.records.get((TENANT, s.tenant)) if s.tenant else None,
                self.records.get((BOT, s.bot)) if s.bot else None]
        if s.conversation_id is not None and self.records:
            cuts.append(self.records.get((CONVERSATION, conversation_key(s.conversation_id))))
        cut = max((c for c in cuts if c is not None), default=None)
        if cut is None:
            return False
        return s.ts is None or _utc(s.ts) <= _utc(cut)


def row_subject(row: Mapping[str, Any]) -> Subject:
    """The subject of a turn, finding or dead-letter row as the sink writes it."""
    return Subject(row.get("conversation_id"), row.get("tenant") or "",
                   row.get("bot_id") or "", row.get("ts"))


def without_deleted(conn: Connection, *tables: Sequence[Mapping[str, Any]]
                    ) -> list[list[Mapping[str, Any]]]:
    """Each list of rows less those a deletion record covers (call inside ``write_txn``)."""
    subjects = {row_subject(r) for rows in tables for r in rows}
    found = Deletions.load(conn, subjects)
    if not found:
        return [list(rows) for rows in tables]
    return [[r for r in rows if not found.covers(row_subject(r))] for rows in tables]


def record(conn: Connection, scope: str, keys: Iterable[str], when: datetime,
           purge_id: str, dialect: str) -> int:
    """Record (or move forward) deletions; call inside ``write_txn(exclusive=True)``."""
    rows = [dict(id=deletion_id(scope, k), scope=scope, key=k, deleted_at=when,
                 purge_id=purge_id) for k in sorted(set(keys))]
    if not rows:
        return 0
    stmt = dialect_insert(dialect)(DeletionRow.__table__)
    conn.execute(stmt.on_conflict_do_update(index_elements=["id"], set_=dict(
        deleted_at=stmt.excluded.deleted_at, purge_id=stmt.excluded.purge_id)), rows)
    return len(rows)


def recorded_since(engine: Engine, since: datetime | None) -> list[tuple[str, str, datetime]]:
    """(scope, key, deleted_at) of the records at or after ``since`` (all with None)."""
    q = select(DeletionRow.scope, DeletionRow.key, DeletionRow.deleted_at)
    if since is not None:
        q = q.where(DeletionRow.deleted_at >= since)
    with engine.connect() as conn:
        return [(r.scope, r.key, r.deleted_at) for r in conn.execute(q)]


def _utc(when: datetime) -> datetime:
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when
