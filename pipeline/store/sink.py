"""The sink: idempotent batch writes keyed by deterministic ids.

``INSERT ... ON CONFLICT DO NOTHING ... RETURNING`` on the primary key, one transaction per
batch, so at-least-once delivery and replays never double-count; the rollups of the rows that
were new are added in the same transaction (``pipeline/store/rollups.py``). No per-turn round
trips: existing turns of a batch are looked up with one query.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, Table, select, text, update
from sqlalchemy.exc import (
    DisconnectionError,
    InterfaceError,
    OperationalError,
    SQLAlchemyError,
)
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from pipeline.errors import SinkError, StoreUnavailable
from pipeline.store import pgjson, rollups
from pipeline.store.db import dialect_insert
from pipeline.store.deletions import without_deleted, write_txn
from pipeline.store.models import DeadLetterRow, FindingRow, Run, TurnRow
from pipeline.store.partitions import PARTITIONED, Cover

# Rows per INSERT statement: SQLite allows 32766 bound parameters; findings have ~20 columns.
_CHUNK = 500


def stable_id(*parts: Any) -> str:
    """A deterministic 40-hex id from the parts (sha256 truncated; collisions are negligible)."""
    h = hashlib.sha256("\x1f".join("" if p is None else str(p) for p in parts).encode())
    return h.hexdigest()[:40]


def turn_id(conversation_id: str, turn: int) -> str:
    return stable_id("turn", conversation_id, turn)


_UNAVAILABLE = (OperationalError, InterfaceError, DisconnectionError, PoolTimeoutError)


def store_error(what: str, exc: BaseException) -> SinkError:
    """The error to raise for a failed store call: ``StoreUnavailable`` when the store could not
    be reached (worth a retry), else ``SinkError``. Only the exception's type goes in the
    message: SQLAlchemy's text can hold bound parameters (redacted text, ids)."""
    cls = StoreUnavailable if isinstance(exc, _UNAVAILABLE) else SinkError
    return cls(f"{what}: {type(exc).__name__}")


# Long-running modes (serve, worker) purge expired opt-in raw text this often, and at start.
RAW_PURGE_INTERVAL_S = 3600.0

