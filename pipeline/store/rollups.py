"""Rollups: what the stored rows add up to per hour, written by the sink with the rows.

The dashboards' trend panels and the report read these tables instead of scanning findings
(issue 41; docs/privacy.md#rollups-counts-written-with-the-rows):

- ``rollups``: per hour (``bucket``), tenant, bot, model and role; by (detector, label,
  measure): ('', '', '') turns and turns with a flagged finding; (d, l, '') findings, flagged
  findings, sum and sum of squares of scores; (d, l, 'turns') and (d, '', 'turns') turns with
  a finding and with a flagged finding of the label / detector; (d, l, <key>) an evidence
  number (:data:`EVIDENCE_NUMBERS`): how many findings carry it, its sum and sum of squares.
- ``phrase_rollups``: the repeated phrases and tactic templates (:data:`PHRASES`).
- ``conversation_rollups``: per conversation, for the worst-conversations drill-down.
- ``group_rollups``: the empathy of the replies that answer a user group's mention (a
  ``bias.user_group`` finding at turn k, an ``empathy.score`` one at k + 1): :func:`group_pairs`.

``phrase_rollups`` and ``group_rollups`` count per day (UTC), not per hour (migration 0013):
their panels sum every row of a range, and their keys (phrases, user groups) are many, so
hourly rows kept growing with the traffic (from 1M to 10M turns 8x and 3.5x, against 1.2x for
``rollups``); per day they stop growing once a bot says its phrases, and hears its users'
groups, every day. Their panels and the report count whole days.

:func:`aggregate` is pure (rows in, rollup rows out); :func:`upsert` adds them. The sink calls
both with the rows its ``INSERT ... ON CONFLICT DO NOTHING ... RETURNING`` newly stored, in
the same transaction, so a replay adds nothing. A finding added later to a stored turn (the
Kafka workers' second stage, the judge) counts the turn in a 'turns' measure only if the
turn had no finding (no flagged finding) of that label or detector before: ``prior``.
Deletion on request calls :func:`subtract` with what ``DELETE ... RETURNING`` handed back.

A pair of the empathy gap has its sides in two turns, which may be written (or deleted) in
different transactions: :func:`group_pairs` counts the pairs with at least one side among the
rows a transaction changed, the other side among them or still stored (read after the change,
by the findings' (conversation_id, turn) index within the conversation's time span), so each
pair is added once, when its second side is stored, and subtracted once, when its first side
goes. Turns are written whole with their stage-1 findings (bias and empathy among them), so a
turn new in a batch has nothing stored to look up.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Table, delete, select, text, tuple_

from pipeline.store import pgjson
from pipeline.store.models import (
    ConversationRollupRow,
    FindingRow,
    GroupRollupRow,
    PhraseRollupRow,
    RollupRow,
)

HARM_DETECTORS = frozenset({"toxicity", "bias", "manipulation", "pii"})
EMPATHY_SCORE = "empathy.score"
USER_GROUP = "bias.user_group"
TURNS = "turns"
# label -> (measure, evidence path): numbers the panels average (EPITOME levels, alignment,
# engagement, the repetition window's diversity).
EVIDENCE_NUMBERS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    EMPATHY_SCORE: (("er", ("er", "level")), ("ip", ("ip", "level")), ("ex", ("ex", "level")),
                    ("alignment", ("alignment",)), ("cause_addressed", ("cause_addressed",))),
    "repetition.window": (("distinct_2", ("distinct_2",)),
                          ("top_opener_share", ("top_opener_share",))),
}
# label -> the evidence field holding its (already redacted) phrase.
PHRASES = {"repetition.stock_empathy": "phrase", "repetition.stock_phrase": "phrase",
           "repetition.template_sequence": "sequence"}

ROLLUP_KEY = ("bucket", "tenant", "bot_id", "model", "role", "detector", "label", "measure")
PHRASE_KEY = ("bucket", "tenant", "bot_id", "label", "phrase_key")
GROUP_KEY = ("bucket", "tenant", "bot_id", "model", "category", "user_group")
# The columns a purge's DELETE ... RETURNING hands back for subtract().
TURN_COLUMNS = ("id", "conversation_id", "turn", "ts", "tenant", "bot_id", "model", "role")
FINDING_COLUMNS = ("id", "turn_id", "conversation_id", "turn", "ts", "tenant", "bot_id", "model",
                   "role", "detector", "label", "score", "flagged", "evidence")
# A reply and the group its user turn mentions: (empathy.score finding, category, group).
Pair = tuple[Mapping[str, Any], str, str]


@dataclass
class Rollups:
    rollups: list[dict[str, Any]] = field(default_factory=list)
    phrases: list[dict[str, Any]] = field(default_factory=list)
    conversations: list[dict[str, Any]] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.rollups or self.phrases or self.conversations or self.groups)


# What a turn already had before a write: (detector, label, flagged) of its stored findings.
Prior = Mapping[str, Iterable[tuple[str, str, bool]]]


def hour_of(ts: datetime) -> datetime:
    """The hour start (UTC) of ``ts``; a naive time is taken as UTC."""
    utc = ts.astimezone(UTC) if ts.tzinfo else ts.replace(tzinfo=UTC)
    return utc.replace(minute=0, second=0, microsecond=0)


def day_of(ts: datetime) -> datetime:
    """The day start (UTC) of ``ts``: the bucket of ``phrase_rollups`` and ``group_rollups``."""
    return hour_of(ts).replace(hour=0)


def number(evidence: Any, path: Sequence[str]) -> float | None:
    """The number at ``path`` in the evidence, None where it is missing or not a number."""
    value = evidence
    for part in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def aggregate(turns: Iterable[Mapping[str, Any]], findings: Iterable[Mapping[str, Any]],
              prior: Prior | None = None, pairs: Iterable[Pair] = ()) -> Rollups:
    """The rollups of newly stored ``turns`` and ``findings`` (row dicts as the sink writes
    them), sorted by key; ``prior``: what the findings' turns had before (turns not in
    ``turns``; a turn missing from it had nothing); ``pairs``: from :func:`group_pairs`."""
    acc: dict[tuple[Any, ...], list[float]] = {}

    def add(key: tuple[Any, ...], n: float, flagged: float, total: float = 0.0,
            total_sq: float = 0.0) -> None:
        cell = acc.get(key)
        if cell is None:
            acc[key] = [n, flagged, total, total_sq]
        else:
            cell[0] += n
            cell[1] += flagged
            cell[2] += total
            cell[3] += total_sq

    hours: dict[datetime, datetime] = {}

    def hour(ts: datetime) -> datetime:
        h = hours.get(ts)
        if h is None:
            h = hours[ts] = hour_of(ts)
        return h

    def day(ts: datetime) -> datetime:  # day_of(ts), from the hour cache
        return hour(ts).replace(hour=0)

    for t in turns:
        add((hour(t["ts"]), t["tenant"], t["bot_id"], t["model"], t["role"], "", "", ""), 1, 0)
    by_turn: dict[str, list[Mapping[str, Any]]] = {}
    phrases: dict[tuple[Any, ...], list[Any]] = {}
    conversations: dict[str, list[Any]] = {}
    for f in findings:
        by_turn.setdefault(f["turn_id"], []).append(f)
        dims = (hour(f["ts"]), f["tenant"], f["bot_id"], f["model"], f["role"])
        score, flagged = float(f["score"]), bool(f["flagged"])
        add((*dims, f["detector"], f["label"], ""), 1, int(flagged), score, score * score)
        for measure, path in EVIDENCE_NUMBERS.get(f["label"], ()):
            v = number(f["evidence"], path)
            if v is not None:
                add((*dims, f["detector"], f["label"], measure), 1, 0, v, v * v)
        if f["label"] in PHRASES:
            _phrase(phrases, f, day(f["ts"]))
        _conversation(conversations, f)
    for tid, rows in by_turn.items():
        _turn_measures(add, rows, (prior or {}).get(tid, ()))
    groups: dict[tuple[Any, ...], list[float]] = {}
    for reply, category, group in pairs:
        key = (day(reply["ts"]), reply["tenant"], reply["bot_id"], reply["model"], category,
               group)
        score = float(reply["score"])
        cell = groups.setdefault(key, [0, 0.0, 0.0])
        cell[0] += 1
        cell[1] += score
        cell[2] += score * score
    return Rollups(
        [dict(zip(ROLLUP_KEY, k, strict=True), n=int(c[0]), flagged=int(c[1]), total=c[2],
              total_sq=c[3]) for k, c in sorted(acc.items())],
        [dict(zip(PHRASE_KEY, k, strict=True), phrase=p[0], n=p[1], max_share=p[2],
              max_replies=p[3]) for k, p in sorted(phrases.items())],
        [dict(conversation_id=cid, tenant=c[0], bot_id=c[1], started=c[2], last=c[3],
              harm_flagged=c[4], empathy_n=c[5], empathy_total=c[6], repetition_flagged=c[7])
         for cid, c in sorted(conversations.items())],
        [dict(zip(GROUP_KEY, k, strict=True), n=int(c[0]), total=c[1], total_sq=c[2])
         for k, c in sorted(groups.items())])


def group_pairs(conn: Connection, changed: Sequence[Mapping[str, Any]],
                whole: Iterable[tuple[str, int]] = ()) -> list[Pair]:
    """The empathy-gap pairs that ``changed`` (findings this transaction just stored, or just
    deleted) make or break: a reply's ``empathy.score`` among them with each group its user
    turn's ``bias.user_group`` findings (among them or stored) mention, and a group first (or
    last) mentioned on a turn by them with the stored reply to it. A reply counts once per
    group, however many findings mention it. Read after the change; ``whole``:
    (conversation_id, turn) of turns all of whose findings are among ``changed`` (new or
    deleted turns), which are not looked up. A conversation without a
    ``conversation_rollups`` row has nothing stored."""
    replies = [f for f in changed if f["label"] == EMPATHY_SCORE]
    said = [f for f in changed if f["label"] == USER_GROUP]
    if not (replies or said):
        return []
    new: dict[tuple[str, int], set[tuple[str, str]]] = {}
    for f in said:
        new.setdefault((f["conversation_id"], f["turn"]), set()).add(_group_of(f))
    wanted = ({(f["conversation_id"], f["turn"] - 1) for f in replies}
              | {(f["conversation_id"], f["turn"] + d) for f in said for d in (0, 1)})
    wanted -= set(whole)
    old: dict[tuple[str, int], set[tuple[str, str]]] = {}
    later: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for f in _stored(conn, wanted, {f["id"] for f in changed}) if wanted else ():
        key = (f["conversation_id"], f["turn"])
        if f["label"] == USER_GROUP:
            old.setdefault(key, set()).add(_group_of(f))
        else:
            later.setdefault(key, []).append(f)
    out: list[Pair] = []
    for e in replies:
        key = (e["conversation_id"], e["turn"] - 1)
        out += [(e, *g) for g in sorted(new.get(key, set()) | old.get(key, set()))]
    for key, groups in sorted(new.items()):
        first = sorted(groups - old.get(key, set()))
        out += [(e, *g) for e in later.get((key[0], key[1] + 1), ()) for g in first]
    return out


def _group_of(mention: Mapping[str, Any]) -> tuple[str, str]:
    evidence = mention["evidence"] if isinstance(mention["evidence"], Mapping) else {}
    return str(evidence.get("category") or ""), str(evidence.get("group") or "")


_PAIR_COLUMNS = ("id", "conversation_id", "turn", "ts", "tenant", "bot_id", "model", "label",
                 "score", "evidence")


def _stored(conn: Connection, wanted: set[tuple[str, int]], changed: set[str]
            ) -> list[dict[str, Any]]:
    """The stored mentions and empathy scores of the turns ``wanted`` (not the ids
    ``changed``), read within their conversations' time spans (``conversation_rollups``), so
    that PostgreSQL reads only the day partitions of those spans."""
    c = ConversationRollupRow.__table__.c  # type: ignore[attr-defined]
    f = FindingRow.__table__.c  # type: ignore[attr-defined]
    conversations = sorted({cid for cid, _ in wanted})
    spans: dict[str, tuple[datetime, datetime]] = {}
    for i in range(0, len(conversations), 500):
        for cid, lo, hi in conn.execute(select(c.conversation_id, c.started, c["last"]).where(
                c.conversation_id.in_(conversations[i:i + 500]))):
            spans[cid] = (lo, hi)
    keys = sorted(k for k in wanted if k[0] in spans)
    out: list[dict[str, Any]] = []
    for i in range(0, len(keys), 500):
        chunk = keys[i:i + 500]
        lo = min(spans[cid][0] for cid, _ in chunk)
        hi = max(spans[cid][1] for cid, _ in chunk)
        rows = conn.execute(select(*(f[k] for k in _PAIR_COLUMNS)).where(
            f.label.in_((USER_GROUP, EMPATHY_SCORE)), f.ts >= lo, f.ts <= hi,
            tuple_(f.conversation_id, f.turn).in_(chunk)))
        out += [dict(zip(_PAIR_COLUMNS, r, strict=True)) for r in rows if r[0] not in changed]
    return out


def _turn_measures(add: Any, rows: list[Mapping[str, Any]],
                   before: Iterable[tuple[str, str, bool]]) -> None:
    """One turn's 'turns' measures: what its new findings have that its earlier ones had not."""
    had_labels: set[tuple[str, str]] = set()
    had_flagged_labels: set[tuple[str, str]] = set()
    for detector, label, flagged in before:
        had_labels.add((detector, label))
        if flagged:
            had_flagged_labels.add((detector, label))
    first = rows[0]
    dims = (hour_of(first["ts"]), first["tenant"], first["bot_id"], first["model"],
            first["role"])
    labels = {(f["detector"], f["label"]) for f in rows}
    flagged_labels = {(f["detector"], f["label"]) for f in rows if f["flagged"]}
    new_flagged = flagged_labels - had_flagged_labels
    for key in labels:
        new, new_flag = key not in had_labels, key in new_flagged
        if new or new_flag:
            add((*dims, *key, TURNS), int(new), int(new_flag))
    had_detectors = {d for d, _ in had_labels}
    had_flagged_detectors = {d for d, _ in had_flagged_labels}
    flagged_detectors = {d for d, _ in flagged_labels}
    for d in {d for d, _ in labels}:
        new = d not in had_detectors
        new_flag = d in flagged_detectors and d not in had_flagged_detectors
        if new or new_flag:
            add((*dims, d, "", TURNS), int(new), int(new_flag))
    if flagged_labels and not had_flagged_labels:
        add((*dims, "", "", ""), 0, 1)


