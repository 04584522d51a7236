"""The hand-over from stage 1 (per conversation) to stage 2 (per bot): the stored, redacted
assistant turns of a batch, keyed by the repetition detector's per-bot state key so that each
bot's state lives in one partition of the ``phrases`` topic and of its Table's changelog."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC
from typing import Any

from sqlalchemy import Engine, select

from detectors.repetition.detector import state_key
from pipeline.ingest import events
from pipeline.ingest.events import Accepted, RawRecord
from pipeline.scoring.context import turn_from_dict
from pipeline.store.models import TurnRow
from pipeline.store.sink import store_error, turn_id

_FIELDS = ("conversation_id", "turn", "role", "ts", "bot_id", "model", "tenant", "lang")


def assistant_turn_ids(records: Sequence[RawRecord], max_text_chars: int) -> list[str]:
    out = []
    for rec in records:
        res = events.validate(rec, max_text_chars)
        if isinstance(res, Accepted) and res.turn.role == "assistant":
            out.append(turn_id(*res.turn.key))
    return out


def stored_phrases(engine: Engine, ids: Sequence[str]) -> list[tuple[bytes, bytes]]:
    """(key, value) messages for the stored turns among ``ids``; the text is the redacted text,
    so no raw PII crosses into stage 2 or its findings' excerpts. Turns already stored before a
    redelivery are forwarded again: stage 2 is idempotent."""
    if not ids:
        return []
    cols = [getattr(TurnRow, f) for f in _FIELDS]
    try:
        with engine.connect() as conn:
            rows = conn.execute(select(TurnRow.id, TurnRow.text_redacted, *cols)
                                .where(TurnRow.id.in_(list(ids)))).all()
    except Exception as exc:
        raise store_error("cannot read stored turns", exc) from exc
    order = {tid: i for i, tid in enumerate(ids)}
    out = []
    for row in sorted(rows, key=lambda r: order[r.id]):
        value = phrase_event(row._mapping)
        key = state_key(turn_from_dict({**value, "metadata": {}}))
        out.append((key.encode(), json.dumps(value, ensure_ascii=False).encode()))
    return out


def phrase_event(row: Any) -> dict[str, Any]:
    ts = row["ts"]
    if ts.tzinfo is None:  # SQLite returns naive UTC datetimes
        ts = ts.replace(tzinfo=UTC)
    value = {f: row[f] or None for f in ("bot_id", "model", "tenant", "lang")}
    value.update(conversation_id=row["conversation_id"], turn=row["turn"], role=row["role"],
                 text=row["text_redacted"], ts=ts.isoformat())
    return value
