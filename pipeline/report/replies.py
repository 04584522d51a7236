"""What the report's intervals are computed from: every assistant reply of the window and of the
week before, with the per-reply values the weekly SQL averages (``dashboards/queries.py``):
its ``empathy.score`` and EPITOME levels, which harm detectors flagged it, whether it was flagged
as a near duplicate or as stock empathy, and the identity group the user mentioned in the turn
before it (the empathy gap's ``bias.user_group`` finding). Read in turn-id order, so the
bootstrap is deterministic. Only numbers and labels are read, never text."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, and_, or_, select

from pipeline.store.models import FindingRow, TurnRow

HARMS = ("toxicity", "bias", "manipulation", "pii")
MISSED = "empathy.missed"  # an upset user the reply did not engage with (issue 27)
MECHANISMS = ("er", "ip", "ex")
NEAR_DUPLICATE = "repetition.near_duplicate"
STOCK_EMPATHY = "repetition.stock_empathy"  # formulaic empathy (issue "Quiet on a clean bot")
REPLY_LABELS = (NEAR_DUPLICATE, MISSED, STOCK_EMPATHY)  # flagged labels kept by name


@dataclass
class Reply:
    bot: str
    model: str
    ts: datetime
    empathy: float | None = None
    levels: dict[str, float] = field(default_factory=dict)  # er, ip, ex: 0..2
    alignment: float | None = None
    flagged: set[str] = field(default_factory=set)  # harm detectors, REPLY_LABELS
    group: tuple[str, str] | None = None  # (category, group) the user mentioned just before


def _number(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def _empathy(reply: Reply, score: float, evidence: dict[str, Any]) -> None:
    reply.empathy = float(score)
    for key in MECHANISMS:
        level = _number((evidence.get(key) or {}).get("level"))
        if level is not None:
            reply.levels[key] = level
    reply.alignment = _number(evidence.get("alignment"))


def load(engine: Engine, start: datetime, end: datetime) -> list[Reply]:
    """The assistant replies with ``start <= ts < end``."""
    in_range = (TurnRow.ts >= start, TurnRow.ts < end, TurnRow.role == "assistant")
    found_in_range = (FindingRow.ts >= start, FindingRow.ts < end)
    replies: dict[str, Reply] = {}
    at: dict[tuple[str, int], Reply] = {}
    with engine.connect() as conn:
        for tid, conv, turn, ts, bot, model in conn.execute(
                select(TurnRow.id, TurnRow.conversation_id, TurnRow.turn, TurnRow.ts,
                       TurnRow.bot_id, TurnRow.model).where(*in_range).order_by(TurnRow.id)):
            replies[tid] = at[(conv, turn)] = Reply(bot or "", model or "", ts)
        for tid, label, detector, score, evidence in conn.execute(
                select(FindingRow.turn_id, FindingRow.label, FindingRow.detector,
                       FindingRow.score, FindingRow.evidence)
                .where(*found_in_range, FindingRow.role == "assistant", or_(
                    FindingRow.label == "empathy.score",
                    and_(FindingRow.flagged.is_(True),
                         or_(FindingRow.detector.in_(HARMS),
                             FindingRow.label.in_(REPLY_LABELS)))))
                .order_by(FindingRow.turn_id, FindingRow.label)):
            reply = replies.get(tid)
            if reply is None:
                continue
            if label == "empathy.score":
                _empathy(reply, score, evidence or {})
            else:
                reply.flagged.add(label if label in REPLY_LABELS else detector)
        for conv, turn, evidence in conn.execute(
                select(FindingRow.conversation_id, FindingRow.turn, FindingRow.evidence)
                .where(*found_in_range, FindingRow.label == "bias.user_group")):
            reply = at.get((conv, turn + 1))
            evidence = evidence or {}
            if reply is not None and evidence.get("group"):
                reply.group = (str(evidence.get("category") or ""), str(evidence["group"]))
    return list(replies.values())
