"""The data lifecycle of one embedded processor (``chatmon run``, ``chatmon serve``): expiry of
the store and of the processor's own state, deletion on request, and the deletion records
other processes write, applied to this process's context and repetition state.

Everything that touches the processor's state runs under ``lock`` (serve: the batcher's lock,
so never in the middle of a batch)."""

from __future__ import annotations

import threading
from collections import Counter
from contextlib import AbstractContextManager, nullcontext

from pipeline.lifecycle.purge import EXPIRED, Purger, PurgeResult, Request
from pipeline.lifecycle.retention import Retention
from pipeline.lifecycle.state import DeletionPoller, Forget, forget_all, log_forgotten
from pipeline.metrics import get_metrics
from pipeline.scoring.process import Processor
from pipeline.store.deletions import CONVERSATION

DELETED = "deleted"  # the metric's reason for state removed on a deletion record


class EmbeddedLifecycle:
    def __init__(self, processor: Processor, mode: str,
                 lock: threading.Lock | None = None) -> None:
        self.processor = processor
        self.mode = mode
        self.lock: AbstractContextManager[object] = lock if lock is not None else nullcontext()
        self.engine = processor.sink.engine
        self.retention = Retention.from_policy(processor.policy)
        self.poller = DeletionPoller(self.engine)
        self.poller.start_now()  # the state starts empty: older records have nothing to find

    def _forget(self, req: Forget, reason: str) -> Counter[str]:
        p = self.processor
        with self.lock:
            got = forget_all(p.contexts, p.state, p.suite.detectors, req)
        metrics = get_metrics()
        for table, n in got.items():
            metrics.purged(table, reason, n)
        return got

    def expire(self) -> PurgeResult | None:
        """Purge rows past their retention, then the state's; one audit row for both, and
        none when nothing went. None when no retention is configured."""
        if not self.retention.configured:
            return None
        purger = Purger(self.engine, f"chatmon {self.mode}: scheduled expiry",
                        on_rows=get_metrics().purged, audit_always=False)
        return purger.run(Request(EXPIRED, retention=self.retention), then=lambda: self._forget(
            Forget(retention=self.retention), EXPIRED))

    def delete_conversation(self, conversation_id: str, command: str) -> PurgeResult:
        """Deletion on request, in the store and this process's state, as one audit row."""
        purger = Purger(self.engine, command, on_rows=get_metrics().purged)
        return purger.run(Request(CONVERSATION, (conversation_id,)), then=lambda: self._forget(
            Forget.conversation(conversation_id), CONVERSATION))

    def poll(self) -> Counter[str]:
        """Apply deletion records written since the last poll (by ``chatmon purge``)."""
        req = self.poller.poll()
        if req is None:
            return Counter()
        got = self._forget(req, DELETED)
        log_forgotten(self.engine, f"chatmon {self.mode}: deletion records", req, got)
        return got