class Sink:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.dialect = engine.dialect.name
        # PostgreSQL: the day partitions a batch needs, made before it is written.
        self.cover = Cover(engine) if self.dialect == "postgresql" else None

    def existing_hashes(self, ids: Sequence[str]) -> dict[str, str]:
        """content_hash of the already stored turns among ``ids``."""
        if not ids:
            return {}
        out: dict[str, str] = {}
        try:
            with self.engine.connect() as conn:
                for chunk in _chunks(ids):
                    rows = conn.execute(
                        select(TurnRow.id, TurnRow.content_hash).where(TurnRow.id.in_(chunk))
                    )
                    out.update({r.id: r.content_hash for r in rows})
        except SQLAlchemyError as exc:
            raise store_error("cannot read turns", exc) from exc
        return out

    def write(
        self,
        turns: Sequence[Mapping[str, Any]] = (),
        findings: Sequence[Mapping[str, Any]] = (),
        dead_letters: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        """Write one batch in one transaction; rows that already exist are left as they are,
        and so are rows of a conversation deleted meanwhile (``pipeline/store/deletions.py``).
        The rollups of exactly the newly stored rows are added in the same transaction
        (``pipeline/store/rollups.py``), so a replayed batch adds nothing."""
        if not (turns or findings or dead_letters):
            return
        try:
            self.cover_partitions(turns, findings)
            with write_txn(self.engine) as conn:
                turns, findings, dead_letters = without_deleted(conn, turns, findings,
                                                                dead_letters)
                new_turns, new_findings = self._insert_new(conn, turns, findings)
                for chunk in _chunks(dead_letters):
                    conn.execute(self._insert_ignore(DeadLetterRow.__table__), chunk)  # type: ignore[arg-type]
                if new_turns or new_findings:
                    fresh = {t["id"] for t in new_turns}
                    prior = _prior(conn, new_findings, fresh)
                    pairs = rollups.group_pairs(conn, new_findings, [
                        (t["conversation_id"], t["turn"]) for t in new_turns])
                    rollups.upsert(conn, rollups.aggregate(new_turns, new_findings, prior,
                                                           pairs))
        except SQLAlchemyError as exc:
            raise store_error("cannot write batch", exc) from exc

    def _insert_new(self, conn: Connection, turns: Sequence[Mapping[str, Any]],
                    findings: Sequence[Mapping[str, Any]]
                    ) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
        """Insert the turns and findings (``ON CONFLICT DO NOTHING``); the ones that were new,
        for the rollups. PostgreSQL: both in one statement, ``RETURNING id``, each table's rows
        one JSON parameter (``pgjson.py``: a multi-row ``VALUES`` made writes 3.5 times
        slower). SQLite: the ids already stored are read first, then executemany (``RETURNING``
        there, a multi-row ``VALUES`` too, doubled the write's time)."""
        tables = [(TurnRow.__table__, turns), (FindingRow.__table__, findings)]
        new: set[str] = set()
        if self.dialect == "postgresql":
            parts = {f"{t.name}_new": (t, rows) for t, rows in tables if rows}
            if parts:
                ctes = ", ".join(
                    f"{name} AS ({pgjson.insert_sql(t, name, conflict_key(self.dialect, t))} "  # type: ignore[arg-type]
                    "RETURNING id)" for name, (t, _rows) in parts.items())
                union = " UNION ALL ".join(f"SELECT id FROM {name}" for name in parts)
                new.update(conn.execute(text(f"WITH {ctes} {union}"), {
                    name: pgjson.rows_json(t, rows) for name, (t, rows) in parts.items()  # type: ignore[arg-type]
                }).scalars())
        else:  # SQLite: one writer at a time (BEGIN IMMEDIATE), so what was there stays there
            for table, rows in tables:
                ids = [r["id"] for r in rows]
                had = {i for chunk in _chunks(ids) for i in conn.execute(
                    select(table.c.id).where(table.c.id.in_(chunk))).scalars()}  # type: ignore[attr-defined]
                new.update(i for i in ids if i not in had)
                for chunk in _chunks(rows):
                    conn.execute(self._insert_ignore(table), chunk)  # type: ignore[arg-type]
        seen: set[str] = set()  # a row twice in one batch is stored once
        return ([r for r in turns if r["id"] in new and _first(seen, r["id"])],
                [r for r in findings if r["id"] in new and _first(seen, r["id"])])

    def cover_partitions(self, *batches: Sequence[Mapping[str, Any]]) -> None:
        """PostgreSQL: create the day partitions of turns and findings that the rows' ``ts``
        need and the store lacks (an old replay), and every hour the days ahead
        (``pipeline/store/partitions.py``), each in a short transaction of its own."""
        if self.cover is not None and any(batches):
            self.cover(row["ts"] for rows in batches for row in rows)

    def _insert_ignore(self, table: Table) -> Any:
        return insert_ignore(self.dialect, table)

    def start_run(self, run_id: str, mode: str, source: str, versions: dict[str, str],
                  chatmon_version: str) -> None:
        try:
            with self.engine.begin() as conn:
                conn.execute(self._insert_ignore(Run.__table__), [dict(
                    id=run_id, started_at=datetime.now(UTC), finished_at=None, mode=mode,
                    source=source[:2000], chatmon_version=chatmon_version,
                    detector_versions=versions, counts={}, duration_s=None,
                )])
        except SQLAlchemyError as exc:
            raise store_error("cannot record run", exc) from exc

    def purge_expired_raw(self) -> int:
        """Clear opt-in raw text whose retention has run out; returns the number of turns."""
        try:
            with self.engine.begin() as conn:
                res = conn.execute(update(TurnRow).where(
                    TurnRow.raw_expires_at.is_not(None),
                    TurnRow.raw_expires_at < datetime.now(UTC),
                ).values(text_raw=None, raw_expires_at=None))
                return int(res.rowcount or 0)
        except SQLAlchemyError as exc:
            raise store_error("cannot purge raw text", exc) from exc

    def finish_run(self, run_id: str, counts: dict[str, Any], duration_s: float) -> None:
        try:
            with self.engine.begin() as conn:
                conn.execute(update(Run).where(Run.id == run_id).values(
                    finished_at=datetime.now(UTC), counts=to_json(counts), duration_s=duration_s,
                ))
        except SQLAlchemyError as exc:
            raise store_error("cannot finish run", exc) from exc


def _prior(conn: Connection, new_findings: Sequence[Mapping[str, Any]],
           fresh: set[str]) -> dict[str, list[tuple[str, str, bool]]]:
    """(detector, label, flagged) of the findings stored before this write on the turns that
    get new findings but were stored earlier (the Kafka workers' second stage, the judge), so
    a turn counts once in the rollups' 'turns' measures across batches. On PostgreSQL those
    turns are locked first (``FOR NO KEY UPDATE``, in id order): two writers adding findings
    to one turn take turns, and the second sees the first's findings."""
    earlier = sorted({f["turn_id"] for f in new_findings} - fresh)
    if not earlier:
        return {}
    ids = {f["id"] for f in new_findings}
    out: dict[str, list[tuple[str, str, bool]]] = {}
    for chunk in _chunks(earlier):
        if conn.dialect.name == "postgresql":
            conn.execute(select(TurnRow.id).where(TurnRow.id.in_(chunk)).order_by(TurnRow.id)
                         .with_for_update(key_share=True)).all()
        rows = conn.execute(select(FindingRow.id, FindingRow.turn_id, FindingRow.detector,
                                   FindingRow.label, FindingRow.flagged)
                            .where(FindingRow.turn_id.in_(chunk)))
        for fid, tid, detector, label, flagged in rows:
            if fid not in ids:
                out.setdefault(tid, []).append((detector, label, bool(flagged)))
    return out


def insert_ignore(dialect: str, table: Table) -> Any:
    """``INSERT ... ON CONFLICT (id) DO NOTHING`` in the store's dialect; ``(id, ts)`` for the
    day-partitioned turns and findings on PostgreSQL, whose keys must hold the partition key. A
    row's ts comes from its event, so a replay still conflicts; a turn id stored with another
    ts is found by ``existing_hashes`` (by id, across partitions) and refused before."""
    return dialect_insert(dialect)(table).on_conflict_do_nothing(
        index_elements=conflict_key(dialect, table))


def conflict_key(dialect: str, table: Table) -> list[str]:
    """The conflict target of ``insert_ignore``: ``(id, ts)`` on the partitioned tables."""
    return ["id", "ts"] if dialect == "postgresql" and table.name in PARTITIONED else ["id"]


def _first(seen: set[str], key: str) -> bool:
    if key in seen:
        return False
    seen.add(key)
    return True


T = TypeVar("T")


def _chunks(items: Sequence[T]) -> Iterable[list[T]]:
    """``items`` in slices of ``_CHUNK``: rows per INSERT, ids per ``IN (...)``."""
    for i in range(0, len(items), _CHUNK):
        yield list(items[i : i + _CHUNK])


_PLAIN = (str, int, bool, type(None))


def to_json(value: Any) -> Any:
    """Plain JSON types only (numpy scalars and arrays, tuples, sets become Python values)."""
    # Exact-type fast paths first: this runs on every finding's evidence (a profile hot spot,
    # isinstance against the Mapping ABC being the slow part).
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is float:
        return round(value, 6)
    if kind is dict:
        return {str(k): to_json(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [to_json(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_json(v) for v in value]
    if hasattr(value, "tolist"):
        return to_json(value.tolist())
    if isinstance(value, float):
        return round(value, 6)
    if value is None or isinstance(value, str | int | bool):
        return value
    return str(value)
