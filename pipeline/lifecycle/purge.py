"""Purges of the store: expired rows (retention) and deletion on request (conversations, a
tenant, a bot). ``chatmon purge``, ``DELETE /v1/conversations/{id}`` and the scheduled expiry
of ``serve`` and ``worker`` all run :class:`Purger`.

Turns go in batches of ``batch_size``, each batch one transaction that deletes its reviews,
findings and turns (children first, so every table's count is exact); a conversation's rows
are taken out of the rollups in the same transaction (``rollup.py``), a tenant's or bot's
rollups go with it, and expiry leaves the counts (they outlive the rows). A batch is found
through an index: turns by (tenant, ts) for expiry and tenants, (bot_id, ts) for bots,
(conversation_id, turn) for conversations. On PostgreSQL the batch's turns are locked ``FOR
UPDATE SKIP LOCKED``, so several workers' purges share the work instead of counting rows
twice.

A request purge first records the deletion (``pipeline/store/deletions.py``) and then deletes,
so an event arriving meanwhile is either deleted with the rest or refused by the sink.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, delete, exists, func, select, update
from sqlalchemy.exc import SQLAlchemyError

from pipeline.lifecycle import rollup, scope
from pipeline.lifecycle.audit import Audit
from pipeline.lifecycle.retention import Retention
from pipeline.store import deletions, partitions
from pipeline.store.deletions import BOT, CONVERSATION, TENANT, conversation_key, write_txn
from pipeline.store.models import DeadLetterRow, FindingRow, ReviewRow, TurnRow
from pipeline.store.sink import store_error

EXPIRED = "expired"
BATCH_SIZE = 5000
NEAR_DUPLICATE = "repetition.near_duplicate"
# Rows counted per table; "findings.evidence": other conversations' near-duplicate findings
# whose evidence named a deleted conversation (the name is removed, the finding stays).
EVIDENCE = "findings.evidence"
# Of the rows counted, how many are pg_class estimates (large dropped partitions).
ESTIMATED = "rows_estimated"
OnRows = Callable[[str, str, int], None]  # (table, scope, rows): the purged-rows metric


@dataclass(frozen=True)
class Request:
    scope: str  # expired | conversation | tenant | bot
    conversations: tuple[str, ...] = ()
    tenant: str | None = None
    bot: str | None = None
    retention: Retention = field(default_factory=Retention)

    def audit(self) -> dict[str, Any]:
        """What was asked, as the audit log keeps it: never a conversation id."""
        if self.scope == CONVERSATION:
            return {"conversations": sorted({conversation_key(c) for c in self.conversations})}
        if self.scope == TENANT:
            return {"tenant": self.tenant}
        if self.scope == BOT:
            return {"bot": self.bot}
        return self.retention.describe()


@dataclass
class PurgeResult:
    request: Request
    rows: Counter[str]
    dry_run: bool
    purge_id: str | None = None
    # Expiry: the cut per stored tenant ('' for turns without one), and for dead letters.
    cutoffs: dict[str, str] = field(default_factory=dict)
    dead_letter_cutoff: str | None = None
    # Expiry on PostgreSQL: the day partitions dropped whole, and the time the cuts are from.
    partitions: list[str] = field(default_factory=list)
    now: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"purge_id": self.purge_id, "scope": self.request.scope,
                "request": self.request.audit(), "dry_run": self.dry_run,
                "rows": dict(sorted(self.rows.items())), "cutoffs": self.cutoffs,
                "dead_letter_cutoff": self.dead_letter_cutoff, "partitions": self.partitions}


class Purger:
    def __init__(self, engine: Engine, command: str, batch_size: int = BATCH_SIZE,
                 on_rows: OnRows | None = None, audit_always: bool = True) -> None:
        self.engine = engine
        self.command = command
        self.batch_size = batch_size
        self.on_rows = on_rows
        self.audit_always = audit_always
        self.postgres = engine.dialect.name == "postgresql"

    def run(self, request: Request, dry_run: bool = False, now: datetime | None = None,
            then: Callable[[], Counter[str]] | None = None) -> PurgeResult:
        """Run ``request`` (``then``: what else the purge removes once the store is done, e.g.
        the process's own state; its counts join the audit row)."""
        now = now or datetime.now(UTC)
        result = PurgeResult(request, Counter(), dry_run, now=now)
        if request.scope == EXPIRED:
            result.cutoffs = self._cutoffs(request.retention, now)
            dead = request.retention.dead_letter_cutoff(now)
            result.dead_letter_cutoff = dead.isoformat() if dead is not None else None
        if dry_run:
            result.rows = scope.count(self.engine, request, result.cutoffs,
                                      result.dead_letter_cutoff)
            return result
        audit = Audit(self.engine, self.command, request.scope, request.audit(),
                      always=self.audit_always)
        result.purge_id = audit.id
        try:
            if request.scope == EXPIRED:
                self._expire(result, audit)
            else:
                self._record(request, audit.id, now)
                self._delete_request(request, result.rows, audit)
            if then is not None:
                result.rows.update(then())
        except Exception:
            audit.finish(result.rows, failed=True)
            raise
        audit.finish(result.rows)
        if not audit.written:
            result.purge_id = None
        return result

    # -- expiry --------------------------------------------------------------------------------
    def _cutoffs(self, retention: Retention, now: datetime) -> dict[str, str]:
        """The cut per stored tenant ('' is turns without one)."""
        with self.engine.connect() as conn:
            tenants = (partitions.tenants(conn) if self.postgres
                       else [t for (t,) in conn.execute(select(TurnRow.tenant).distinct())])
        return {t: cut.isoformat() for t in sorted(tenants)
                if (cut := retention.cutoff(t, now)) is not None}

    def _expire(self, result: PurgeResult, audit: Audit) -> None:
        self._drop_partitions(result, audit)
        for tenant, cut in result.cutoffs.items():
            when = datetime.fromisoformat(cut)
            self._batches((TurnRow.tenant == tenant) & (TurnRow.ts < when), result.rows, audit)
            with write_txn(self.engine) as conn:
                n = rollup.expire_conversations(conn, tenant, when)
            self._count_rows(result.rows, "conversation_rollups", EXPIRED, n)
        dead = result.dead_letter_cutoff
        if dead is not None:
            self._dead_letter_batches(DeadLetterRow.created_at < datetime.fromisoformat(dead),
                                      result.rows, audit, EXPIRED)
        self._orphans(result.rows, audit)

    def _drop_partitions(self, result: PurgeResult, audit: Audit) -> None:
        """PostgreSQL: the day partitions wholly before the cut of every tenant with rows in
        them go by DROP (``pipeline/store/partitions.py``); the row deletes that follow take
        what is left before each tenant's cut. Their rows are counted before the drop (by
        pg_class's estimate above ``partitions.EXACT_COUNT_BELOW`` rows, counted in
        ``rows_estimated``)."""
        if not self.postgres or not result.cutoffs:
            return
        cuts = {t: datetime.fromisoformat(c) for t, c in result.cutoffs.items()}
        now = result.now or datetime.now(UTC)

        def cut_of(tenant: str) -> datetime | None:
            return cuts.get(tenant) or result.request.retention.cutoff(tenant, now)

        try:
            dropped, got, estimated = partitions.expire(self.engine, cut_of, max(cuts.values()))
        except SQLAlchemyError as exc:
            raise store_error("cannot drop expired partitions", exc) from exc
        result.partitions = dropped
        for table, n in got.items():
            self._count_rows(result.rows, table, EXPIRED, n)
        if estimated:
            result.rows[ESTIMATED] += estimated
        audit.progress(result.rows)

    def _orphans(self, rows: Counter[str], audit: Audit) -> None:
        """Rows of the other tables with a ``conversation_id`` (the judge's cached answers)
        whose conversation has no turn left: they live as long as their conversation."""
        with write_txn(self.engine) as conn:
            for table in scope.other_tables():
                left = exists().where(TurnRow.conversation_id == table.c.conversation_id)
                n = conn.execute(delete(table).where(table.c.conversation_id.is_not(None),
                                                     ~left)).rowcount or 0
                self._count_rows(rows, table.name, EXPIRED, n)
        audit.progress(rows)

    # -- deletion on request ---------------------------------------------------------------------
    def _record(self, request: Request, purge_id: str, now: datetime) -> None:
        asked: dict[str, list[str | None]] = {
            CONVERSATION: [conversation_key(c) for c in request.conversations],
            TENANT: [request.tenant], BOT: [request.bot]}
        keys = asked[request.scope]
        try:
            with write_txn(self.engine, exclusive=True) as conn:
                deletions.record(conn, request.scope, [k for k in keys if k], now, purge_id,
                                 conn.dialect.name)
        except SQLAlchemyError as exc:
            raise store_error("cannot record the deletion", exc) from exc

    def _delete_request(self, request: Request, rows: Counter[str], audit: Audit) -> None:
        if request.scope == CONVERSATION:
            for chunk in scope.chunks(request.conversations):
                self._batches(TurnRow.conversation_id.in_(chunk), rows, audit, request.scope,
                              subtract=True)
                self._dead_letter_batches(scope.dead_letters_of(chunk), rows, audit, request.scope)
                self._scrub_evidence(chunk, rows)
                with write_txn(self.engine) as conn:
                    got = _by_conversation(conn, chunk, dead_letters=False)
                    got["conversation_rollups"] = rollup.drop_conversations(conn, chunk)
                    for table, n in got.items():
                        self._count_rows(rows, table, request.scope, n)
            return
        column, name = ((TurnRow.tenant, request.tenant) if request.scope == TENANT
                        else (TurnRow.bot_id, request.bot))
        self._batches(column == name, rows, audit, request.scope, dead_letters=True)
        field_name = "tenant" if request.scope == TENANT else "bot_id"
        self._dead_letter_batches(scope.naming(field_name, str(name)), rows, audit, request.scope)
        with write_txn(self.engine) as conn:
            got = rollup.drop_owner(conn, field_name, str(name))
        for table, n in got.items():
            self._count_rows(rows, table, request.scope, n)
        audit.progress(rows)

    # -- the batches -----------------------------------------------------------------------------
    def _batches(self, where: Any, rows: Counter[str], audit: Audit, reason: str = EXPIRED,
                 subtract: bool = False, dead_letters: bool = False) -> None:
        """Delete the turns matching ``where`` with their findings and reviews, a batch per
        transaction (and the dead letters of their conversations with ``dead_letters``;
        with ``subtract``, their contributions to the rollups)."""
        while True:
            q = select(TurnRow.id, TurnRow.conversation_id, TurnRow.ts).where(where) \
                .limit(self.batch_size)
            if self.postgres:
                q = q.with_for_update(skip_locked=True)
            try:
                with write_txn(self.engine) as conn:
                    batch = conn.execute(q).all()
                    if not batch:
                        return
                    span = ((min(r.ts for r in batch), max(r.ts for r in batch))
                            if self.postgres else None)
                    got = self._delete_turns(conn, [r.id for r in batch], subtract, span)
                    if dead_letters:  # a tenant's or bot's: by their conversations
                        got.update(_by_conversation(conn, sorted({r.conversation_id
                                                                  for r in batch})))
            except SQLAlchemyError as exc:
                raise store_error("cannot purge", exc) from exc
            for table, n in got.items():
                self._count_rows(rows, table, reason, n)
            audit.progress(rows)
            if len(batch) < self.batch_size:
                return

    def _delete_turns(self, conn: Connection, ids: list[str], subtract: bool,
                      span: tuple[datetime, datetime] | None = None) -> Counter[str]:
        """Delete the turns ``ids``, their findings and their reviews; with ``subtract``, take
        what went out of the rollups (from the rows the deletes return). ``span`` (PostgreSQL:
        the batch's first and last ts; a finding's ts is its turn's) confines the deletes to the
        day partitions the batch is in, instead of probing every day's indexes for each id."""
        dialect = conn.dialect.name
        of_turns = scope.among(FindingRow.turn_id, ids, dialect)
        of_ids = scope.among(TurnRow.id, ids, dialect)
        if span is not None:
            of_turns = of_turns & FindingRow.ts.between(*span)
            of_ids = of_ids & TurnRow.ts.between(*span)
        columns = rollup.FINDING_COLUMNS if subtract else (FindingRow.id,)
        if dialect == "postgresql":
            found, reviews = _findings_and_reviews(conn, of_turns, columns)
        else:
            reviews = conn.execute(delete(ReviewRow).where(ReviewRow.finding_id.in_(
                select(FindingRow.id).where(of_turns)))).rowcount or 0
            found = conn.execute(delete(FindingRow).where(of_turns).returning(*columns)).all()
        turns = delete(TurnRow).where(of_ids)
        if subtract:
            gone = conn.execute(turns.returning(*rollup.TURN_COLUMNS)).all()
            rollup.subtract(conn, gone, found)
            n_turns = len(gone)
        else:
            n_turns = conn.execute(turns).rowcount or 0
        return Counter({"reviews": reviews, "findings": len(found), "turns": n_turns})

    def _dead_letter_batches(self, where: Any, rows: Counter[str], audit: Audit,
                             reason: str) -> None:
        while True:
            q = select(DeadLetterRow.id).where(where).limit(self.batch_size)
            with write_txn(self.engine) as conn:
                ids = [i for (i,) in conn.execute(q)]
                n = conn.execute(delete(DeadLetterRow).where(scope.among(
                    DeadLetterRow.id, ids, conn.dialect.name))).rowcount if ids else 0
            self._count_rows(rows, "dead_letters", reason, n or 0)
            audit.progress(rows)
            if len(ids) < self.batch_size:
                return

    def _scrub_evidence(self, conversations: Sequence[str], rows: Counter[str]) -> None:
        """Other conversations' near-duplicate findings name the reply they matched: drop the
        name of a deleted conversation (the finding itself stays)."""
        named = FindingRow.evidence["conversation_id"].as_string()
        with write_txn(self.engine) as conn:
            hits = conn.execute(select(FindingRow.id, FindingRow.evidence).where(
                FindingRow.label == NEAR_DUPLICATE, named.in_(list(conversations)))).all()
            for fid, evidence in hits:
                conn.execute(update(FindingRow).where(FindingRow.id == fid).values(
                    evidence={**evidence, "conversation_id": None, "turn": None}))
        self._count_rows(rows, EVIDENCE, CONVERSATION, len(hits))

    def _count_rows(self, rows: Counter[str], table: str, reason: str, n: int) -> None:
        if n:
            rows[table] += n
            if self.on_rows is not None:
                self.on_rows(table, reason, n)


def _by_conversation(conn: Connection, conversations: list[str],
                     dead_letters: bool = True) -> Counter[str]:
    """Delete the rows of these conversations from the dead letters and from any table a
    later change added with a ``conversation_id`` column."""
    tables = [*([DeadLetterRow.__table__] if dead_letters else []), *scope.other_tables()]
    got: Counter[str] = Counter()
    for table in tables:
        got[table.name] = conn.execute(delete(table).where(
            table.c.conversation_id.in_(conversations))).rowcount or 0
    return got


def _findings_and_reviews(conn: Connection, of_turns: Any,
                          columns: Sequence[Any]) -> tuple[list[Any], int]:
    """PostgreSQL: the findings and their reviews in one statement (two data-modifying CTEs),
    so the batch's findings are looked up once (their turn_id index probes were a third of a
    batch at a million turns); the rows of the deleted findings, and how many reviews went."""
    gone = delete(FindingRow).where(of_turns).returning(FindingRow.id.label("fid"),
                                                         *columns).cte("gone")
    reviews = delete(ReviewRow).where(ReviewRow.finding_id.in_(select(gone.c.fid))) \
        .returning(ReviewRow.id).cte("gone_reviews")
    n_reviews = select(func.count()).select_from(reviews).scalar_subquery()
    rows = conn.execute(select(n_reviews, *[gone.c[c.key] for c in columns])).all()
    if not rows:  # no findings, so no reviews either
        return [], 0
    return [tuple(r[1:]) for r in rows], int(rows[0][0])
