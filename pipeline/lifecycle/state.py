"""Deletion and retention outside the store: what a running pipeline keeps in memory or in
faust Tables.

- Conversation context: the last turns of each conversation, unredacted (the detectors read
  them), in process (``MemoryContextStore``) or in the worker's ``context`` Table, whose
  changelog gets a tombstone for a removed conversation.
- The repetition state per (tenant, bot): in process (``DictStateStore``) or in the worker's
  ``repetition`` Table, whose changelog gets the state without the conversation (compaction
  keeps that value; a restart or a rebalance restores it). A deleted tenant's or bot's state
  is deleted (a tombstone).

A :class:`Forget` says what must go: conversations (by the SHA-256 of their id, as deletion
records name them), tenants, bots, and, with a retention, what is older than each tenant's
cut. ``chatmon serve`` applies it at once for ``DELETE /v1/conversations/{id}``; every
long-running process also polls the deletion records (:class:`DeletionPoller`), so a
``chatmon purge`` run elsewhere reaches it within ``CHATMON_DELETION_POLL_S``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from detectors.base import Turn
from detectors.repetition.state import digest_hash
from pipeline.lifecycle.audit import Audit
from pipeline.lifecycle.retention import Retention
from pipeline.store.deletions import BOT, CONVERSATION, TENANT, conversation_key, recorded_since
from pipeline.store.sink import store_error

CONTEXT, STATE = "state.context", "state.repetition"


@dataclass(frozen=True)
class Forget:
    conversations: frozenset[str] = frozenset()  # SHA-256 hex digests of the ids
    tenants: frozenset[str] = frozenset()
    bots: frozenset[str] = frozenset()
    retention: Retention | None = None
    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    @classmethod
    def from_records(cls, records: Iterable[tuple[str, str, datetime]]) -> Forget:
        by: dict[str, set[str]] = {CONVERSATION: set(), TENANT: set(), BOT: set()}
        for scope, key, _ in records:
            by.setdefault(scope, set()).add(key)
        return cls(frozenset(by[CONVERSATION]), frozenset(by[TENANT]), frozenset(by[BOT]))

    @classmethod
    def conversation(cls, conversation_id: str) -> Forget:
        return cls(frozenset({conversation_key(conversation_id)}))

    def __bool__(self) -> bool:
        return bool(self.conversations or self.tenants or self.bots or (
            self.retention is not None and self.retention.configured))

    def cut(self, tenant: str) -> datetime | None:
        return self.retention.cutoff(tenant, self.now) if self.retention is not None else None

    def owner_gone(self, tenant: str, bot: str) -> bool:
        return tenant in self.tenants or bot in self.bots

    def context_gone(self, conversation_id: str, last: Turn) -> bool:
        """Whether a conversation's context goes (``last``: its latest turn)."""
        if self.owner_gone(last.tenant or "", last.bot_id or ""):
            return True
        if self.conversations and conversation_key(conversation_id) in self.conversations:
            return True
        cut = self.cut(last.tenant or "")
        return cut is not None and last.ts < cut


class KeyedStore(Protocol):
    """A state store that can list and delete its keys (``DictStateStore``,
    ``pipeline.kafka.tables.TableStateStore``)."""

    def keys(self) -> Iterable[str]: ...

    def get(self, key: str) -> Any | None: ...

    def set(self, key: str, value: Any) -> None: ...

    def delete(self, key: str) -> None: ...


def forget_state(store: KeyedStore, detectors: Sequence[Any], req: Forget) -> int:
    """Apply ``req`` to every stateful detector's values in ``store``; entries removed."""
    hashes = {digest_hash(k) for k in req.conversations}
    n = 0
    for det in detectors:
        owner = getattr(det, "state_owner", None)
        if owner is None:
            continue
        for key in list(store.keys()):
            who = owner(key)
            if who is None:
                continue
            if req.owner_gone(*who):
                store.delete(key)
                n += 1
                continue
            value, removed = det.forget(store.get(key), hashes, before=req.cut(who[0]))
            if removed and value is None:
                store.delete(key)
            elif removed:
                store.set(key, value)
            n += removed
    flush = getattr(store, "flush", None)
    if flush is not None:
        flush()
    return n


def forget_contexts(contexts: Any, req: Forget) -> int:
    drop = getattr(contexts, "drop", None)
    return int(drop(req.context_gone)) if drop is not None else 0


def forget_all(contexts: Any, state: Any, detectors: Sequence[Any],
               req: Forget) -> Counter[str]:
    """Contexts and state of one process (``chatmon run`` and ``serve``)."""
    got = Counter({CONTEXT: forget_contexts(contexts, req)})
    if hasattr(state, "keys"):
        got[STATE] = forget_state(state, detectors, req)
    return +got


def log_forgotten(engine: Engine, command: str, req: Forget, rows: Counter[str]) -> None:
    """An audit row for state removed by polling or expiry (nothing removed: no row)."""
    request: dict[str, Any] = {"deletion_records": len(req.conversations) + len(req.tenants)
                               + len(req.bots)}
    if req.retention is not None:
        request = req.retention.describe()
    Audit(engine, command, "state", request, always=False).finish(rows)


class DeletionPoller:
    """New deletion records since the last poll (all of them on the first). Records are read
    again for ``margin`` after their time, so one committed late, or stamped by a process whose
    clock runs behind, is not missed (applying a record twice removes nothing the second
    time)."""

    def __init__(self, engine: Engine, margin: timedelta = timedelta(minutes=5),
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.engine = engine
        self.margin = margin
        self.clock = clock
        self.since: datetime | None = None

    def start_now(self) -> None:
        """Skip the records that exist already (a process whose state starts empty)."""
        self.since = self.clock() - self.margin

    def reset(self) -> None:
        """Read every record again at the next poll (a worker given other partitions)."""
        self.since = None

    def poll(self) -> Forget | None:
        now = self.clock()
        try:
            records = recorded_since(self.engine, self.since)
        except SQLAlchemyError as exc:
            raise store_error("cannot read deletions", exc) from exc
        self.since = now - self.margin
        return Forget.from_records(records) if records else None
