"""What each purge selects: the rows of a request, the dead letters naming a conversation,
tenant or bot, the tables a later issue adds with a ``conversation_id``, and the dry-run's
counts of all of them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, String, Table, any_, bindparam, func, or_, select
from sqlalchemy.dialects.postgresql import ARRAY

from pipeline.store.deletions import BOT, CONVERSATION, TENANT
from pipeline.store.models import (
    Base,
    ConversationRollupRow,
    DeadLetterRow,
    FindingRow,
    PhraseRollupRow,
    ReviewRow,
    RollupRow,
    TurnRow,
)

_IN_CHUNK = 500  # ids per IN list of a request
# The tables the purge knows by name; any other with a conversation_id column (a table a
# later change adds) loses the rows of a deleted conversation too.
KNOWN = frozenset({"turns", "findings", "reviews", "dead_letters", "deletions", "purges",
                   "runs", "validation_results", "conversation_rollups"})


def among(column: Any, ids: Sequence[str], dialect: str) -> Any:
    """``column IN ids``; on PostgreSQL ``column = ANY(:ids)``, one array parameter instead of
    thousands (binding and planning them took a third of a batch's time)."""
    if dialect == "postgresql":
        return column == any_(bindparam(None, list(ids), type_=ARRAY(String)))
    return column.in_(list(ids))


def other_tables() -> list[Table]:
    return [t for t in Base.metadata.sorted_tables
            if t.name not in KNOWN and "conversation_id" in t.c]


def count(engine: Engine, request: Any, cutoffs: dict[str, str],
          dead_letter_cutoff: str | None) -> Counter[str]:
    """What a purge would remove (``--dry-run``), by table."""
    out: Counter[str] = Counter()
    turn_conds: list[Any] = []
    dead_conds: list[Any] = []
    if request.scope == "expired":
        turn_conds = [(TurnRow.tenant == t) & (TurnRow.ts < datetime.fromisoformat(c))
                      for t, c in cutoffs.items()]
        if dead_letter_cutoff is not None:
            dead_conds = [DeadLetterRow.created_at < datetime.fromisoformat(dead_letter_cutoff)]
    elif request.scope == CONVERSATION:
        turn_conds = [TurnRow.conversation_id.in_(c) for c in chunks(request.conversations)]
        dead_conds = [dead_letters_of(c) for c in chunks(request.conversations)]
    else:
        column, name = ((TurnRow.tenant, request.tenant) if request.scope == TENANT
                        else (TurnRow.bot_id, request.bot))
        turn_conds = [column == name]
        convs = select(TurnRow.conversation_id).where(column == name)
        dead_conds = [DeadLetterRow.conversation_id.in_(convs) | naming(
            "tenant" if request.scope == TENANT else "bot_id", str(name))]
    with engine.connect() as conn:
        for cond in turn_conds:
            turns = select(TurnRow.id).where(cond)
            findings = select(FindingRow.id).where(FindingRow.turn_id.in_(turns))
            out["turns"] += _n(conn, select(func.count()).where(cond))
            out["findings"] += _n(conn, select(func.count()).where(
                FindingRow.turn_id.in_(turns)))
            out["reviews"] += _n(conn, select(func.count()).where(
                ReviewRow.finding_id.in_(findings)))
        if dead_conds:
            out["dead_letters"] = _n(conn, select(func.count()).where(or_(*dead_conds)))
        out.update(_rollups(conn, request, cutoffs))
    return +out


def _rollups(conn: Connection, request: Any, cutoffs: dict[str, str]) -> Counter[str]:
    """The rollup rows a purge deletes: a tenant's or bot's, a conversation's, the expired
    conversations' (``pipeline/lifecycle/rollup.py``)."""
    out: Counter[str] = Counter()
    convs = ConversationRollupRow.__table__.c
    if request.scope in (TENANT, BOT):
        column = "tenant" if request.scope == TENANT else "bot_id"
        for model in (RollupRow, PhraseRollupRow, ConversationRollupRow):
            table = model.__table__
            out[table.name] = _n(conn, select(func.count()).select_from(table).where(
                table.c[column] == (request.tenant or request.bot)))
    elif request.scope == CONVERSATION:
        for c in chunks(request.conversations):
            out["conversation_rollups"] += _n(conn, select(func.count()).where(
                convs.conversation_id.in_(c)))
    else:
        for tenant, cut in cutoffs.items():
            out["conversation_rollups"] += _n(conn, select(func.count()).where(
                convs.tenant == tenant, convs["last"] < datetime.fromisoformat(cut)))
    return out


def _n(conn: Connection, q: Any) -> int:
    return int(conn.execute(q).scalar_one())


def chunks(items: Sequence[str]) -> list[list[str]]:
    unique = sorted(set(items))
    return [unique[i: i + _IN_CHUNK] for i in range(0, len(unique), _IN_CHUNK)]


def dead_letters_of(conversations: Sequence[str]) -> Any:
    """Dead letters of these conversations: by the column, or (an event too broken to read
    its id into the column) by the quoted id in the redacted copy of the event."""
    quoted = [DeadLetterRow.raw_excerpt.contains(f'"{c}"', autoescape=True)
              for c in conversations]
    return or_(DeadLetterRow.conversation_id.in_(list(conversations)), *quoted)


def naming(field_name: str, value: str) -> Any:
    """Dead letters whose redacted copy of the event names this tenant or bot."""
    return or_(*(DeadLetterRow.raw_excerpt.contains(f'"{field_name}"{sep}"{value}"',
                                                    autoescape=True) for sep in (": ", ":")))
