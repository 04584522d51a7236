"""The report's comparisons as they were computed before issue 41, from every assistant reply of
the two weeks (``pipeline/report/replies.py`` and ``comparisons.py`` as they were, and the
bootstrap of ``chatmon compare``): kept here, not in the product, so that a test can hold the
rollup-based report to the same numbers (tests/report/test_rollup_numbers.py).

One change from the old code: a reply whose user turn mentions two groups counts for each (the
old code kept whichever ``bias.user_group`` finding its unordered query returned last), as the
rollup-based gap does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Engine, and_, or_, select

from pipeline.compare.data import Selection, models_in
from pipeline.compare.stats import bootstrap_diff, bootstrap_mean
from pipeline.compare.view import build
from pipeline.report.estimates import Groups, Row, _diff, rates
from pipeline.store.models import FindingRow, TurnRow

HARMS = ("toxicity", "bias", "manipulation", "pii")
MISSED, NEAR_DUPLICATE = "empathy.missed", "repetition.near_duplicate"
STOCK_EMPATHY = "repetition.stock_empathy"
REPLY_LABELS = (NEAR_DUPLICATE, MISSED, STOCK_EMPATHY)
K, R = TypeVar("K"), TypeVar("R")


@dataclass
class Reply:
    bot: str
    model: str
    ts: datetime
    empathy: float | None = None
    levels: dict[str, float] = field(default_factory=dict)
    alignment: float | None = None
    flagged: set[str] = field(default_factory=set)
    groups: set[tuple[str, str]] = field(default_factory=set)


def _number(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def load(engine: Engine, start: datetime, end: datetime) -> list[Reply]:
    in_range = (TurnRow.ts >= start, TurnRow.ts < end, TurnRow.role == "assistant")
    found = (FindingRow.ts >= start, FindingRow.ts < end)
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
                .where(*found, FindingRow.role == "assistant", or_(
                    FindingRow.label == "empathy.score",
                    and_(FindingRow.flagged.is_(True),
                         or_(FindingRow.detector.in_(HARMS),
                             FindingRow.label.in_(REPLY_LABELS)))))
                .order_by(FindingRow.turn_id, FindingRow.label)):
            reply = replies.get(tid)
            if reply is None:
                continue
            if label == "empathy.score":
                evidence = evidence or {}
                reply.empathy = float(score)
                for key in ("er", "ip", "ex"):
                    level = _number((evidence.get(key) or {}).get("level"))
                    if level is not None:
                        reply.levels[key] = level
                reply.alignment = _number(evidence.get("alignment"))
            else:
                reply.flagged.add(label if label in REPLY_LABELS else detector)
        for conv, turn, evidence in conn.execute(
                select(FindingRow.conversation_id, FindingRow.turn, FindingRow.evidence)
                .where(*found, FindingRow.label == "bias.user_group")):
            reply = at.get((conv, turn + 1))
            evidence = evidence or {}
            if reply is not None and evidence.get("group"):
                reply.groups.add((str(evidence.get("category") or ""), str(evidence["group"])))
    return list(replies.values())


def split(items: Iterable[R], key: Callable[[R], K]) -> dict[K, list[R]]:
    out: dict[K, list[R]] = defaultdict(list)
    for item in items:
        out[key(item)].append(item)
    return dict(sorted(out.items(), key=lambda kv: str(kv[0])))


def bot(r: Reply) -> str:
    return r.bot or "(no bot)"


def bot_model(r: Reply) -> str:
    return f"{bot(r)} / {r.model or '(no model)'}"


def means(now: Mapping[str, Sequence[float]], before: Mapping[str, Sequence[float]],
          min_replies: int) -> Groups:
    rows, too_few = [], []
    for key, values in now.items():
        if len(values) < min_replies:
            too_few.append((key, len(values)))
            continue
        earlier = before.get(key, ())
        if len(earlier) < min_replies:
            rows.append(Row(key, bootstrap_mean(values).as_dict()))
            continue
        rows.append(Row(key, bootstrap_mean(values).as_dict(), bootstrap_mean(earlier).as_dict(),
                        _diff(bootstrap_diff(earlier, values))))
    return Groups(rows, too_few, min_replies)


def comparisons(engine: Engine, start: datetime, end: datetime, before: datetime,
                min_replies: int = 20) -> dict[str, Any]:
    """The report's data keys that read replies, computed the old way."""
    replies = load(engine, before, end)
    now = [r for r in replies if r.ts >= start]
    old = [r for r in replies if r.ts < start]

    def mean(key: Callable[[Reply], str], value: Callable[[Reply], float | None],
             with_before: bool = True) -> Groups:
        def values(rs: list[Reply]) -> dict[str, list[float]]:
            return {k: [v for r in g if (v := value(r)) is not None]
                    for k, g in split(rs, key).items()}
        return means(values(now), values(old) if with_before else {}, min_replies)

    def rate(event: Callable[[Reply], bool]) -> Groups:
        def counts(rs: list[Reply]) -> dict[str, tuple[int, int]]:
            return {k: (sum(event(r) for r in g), len(g)) for k, g in split(rs, bot).items()}
        return rates(counts(now), counts(old), min_replies)

    def flagged(name: str) -> Callable[[Reply], bool]:
        return lambda r: name in r.flagged

    def level(m: str) -> Callable[[Reply], float | None]:
        return lambda r: r.levels.get(m)

    out: dict[str, Any] = {
        "empathy": mean(bot_model, lambda r: r.empathy),
        "missed": rate(flagged(MISSED)),
        "bot_empathy": mean(bot, lambda r: r.empathy),
        "mechanisms": {**{m: mean(bot_model, level(m), False) for m in ("er", "ip", "ex")},
                       "alignment": mean(bot_model, lambda r: r.alignment, False)},
        "harms": {h: rate(flagged(h)) for h in HARMS},
        "stock_empathy": rate(flagged(STOCK_EMPATHY)),
        "near_duplicates": rate(flagged(NEAR_DUPLICATE)),
        "gap": gap(now, min_replies),
        "replies": {k: len(g) for k, g in split(now, bot).items()},
    }
    sel = Selection(since=start, until=end)
    models = models_in(engine, sel, limit=4)
    out["models"] = build(engine, models, sel, require_replies=False) if len(models) > 1 else None
    return out


def gap(now: list[Reply], min_replies: int) -> Groups:
    rows, too_few = [], []
    for name, replies in split(now, bot).items():
        scored = [(r.groups, r.empathy) for r in replies if r.empathy is not None]
        for group in sorted({g for gs, _ in scored for g in gs}):
            inside = [v for gs, v in scored if group in gs]
            rest = [v for gs, v in scored if group not in gs]
            key = f"{group[1]} ({group[0]}) · {name}"
            if len(inside) < min_replies or len(rest) < min_replies:
                too_few.append((key, len(inside)))
                continue
            rows.append(Row(key, bootstrap_mean(inside).as_dict(), bootstrap_mean(rest).as_dict(),
                            _diff(bootstrap_diff(rest, inside))))
    return Groups(rows, too_few, min_replies)


