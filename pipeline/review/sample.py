"""``chatmon review sample``: a batch of findings for people to judge, stratified over labels and
over flagged / unflagged findings.

Each stratum (label, flagged) gets an equal share of the batch; what a small stratum cannot
fill goes to the others. Inside a stratum the sample is uniform: finding ids are sha256 hashes,
so the ids that follow a seed-derived starting point (wrapping around) are a random draw that
is the same every time for the same store and seed, and needs no full scan in Python.

Only stored, redacted text goes out: the finding's excerpt, the turn's redacted text, and the
redacted turn(s) it answers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, exists, func, select

from pipeline.store.models import FindingRow, ReviewRow, TurnRow

MAX_TEXT_CHARS = 2000
Stratum = tuple[str, bool]


@dataclass(frozen=True)
class SampleFilter:
    detector: str | None = None
    label: str | None = None
    since: datetime | None = None
    tenant: str | None = None
    include_reviewed: bool = False

    def clauses(self) -> list[Any]:
        out: list[Any] = []
        if self.detector:
            out.append(FindingRow.detector == self.detector)
        if self.label:
            out.append(FindingRow.label == self.label)
        if self.since:
            out.append(FindingRow.ts >= self.since)
        if self.tenant is not None:
            out.append(FindingRow.tenant == self.tenant)
        if not self.include_reviewed:
            out.append(~exists().where(ReviewRow.finding_id == FindingRow.id))
        return out


def allocate(n: int, sizes: Mapping[Stratum, int]) -> dict[Stratum, int]:
    """Equal shares of ``n`` over the strata, capped by their sizes; what a full stratum cannot
    take is shared by the rest (earlier strata, in sorted order, take the odd ones)."""
    quota = dict.fromkeys(sizes, 0)
    remaining = n
    open_ = sorted(k for k, size in sizes.items() if size > 0)
    while remaining > 0 and open_:
        share, extra = divmod(remaining, len(open_))
        for i, key in enumerate(open_):
            take = min(share + (1 if i < extra else 0), sizes[key] - quota[key])
            quota[key] += take
            remaining -= take
        open_ = [k for k in open_ if quota[k] < sizes[k]]
    return quota


def strata(engine: Engine, flt: SampleFilter) -> dict[Stratum, int]:
    q = (select(FindingRow.label, FindingRow.flagged, func.count())
         .where(*flt.clauses()).group_by(FindingRow.label, FindingRow.flagged))
    with engine.connect() as conn:
        return {(r[0], bool(r[1])): int(r[2]) for r in conn.execute(q)}


def _draw(engine: Engine, stratum: Stratum, k: int, start: str,
          flt: SampleFilter) -> list[FindingRow]:
    label, flagged = stratum
    base = select(FindingRow).where(FindingRow.label == label,
                                    FindingRow.flagged.is_(flagged), *flt.clauses())
    with engine.connect() as conn:
        rows = list(conn.execute(base.where(FindingRow.id >= start)
                                 .order_by(FindingRow.id).limit(k)))
        if len(rows) < k:
            rows += conn.execute(base.where(FindingRow.id < start)
                                 .order_by(FindingRow.id).limit(k - len(rows)))
    return rows  # type: ignore[return-value]


def sample(engine: Engine, n: int, flt: SampleFilter, seed: int = 0) -> list[dict[str, Any]]:
    """Up to ``n`` review lines, grouped by label then flagged, as JSON-able dicts."""
    start = hashlib.sha256(f"chatmon-review-sample:{seed}".encode()).hexdigest()[:40]
    quota = allocate(n, strata(engine, flt))
    picked = [row for key in sorted(quota) if quota[key]
              for row in _draw(engine, key, quota[key], start, flt)]
    texts = turn_texts(engine, picked)
    return [_line(row, texts) for row in picked]


def turn_texts(engine: Engine, rows: list[Any]) -> dict[tuple[str, int], tuple[str, str]]:
    """(role, redacted text) of every turn of the sampled findings' conversations up to the
    finding's turn."""
    wanted: dict[str, int] = {}
    for r in rows:
        wanted[r.conversation_id] = max(wanted.get(r.conversation_id, -1), r.turn)
    out: dict[tuple[str, int], tuple[str, str]] = {}
    convs = list(wanted)
    with engine.connect() as conn:
        for i in range(0, len(convs), 200):
            q = select(TurnRow.conversation_id, TurnRow.turn, TurnRow.role,
                       TurnRow.text_redacted).where(TurnRow.conversation_id.in_(convs[i:i + 200]))
            for t in conn.execute(q):
                if t.turn <= wanted[t.conversation_id]:
                    out[(t.conversation_id, t.turn)] = (t.role, t.text_redacted)
    return out


def answered(texts: Mapping[tuple[str, int], tuple[str, str]], conversation: str, turn: int,
             role: str) -> str:
    """The turn(s) this one answers: the run of turns of the other role just before it."""
    parts: list[str] = []
    k = turn - 1
    while (conversation, k) in texts and texts[(conversation, k)][0] != role:
        parts.append(texts[(conversation, k)][1])
        k -= 1
    return "\n".join(reversed(parts))[-MAX_TEXT_CHARS:]


def _utc(ts: datetime | None) -> str | None:
    """Every stored time is UTC (``UTCDateTime``); a naive one is taken as UTC."""
    if ts is None:
        return None
    return (ts if ts.tzinfo else ts.replace(tzinfo=UTC)).isoformat()


def _line(row: Any, texts: Mapping[tuple[str, int], tuple[str, str]]) -> dict[str, Any]:
    text = texts.get((row.conversation_id, row.turn), (row.role, ""))[1]
    return {
        "finding_id": row.id, "label": row.label, "detector": row.detector,
        "score": round(float(row.score), 4), "flagged": bool(row.flagged),
        "suppressed_by": row.suppressed_by, "policy_version": row.policy_version,
        "tenant": row.tenant, "bot_id": row.bot_id, "conversation_id": row.conversation_id,
        "turn": row.turn, "role": row.role, "ts": _utc(row.ts),
        "excerpt": row.excerpt, "text": text[:MAX_TEXT_CHARS],
        "answers": answered(texts, row.conversation_id, row.turn, row.role),
        # For the reviewer to fill in: present true|false, rating 0-2 (empathy mechanisms).
        "present": None, "rating": None, "reviewer": None, "note": None,
    }
