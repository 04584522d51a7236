"""Read-side queries used by the CLI."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from pipeline.store.models import FindingRow

FINDING_COLUMNS = ("ts", "conversation_id", "turn", "role", "bot_id", "model", "tenant", "detector",
                   "detector_version", "label", "score", "flagged", "span_start", "span_end",
                   "excerpt", "evidence")


def recent_findings(
    engine: Engine,
    *,
    detector: str | None = None,
    label: str | None = None,
    bot: str | None = None,
    model: str | None = None,
    conversation: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    flagged_only: bool = False,
    limit: int = 50,
) -> list[dict[str, Any]]:
    """Most recent findings first (by turn time), filtered."""
    q = select(FindingRow)
    filters: Sequence[Any] = [
        FindingRow.detector == detector if detector else None,
        FindingRow.label == label if label else None,
        FindingRow.bot_id == bot if bot else None,
        FindingRow.model == model if model else None,
        FindingRow.conversation_id == conversation if conversation else None,
        FindingRow.ts >= since if since else None,
        FindingRow.ts < until if until else None,
        FindingRow.flagged.is_(True) if flagged_only else None,
    ]
    for f in filters:
        if f is not None:
            q = q.where(f)
    q = q.order_by(FindingRow.ts.desc(), FindingRow.conversation_id, FindingRow.turn,
                   FindingRow.label).limit(limit)
    with Session(engine) as session:
        rows = session.scalars(q).all()
    out = []
    for row in rows:
        d = {c: getattr(row, c) for c in FINDING_COLUMNS}
        d["ts"] = row.ts.isoformat() if row.ts else None
        out.append(d)
    return out
