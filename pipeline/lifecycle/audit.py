"""The purge audit log (the ``purges`` table): one row per purge, written as it goes.

A row says what was asked (conversations by the SHA-256 of their id, a tenant, a bot, or the
retention cuts), by which command, how many rows of each table went, when, and whether it
finished. It never holds a conversation id or any text. The row is written before the first
deletion and updated after each committed batch, so a purge that dies half way still says
what it removed.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, insert, select, update
from sqlalchemy.exc import SQLAlchemyError

from pipeline.store.deletions import CONVERSATION, conversation_key
from pipeline.store.models import PurgeRow
from pipeline.store.sink import store_error

RUNNING, DONE, FAILED = "running", "done", "failed"


class Audit:
    """One purge's row. With ``always`` False (scheduled runs) the row is only written once
    something went, so an hourly expiry that finds nothing leaves no trace."""

    def __init__(self, engine: Engine, command: str, scope: str, request: Mapping[str, Any],
                 always: bool = True) -> None:
        self.engine = engine
        self.id = str(uuid.uuid4())
        self.started_at = datetime.now(UTC)
        self.values = dict(command=command[:200], scope=scope, request=dict(request))
        self.written = False
        if always:
            self._write(Counter(), RUNNING)

    def progress(self, rows: Counter[str]) -> None:
        if rows or self.written:
            self._write(rows, RUNNING)

    def finish(self, rows: Counter[str], failed: bool = False) -> None:
        if rows or self.written or failed:
            self._write(rows, FAILED if failed else DONE, datetime.now(UTC))

    def _write(self, rows: Counter[str], status: str, finished: datetime | None = None) -> None:
        values = dict(rows=dict(sorted(rows.items())), status=status, finished_at=finished)
        try:
            with self.engine.begin() as conn:
                if self.written:
                    conn.execute(update(PurgeRow).where(PurgeRow.id == self.id).values(**values))
                else:
                    conn.execute(insert(PurgeRow).values(
                        id=self.id, started_at=self.started_at, **self.values, **values))
        except SQLAlchemyError as exc:
            raise store_error("cannot write the purge log", exc) from exc
        self.written = True


def purge_log(engine: Engine, limit: int = 50, conversation: str | None = None
              ) -> list[dict[str, Any]]:
    """The latest purges, newest first; with ``conversation``, those that named it."""
    q = select(PurgeRow).order_by(PurgeRow.started_at.desc())
    q = q.limit(limit) if conversation is None else q.where(PurgeRow.scope == CONVERSATION)
    key = conversation_key(conversation) if conversation is not None else None
    out = []
    with engine.connect() as conn:
        for row in conn.execute(q):
            if key is not None and key not in row.request.get("conversations", ()):
                continue
            out.append({"id": row.id, "started_at": _iso(row.started_at),
                        "finished_at": _iso(row.finished_at), "command": row.command,
                        "scope": row.scope, "request": row.request, "rows": row.rows,
                        "status": row.status})
            if len(out) >= limit:
                break
    return out


def _iso(when: datetime | None) -> str | None:
    if when is None:
        return None
    return (when.replace(tzinfo=UTC) if when.tzinfo is None else when).isoformat()
