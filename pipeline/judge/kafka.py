"""``chatmon judge --kafka``: the judge as its own Kafka consumer group.

It reads the ``phrases`` topic: stage 1 of the workers writes there each assistant turn it has
stored, redacted (``pipeline/kafka/phrases.py``), so every message names a turn that is in the
store. The judge reads that turn (and the user turns it answers) from the store, judges it
like ``chatmon judge``, and commits the batch's offsets only after it is done. When the
endpoint is unavailable or the day's budget is spent, it seeks back to the batch's first
offsets and tries again after a wait that doubles (up to 12 polls): its group falls behind,
the scoring workers' groups do not, and nothing is skipped. At-least-once, like the workers:
a redelivered turn finds its finding stored and costs nothing.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from typing import Any

from pipeline.judge.follow import MAX_BACKOFF_POLLS
from pipeline.judge.runner import Judge, JudgeReport
from pipeline.judge.select import candidates, turns_by_id
from pipeline.store.sink import turn_id

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KafkaOptions:
    bootstrap: str
    topic: str
    group: str = "chatmon-judge"
    poll_s: float = 1.0
    session_timeout_s: float = 30.0


def _turn_ids(messages: list[Any]) -> list[str]:
    out = []
    for msg in messages:
        try:
            value = json.loads(msg.value)
            if value.get("role") == "assistant":
                out.append(turn_id(str(value["conversation_id"]), int(value["turn"])))
        except (ValueError, TypeError, KeyError, AttributeError):
            log.warning("judge: %s[%d] offset %d is not a stored-turn message; skipped",
                        msg.topic, msg.partition, msg.offset)
    return out


def consumer(opts: KafkaOptions, batch: int) -> Any:
    from kafka import KafkaConsumer

    session_ms = int(opts.session_timeout_s * 1000)
    return KafkaConsumer(
        opts.topic, bootstrap_servers=opts.bootstrap.split(","), group_id=opts.group,
        client_id="chatmon-judge", enable_auto_commit=False, auto_offset_reset="earliest",
        max_poll_records=batch, session_timeout_ms=session_ms,
        heartbeat_interval_ms=max(100, session_ms // 4),
        # a slow endpoint may take long over one batch; the heartbeat thread keeps us in
        max_poll_interval_ms=30 * 60 * 1000)


def consume(judge: Judge, opts: KafkaOptions, stop: threading.Event) -> JudgeReport:
    """Judge the stored turns the ``phrases`` topic names until ``stop`` is set."""
    from kafka.errors import CommitFailedError

    o = judge.options
    kc = consumer(opts, o.batch)
    wait = opts.poll_s
    try:
        while not stop.is_set():
            polled = kc.poll(timeout_ms=int(opts.poll_s * 1000), max_records=o.batch)
            messages = [m for records in polled.values() for m in records]
            if not messages:
                continue
            rows = turns_by_id(judge.engine, _turn_ids(messages))
            picked = candidates(judge.engine, rows, o.sample_rate, o.rules)
            report = judge.judge(picked)
            if report.stopped:
                log.warning("judge: %s; reading the same %d messages again in %.0f s",
                            report.stopped, len(messages), wait)
                for tp, records in polled.items():
                    kc.seek(tp, records[0].offset)
                stop.wait(wait)
                wait = min(wait * 2, opts.poll_s * MAX_BACKOFF_POLLS)
                continue
            wait = opts.poll_s
            judge.report.read(len(rows), picked)
            try:
                kc.commit()
            except CommitFailedError as exc:  # rebalanced meanwhile: the new owner re-reads
                log.warning("judge: commit failed (%s); the batch will be read again", exc)
    finally:
        kc.close()
    return judge.report
