"""Which stored replies the judge reads: a deterministic sample by a hash of the turn key, plus
every reply an always-judge rule matches.

Rules are written over any classifier label, its score or its flag, so they outlive changes to
what a detector flags: ``manipulation.* flagged``, ``empathy.score < 0.3``,
``empathy.missed flagged``. A label ending in ``.*`` matches every label of that detector.
"""

from __future__ import annotations

import hashlib
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, select, tuple_

from pipeline.review.sample import answered, turn_texts
from pipeline.store.models import FindingRow, TurnRow

JUDGE = "judge"
DEFAULT_RULES = ("manipulation.* flagged", "empathy.score < 0.3", "empathy.missed flagged")
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_RULE = re.compile(r"^\s*([a-z][a-z0-9_]*\.(?:\*|[a-z0-9_]+))\s+"
                   r"(flagged|(<=|>=|<|>)\s*([0-9]*\.?[0-9]+))\s*$")


@dataclass(frozen=True, slots=True)
class Classified:
    """A classifier finding of the turn, as rules and agreement see it."""

    label: str
    score: float
    flagged: bool
    level: int | None  # evidence.level, where the detector rates levels (empathy mechanisms)


@dataclass(frozen=True, slots=True)
class Rule:
    text: str
    label: str
    op: str | None = None  # None: "flagged"
    value: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Rule:
        m = _RULE.match(text)
        if not m:
            raise ValueError(f"not a rule: {text!r}; write 'LABEL flagged' or 'LABEL < NUMBER' "
                             "(also <=, >, >=), e.g. 'manipulation.* flagged', "
                             "'empathy.score < 0.3'")
        label, _, op, value = m.groups()
        return cls(" ".join(text.split()), label, op, float(value) if value else 0.0)

    def _covers(self, label: str) -> bool:
        if self.label.endswith(".*"):
            return label.startswith(self.label[:-1])
        return label == self.label

    def matches(self, found: Sequence[Classified]) -> bool:
        for f in found:
            if not self._covers(f.label):
                continue
            if (f.flagged if self.op is None else _OPS[self.op](f.score, self.value)):
                return True
        return False


def sample_point(conversation_id: str, turn: int) -> float:
    """Where the turn falls in [0, 1): the same for every run, mode and worker."""
    digest = hashlib.sha256(f"chatmon-judge\x1f{conversation_id}\x1f{turn}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True, slots=True)
class Candidate:
    """A stored assistant reply the judge may read: redacted text only."""

    turn_id: str
    conversation_id: str
    turn: int
    ts: datetime
    stored_at: datetime
    bot_id: str
    model: str
    tenant: str
    lang: str | None
    text: str
    answers: str  # the redacted user turn(s) it answers
    found: tuple[Classified, ...] = ()
    why: tuple[str, ...] = field(default=())  # "sample" and/or the rules that matched

    def classifier(self, label: str) -> Classified | None:
        return next((f for f in self.found if f.label == label), None)


def why_judged(conversation_id: str, turn: int, found: Sequence[Classified], rate: float,
               rules: Sequence[Rule]) -> tuple[str, ...]:
    out = ["sample"] if sample_point(conversation_id, turn) < rate else []
    return tuple(out + [r.text for r in rules if r.matches(found)])


def _level(evidence: Any) -> int | None:
    level = evidence.get("level") if isinstance(evidence, dict) else None
    return level if isinstance(level, int) and not isinstance(level, bool) else None


def classified(engine: Engine, turn_ids: Sequence[str]) -> dict[str, list[Classified]]:
    out: dict[str, list[Classified]] = {t: [] for t in turn_ids}
    with engine.connect() as conn:
        for i in range(0, len(turn_ids), 500):
            q = (select(FindingRow.turn_id, FindingRow.label, FindingRow.score,
                        FindingRow.flagged, FindingRow.evidence)
                 .where(FindingRow.turn_id.in_(turn_ids[i:i + 500]),
                        FindingRow.detector != JUDGE)
                 .order_by(FindingRow.turn_id, FindingRow.label, FindingRow.id))
            for r in conn.execute(q):
                out[r.turn_id].append(Classified(r.label, float(r.score), bool(r.flagged),
                                                 _level(r.evidence)))
    return out


@dataclass(frozen=True)
class Window:
    """Assistant turns by turn time (``since``/``until``) or after a follow cursor."""

    since: datetime | None = None
    until: datetime | None = None
    after: tuple[datetime, str] | None = None  # (ts or stored_at, turn id), exclusive
    # Follow mode: in stored order, only turns stored before this (settled) time.
    stored_before: datetime | None = None

    @property
    def by_stored(self) -> bool:
        return self.stored_before is not None


def assistant_turns(engine: Engine, window: Window, limit: int) -> list[Any]:
    """The next ``limit`` stored assistant turns: in stored order after a cursor, else by
    turn time (then id) from ``since``; ``after`` pages through either."""
    q = select(TurnRow).where(TurnRow.role == "assistant")
    if window.since is not None:
        q = q.where(TurnRow.ts >= window.since)
    if window.until is not None:
        q = q.where(TurnRow.ts < window.until)
    if window.stored_before is not None:
        q = q.where(TurnRow.stored_at < window.stored_before)
    order = (TurnRow.stored_at, TurnRow.id) if window.by_stored else (TurnRow.ts, TurnRow.id)
    if window.after is not None:
        q = q.where(tuple_(*order) > tuple_(*window.after))
    with engine.connect() as conn:
        return list(conn.execute(q.order_by(*order).limit(limit)))


def candidates(engine: Engine, rows: Sequence[Any], rate: float,
               rules: Sequence[Rule]) -> list[Candidate]:
    """The rows the judge should read (sampled or matched by a rule), with their context."""
    found = classified(engine, [r.id for r in rows])
    picked = [(r, why) for r in rows
              if (why := why_judged(r.conversation_id, r.turn, found[r.id], rate, rules))]
    texts = turn_texts(engine, [r for r, _ in picked]) if picked else {}
    return [Candidate(r.id, r.conversation_id, r.turn, r.ts, r.stored_at, r.bot_id, r.model,
                      r.tenant, r.lang, r.text_redacted,
                      answered(texts, r.conversation_id, r.turn, "assistant"),
                      tuple(found[r.id]), why) for r, why in picked]


def turns_by_id(engine: Engine, ids: Sequence[str]) -> list[Any]:
    """The stored assistant turns among ``ids``, in the order given."""
    rows: dict[str, Any] = {}
    with engine.connect() as conn:
        for i in range(0, len(ids), 500):
            q = select(TurnRow).where(TurnRow.id.in_(ids[i:i + 500]),
                                      TurnRow.role == "assistant")
            rows.update({r.id: r for r in conn.execute(q)})
    return [rows[i] for i in dict.fromkeys(ids) if i in rows]
