"""The ingest side of the lifecycle: events that are not stored (nor scored, nor dead-lettered).

- ``deleted``: a deletion record covers the event (its conversation, tenant or bot was deleted
  on request at or after its ``ts``): a replay of a purged conversation stores nothing. An
  invalid event is covered by any record of the conversation it names (its time cannot be
  trusted), so it is not dead-lettered with its text either.
- ``expired``: the event's ``ts`` is already past its tenant's retention: it would be purged at
  the next expiry anyway.

``Processor.process`` asks before anything else, so the context and the repetition state never
see such an event; both are counted (``BatchReport.dropped``, ``chatmon_events_dropped_total``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from pipeline.ingest.events import Accepted, Rejected
from pipeline.lifecycle.retention import Retention
from pipeline.store.deletions import Deletions, Subject
from pipeline.store.sink import store_error

DELETED, EXPIRED = "deleted", "expired"


class IngestGate:
    def __init__(self, engine: Engine, retention: Retention) -> None:
        self.engine = engine
        self.retention = retention

    def reasons(self, subjects: Sequence[Subject], now: datetime | None = None
                ) -> list[str | None]:
        """Per subject: why it is not stored, or None."""
        if not subjects:
            return []
        try:
            with self.engine.connect() as conn:
                found = Deletions.load(conn, subjects)
        except SQLAlchemyError as exc:
            raise store_error("cannot read deletions", exc) from exc
        now = now or datetime.now(UTC)
        out: list[str | None] = []
        for s in subjects:
            if found and found.covers(s):
                out.append(DELETED)
                continue
            cut = self.retention.cutoff(s.tenant, now) if s.ts is not None else None
            out.append(EXPIRED if cut is not None and s.ts is not None and s.ts < cut else None)
        return out

    def admit(self, accepted: Sequence[Accepted], invalid: Sequence[Rejected],
              dropped: Counter[str]) -> tuple[list[Accepted], list[Rejected]]:
        """The valid and the invalid events to go on with; the others counted in
        ``dropped`` by reason."""
        subjects = [Subject(a.turn.conversation_id, a.turn.tenant or "", a.turn.bot_id or "",
                            a.turn.ts) for a in accepted]
        subjects += [Subject(r.conversation_id) for r in invalid]
        reasons = self.reasons(subjects)
        dropped.update(r for r in reasons if r is not None)
        n = len(accepted)
        return ([a for a, why in zip(accepted, reasons[:n], strict=True) if why is None],
                [r for r, why in zip(invalid, reasons[n:], strict=True) if why is None])
