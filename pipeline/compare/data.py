"""What ``chatmon compare`` reads from the store: per model, its assistant replies in the
selection, and for each reply its ``empathy.score``, its style profile (``style.length``
evidence) and which detectors flagged it. Ordered by turn id, so the statistics are
deterministic."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, func, or_, select

from pipeline.store.models import FindingRow, TurnRow

MEASURED = ("empathy.score", "style.length")


@dataclass(frozen=True, slots=True)
class Selection:
    """Which replies count: a bot, a tenant, a time range, only probe turns, a probe label."""

    bot: str | None = None
    tenant: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    probe_only: bool = False
    label: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"bot": self.bot, "tenant": self.tenant,
                "since": self.since.isoformat() if self.since else None,
                "until": self.until.isoformat() if self.until else None,
                "probe_only": self.probe_only or self.label is not None, "label": self.label}


@dataclass
class Reply:
    turn_id: str
    probe: dict[str, Any] | None
    empathy: float | None = None
    style: dict[str, Any] | None = None
    flagged: set[str] = field(default_factory=set)  # labels flagged by policy


def _where(column_of: Any, sel: Selection) -> list[Any]:
    out = [column_of.role == "assistant"]
    for col, value in (("bot_id", sel.bot), ("tenant", sel.tenant)):
        if value is not None:
            out.append(getattr(column_of, col) == value)
    if sel.since is not None:
        out.append(column_of.ts >= sel.since)
    if sel.until is not None:
        out.append(column_of.ts < sel.until)
    return out


def _keep(probe: Any, sel: Selection) -> bool:
    if not (sel.probe_only or sel.label is not None):
        return True
    return isinstance(probe, dict) and (sel.label is None or probe.get("label") == sel.label)


def load_replies(engine: Engine, models: Iterable[str], sel: Selection
                 ) -> dict[str, list[Reply]]:
    """model -> its replies in the selection (models without any map to an empty list)."""
    models = list(models)
    out: dict[str, dict[str, Reply]] = {m: {} for m in models}
    with engine.connect() as conn:
        turns = conn.execute(
            select(TurnRow.id, TurnRow.model, TurnRow.turn_metadata)
            .where(TurnRow.model.in_(models), *_where(TurnRow, sel)).order_by(TurnRow.id))
        for tid, model, meta in turns:
            probe = (meta or {}).get("probe")
            if _keep(probe, sel):
                out[model][tid] = Reply(tid, probe if isinstance(probe, dict) else None)
        rows = conn.execute(
            select(FindingRow.model, FindingRow.turn_id, FindingRow.label, FindingRow.score,
                   FindingRow.flagged, FindingRow.evidence)
            .where(FindingRow.model.in_(models), *_where(FindingRow, sel),
                   or_(FindingRow.label.in_(MEASURED), FindingRow.flagged.is_(True))))
        for model, tid, label, score, flagged, evidence in rows:
            reply = out[model].get(tid)
            if reply is None:
                continue
            if label == "empathy.score":
                reply.empathy = float(score)
            elif label == "style.length":
                reply.style = dict(evidence or {})
            if flagged:
                reply.flagged.add(label)
    return {m: list(replies.values()) for m, replies in out.items()}


def models_in(engine: Engine, sel: Selection, limit: int = 4) -> list[str]:
    """The models with the most replies in the selection, most first (ties by name)."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(TurnRow.model, func.count().label("n")).where(*_where(TurnRow, sel))
            .group_by(TurnRow.model).order_by(func.count().desc(), TurnRow.model))
        return [m for m, _ in rows if m][:limit]