def phrase_key(phrase: str) -> str:
    """``pipeline.store.sink.stable_id(phrase)`` (the migration's backfill computes the same)."""
    return hashlib.sha256(phrase.encode()).hexdigest()[:40]


def _phrase(acc: dict[tuple[Any, ...], list[Any]], f: Mapping[str, Any], bucket: datetime
            ) -> None:
    evidence = f["evidence"] if isinstance(f["evidence"], Mapping) else {}
    phrase = evidence.get(PHRASES[f["label"]])
    if not isinstance(phrase, str):
        return
    key = (bucket, f["tenant"], f["bot_id"], f["label"], phrase_key(phrase))
    share, replies = number(evidence, ("share",)), number(evidence, ("replies",))
    cell = acc.get(key)
    if cell is None:
        acc[key] = [phrase, 1, share, replies]
        return
    cell[1] += 1
    cell[2] = _max(cell[2], share)
    cell[3] = _max(cell[3], replies)


def _max(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


def _conversation(acc: dict[str, list[Any]], f: Mapping[str, Any]) -> None:
    ts = f["ts"] if f["ts"].tzinfo else f["ts"].replace(tzinfo=UTC)
    flagged = bool(f["flagged"])
    harm = int(flagged and f["role"] == "assistant" and f["detector"] in HARM_DETECTORS)
    empathy = f["label"] == EMPATHY_SCORE
    rep = int(flagged and f["detector"] == "repetition")
    cell = acc.get(f["conversation_id"])
    if cell is None:
        acc[f["conversation_id"]] = [f["tenant"], f["bot_id"], ts, ts, harm, int(empathy),
                                     float(f["score"]) if empathy else 0.0, rep]
        return
    cell[0], cell[1] = min(cell[0], f["tenant"]), min(cell[1], f["bot_id"])
    cell[2], cell[3] = min(cell[2], ts), max(cell[3], ts)
    cell[4] += harm
    cell[5] += int(empathy)
    cell[6] += float(f["score"]) if empathy else 0.0
    cell[7] += rep


# -- writing ------------------------------------------------------------------------------------


def upsert(conn: Connection, rollups: Rollups) -> None:
    """Add ``rollups`` (from :func:`aggregate`: keys sorted, so concurrent writers take the
    rows' locks in one order and never deadlock) in the caller's transaction. PostgreSQL: one
    statement for the three tables, each an ``INSERT ... SELECT FROM json_to_recordset(:rows)
    ... ON CONFLICT DO UPDATE`` (``pgjson.py``; a statement per row, even pipelined, cost a
    batch more than its findings did)."""
    if conn.dialect.name == "postgresql":
        parts = [(name, model.__table__, key, rows, update) for name, model, key, rows, update in (
            ("rollups_new", RollupRow, ROLLUP_KEY, rollups.rollups, _ADD_COUNTS),
            ("phrases_new", PhraseRollupRow, PHRASE_KEY, rollups.phrases, _PHRASE_UPDATE),
            ("conversations_new", ConversationRollupRow, ("conversation_id",),
             rollups.conversations, _CONVERSATION_UPDATE),
            ("groups_new", GroupRollupRow, GROUP_KEY, rollups.groups, _ADD_MOMENTS)) if rows]
        if parts:
            ctes = ", ".join(
                f"{name} AS ({pgjson.insert_sql(t, name, key, 'DO UPDATE SET ' + update, 't')})"
                for name, t, key, _rows, update in parts)
            conn.execute(text(f"WITH {ctes} SELECT 1"), {
                name: pgjson.rows_json(t, rows) for name, t, _key, rows, _update in parts})
        return
    # SQLite: executemany at the driver with the rows as tuples (SQLAlchemy's per-row
    # parameter processing was a fifth of a batch's write).
    for model, key, rows, update in (
            (RollupRow, ROLLUP_KEY, rollups.rollups, _ADD_COUNTS),
            (PhraseRollupRow, PHRASE_KEY, rollups.phrases, _SQLITE_PHRASE_UPDATE),
            (ConversationRollupRow, ("conversation_id",), rollups.conversations,
             _SQLITE_CONVERSATION_UPDATE),
            (GroupRollupRow, GROUP_KEY, rollups.groups, _ADD_MOMENTS)):
        if rows:
            table: Table = model.__table__  # type: ignore[assignment]
            cols = [c.name for c in table.columns]
            names = ", ".join('"' + c + '"' for c in cols)
            conn.exec_driver_sql(
                f"INSERT INTO {table.name} AS t ({names}) "
                f"VALUES ({', '.join('?' for _ in cols)}) "
                f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {update}",
                [tuple(_sqlite_value(r[c]) for c in cols) for r in rows])


def _sqlite_value(value: Any) -> Any:
    """A value as SQLAlchemy stores it on SQLite (times as naive UTC text)."""
    if isinstance(value, datetime):
        utc = value.astimezone(UTC) if value.tzinfo else value
        return utc.strftime("%Y-%m-%d %H:%M:%S.%f")
    return value


_ADD_COUNTS = ", ".join(f"{c} = t.{c} + excluded.{c}" for c in ("n", "flagged", "total",
                                                                  "total_sq"))
_ADD_MOMENTS = ", ".join(f"{c} = t.{c} + excluded.{c}" for c in ("n", "total", "total_sq"))
_PHRASE_UPDATE = ("n = t.n + excluded.n, max_share = GREATEST(t.max_share, excluded.max_share), "
                  "max_replies = GREATEST(t.max_replies, excluded.max_replies)")
_CONVERSATION_UPDATE = (
    "tenant = LEAST(t.tenant, excluded.tenant), bot_id = LEAST(t.bot_id, excluded.bot_id), "
    "started = LEAST(t.started, excluded.started), "
    '"last" = GREATEST(t."last", excluded."last"), '
    + ", ".join(f"{c} = t.{c} + excluded.{c}" for c in ("harm_flagged", "empathy_n",
                                                         "empathy_total",
                                                         "repetition_flagged")))

# SQLite's two-argument max() is NULL when either is: take the other one then (as PostgreSQL's
# GREATEST does).
_SQLITE_PHRASE_UPDATE = (
    "n = t.n + excluded.n, "
    "max_share = max(coalesce(t.max_share, excluded.max_share), "
    "coalesce(excluded.max_share, t.max_share)), "
    "max_replies = max(coalesce(t.max_replies, excluded.max_replies), "
    "coalesce(excluded.max_replies, t.max_replies))")
_SQLITE_CONVERSATION_UPDATE = (
    "tenant = min(t.tenant, excluded.tenant), bot_id = min(t.bot_id, excluded.bot_id), "
    "started = min(t.started, excluded.started), "
    '"last" = max(t."last", excluded."last"), '
    + ", ".join(f"{c} = t.{c} + excluded.{c}" for c in ("harm_flagged", "empathy_n",
                                                         "empathy_total",
                                                         "repetition_flagged")))


def subtract(conn: Connection, turns: Iterable[Mapping[str, Any]],
             findings: Iterable[Mapping[str, Any]], pairs: Iterable[Pair] = ()) -> None:
    """Take deleted rows' contributions out of ``rollups``, ``phrase_rollups`` and
    ``group_rollups`` (a turn and all its findings leave together, so no ``prior``; ``pairs``
    from :func:`group_pairs` after the delete); rows left at ``n`` 0 are deleted. The largest
    share and replies of a phrase stay as they were (a maximum cannot be undone)."""
    gone = aggregate(turns, findings, pairs=pairs)
    if not (gone.rollups or gone.phrases or gone.groups):
        return
    for row in gone.rollups:
        for c in ("n", "flagged", "total", "total_sq"):
            row[c] = -row[c]
    for row in gone.phrases:
        row["n"] = -row["n"]
        row["max_share"] = row["max_replies"] = None
    for row in gone.groups:
        for c in ("n", "total", "total_sq"):
            row[c] = -row[c]
    upsert(conn, Rollups(gone.rollups, gone.phrases, groups=gone.groups))
    for table, key, rows in ((RollupRow.__table__, ROLLUP_KEY, gone.rollups),
                             (PhraseRollupRow.__table__, PHRASE_KEY, gone.phrases),
                             (GroupRollupRow.__table__, GROUP_KEY, gone.groups)):
        keys = sorted({tuple(r[k] for k in key) for r in rows})
        for i in range(0, len(keys), 200):
            cols = [table.c[k] for k in key]  # type: ignore[attr-defined]
            conn.execute(delete(table).where(
                table.c.n <= 0, tuple_(*cols).in_(keys[i:i + 200])))  # type: ignore[attr-defined]


def as_dicts(rows: Iterable[Any], columns: Sequence[str]) -> list[dict[str, Any]]:
    """Rows a ``DELETE ... RETURNING`` handed back, as the dicts :func:`aggregate` reads."""
    return [dict(zip(columns, r, strict=True)) for r in rows]
