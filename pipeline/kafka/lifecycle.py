"""The data lifecycle of a Kafka worker: deletion records and retention reach its faust Tables.

Every ``CHATMON_DELETION_POLL_S`` the worker reads new deletion records (``chatmon purge``,
``DELETE`` on a ``serve`` sharing the store) and, for the keys of the partitions it owns,
deletes a removed conversation's ``context`` entry (a tombstone on the changelog) and writes
each bot's ``repetition`` state without it (the new value is what a restart or a rebalance
restores; compaction drops the old ones). A deleted tenant's or bot's state is a tombstone.
Every ``CHATMON_PURGE_INTERVAL_S`` it purges expired rows from the store and cuts the Tables
to each tenant's retention the same way.

Table writes happen on the event loop, between batches of the stage that owns the Table
(its lock), never while partitions are being assigned or recovered: then the tick is skipped
and the next one reads every record again. A worker given other partitions reads every record
again too, since a key that moved to it may have been missed by its previous owner.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from aiokafka.partitioner import murmur2

from pipeline.lifecycle.purge import EXPIRED, Purger, Request
from pipeline.lifecycle.retention import Retention
from pipeline.lifecycle.state import DeletionPoller, Forget, log_forgotten
from pipeline.metrics import get_metrics

log = logging.getLogger(__name__)
DELETED = "deleted"


class Owned:
    """Which keys of a Table belong to partitions this worker is active for (the local store
    can still hold keys of partitions it gave away; writing them would overwrite their new
    owner's newer values on the changelog)."""

    def __init__(self, app: Any, table: Any, partitions: int) -> None:
        self.app = app
        self.topic = table.changelog_topic.get_topic_name()
        self.partitions = partitions
        self.active: frozenset[int] = frozenset()

    def refresh(self) -> None:
        """Read the assignment (before a pass over the Table's keys)."""
        self.active = frozenset(tp.partition for tp in self.app.assignor.assigned_actives()
                                if tp.topic == self.topic)

    def __call__(self, key: bytes) -> bool:
        # The producer's default partitioner (use_partitioner Tables): murmur2 of the key.
        return (murmur2(key) & 0x7FFFFFFF) % self.partitions in self.active


class WorkerLifecycle:
    def __init__(self, app: Any, engine: Any, retention: Retention, group: str,
                 tables: Sequence[tuple[Any, str, Callable[[Forget], int], Owned]]) -> None:
        """``tables``: (the stage that writes the Table, the Table's name in the audit log and
        the metric, what removes a Forget from it, which of its keys are this worker's)."""
        self.app = app
        self.engine = engine
        self.retention = retention
        self.group = group
        self.tables = list(tables)
        self.poller = DeletionPoller(engine)
        self.actives: frozenset[Any] = frozenset()

    def busy(self) -> bool:
        return bool(getattr(self.app, "rebalancing", False)
                    or getattr(self.app, "in_recovery", False))

    async def apply(self, req: Forget, reason: str) -> Counter[str] | None:
        """Remove ``req`` from the Tables; None when a rebalance got in the way."""
        got: Counter[str] = Counter()
        for stage, name, forget, owned in self.tables:
            async with stage.lock:
                if self.busy():
                    return None
                owned.refresh()
                got[name] += forget(req)
        for table, n in (+got).items():
            get_metrics().purged(table, reason, n)
        return +got

    async def poll(self) -> None:
        if self.busy():
            return
        actives = frozenset(self.app.assignor.assigned_actives())
        if actives != self.actives:
            self.poller.reset()
            self.actives = actives
        req = await asyncio.to_thread(self.poller.poll)
        if req is None:
            return
        got = await self.apply(req, DELETED)
        if got is None:
            self.poller.reset()
        elif got:
            await asyncio.to_thread(log_forgotten, self.engine,
                                    f"chatmon worker {self.group}: deletion records", req, got)

    async def expire(self) -> None:
        if not self.retention.configured:
            return
        purger = Purger(self.engine, f"chatmon worker {self.group}: scheduled expiry",
                        on_rows=get_metrics().purged, audit_always=False)
        await asyncio.to_thread(purger.run, Request(EXPIRED, retention=self.retention))
        req = Forget(retention=self.retention)
        got = await self.apply(req, EXPIRED)
        if got:
            await asyncio.to_thread(log_forgotten, self.engine,
                                    f"chatmon worker {self.group}: scheduled expiry", req, got)
