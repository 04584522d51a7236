"""The faust app of ``chatmon worker``: two topics in, two Tables, two agents, a web endpoint.

Stage 1 (``score_turns``) consumes ``turns`` (key = conversation_id) with every enabled detector
except repetition, conversation context in the ``context`` Table, and forwards the stored,
redacted assistant turns to ``phrases`` keyed by bot. Stage 2 (``track_repetition``) consumes
``phrases`` with the repetition detector, its per-bot state in the ``repetition`` Table. Both
stages call ``Processor.process``; only the detectors and injected stores differ.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import faust

from pipeline import __version__
from pipeline.errors import SinkError
from pipeline.kafka import offsets
from pipeline.kafka.agents import Stage
from pipeline.kafka.lag import WorkerStats
from pipeline.kafka.lifecycle import Owned, WorkerLifecycle
from pipeline.kafka.phrases import assistant_turn_ids, stored_phrases
from pipeline.kafka.tables import FindingsSink, TableContextStore, TableStateStore
from pipeline.lifecycle.purge import EXPIRED, Purger, Request
from pipeline.lifecycle.retention import Retention
from pipeline.lifecycle.state import CONTEXT, STATE, forget_contexts, forget_state
from pipeline.metrics import get_metrics, render_latest
from pipeline.policy.engine import Policy
from pipeline.scoring.context import MemoryContextStore
from pipeline.scoring.process import Processor
from pipeline.scoring.redaction import Redactor, redaction_stage
from pipeline.scoring.suite import DetectorSuite
from pipeline.settings import Settings
from pipeline.store import db
from pipeline.store.sink import RAW_PURGE_INTERVAL_S, Sink

log = logging.getLogger(__name__)
REPETITION = "repetition"
# The worker's HTTP endpoints on --web-port (deploy/ probes and scrape configs point here).
HEALTH_PATH, READY_PATH, METRICS_PATH = "/health", "/ready", "/metrics"


@dataclass(frozen=True)
class WorkerOptions:
    bootstrap: str
    group: str
    turns_topic: str
    phrases_topic: str
    dlq_topic: str
    partitions: int
    batch_size: int
    within_s: float
    web_port: int
    session_timeout_s: float
    producer_max_batch_size: int
    # The OpenTelemetry Collector's Kafka exporter topic, and its encoding (docs/otel.md).
    otlp_topic: str | None = None
    otlp_encoding: str = "otlp_proto"
    web_host: str = "0.0.0.0"
    datadir: Path = Path("/tmp/chatmon-worker")

    @classmethod
    def from_settings(cls, s: Settings, **overrides: Any) -> WorkerOptions:
        base = dict(
            bootstrap=s.kafka_bootstrap, group=s.kafka_group, turns_topic=s.kafka_turns_topic,
            phrases_topic=s.kafka_phrases_topic, dlq_topic=s.kafka_dlq_topic,
            partitions=s.kafka_partitions, batch_size=s.batch_size,
            within_s=s.kafka_batch_within_s, web_port=s.worker_web_port,
            session_timeout_s=s.kafka_session_timeout_s,
            producer_max_batch_size=s.kafka_producer_max_batch_size,
            otlp_topic=s.kafka_otlp_topic, otlp_encoding=s.kafka_otlp_encoding)
        base.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**base)  # type: ignore[arg-type]


@dataclass
class Processors:
    stage1: Processor
    stage2: Processor | None


def build_processors(settings: Settings, migrate: bool) -> Processors:
    """Load the detectors once per worker (before the event loop starts) and split them into
    the two stages."""
    policy = Policy.from_settings(settings)  # a bad policy file fails before anything loads
    if migrate:
        db.upgrade(settings.database_url)
    sink = Sink(db.make_engine(settings.database_url))
    sink.purge_expired_raw()  # opt-in raw text past its retention (also hourly, below)
    retention = Retention.from_policy(policy)
    if retention.configured:  # rows past their retention (also on a schedule, below)
        Purger(sink.engine, "chatmon worker: expiry at start", audit_always=False,
               on_rows=get_metrics().purged).run(Request(EXPIRED, retention=retention))
    names = settings.enabled_detectors()
    options = settings.scoring_options()
    first = DetectorSuite.from_names([n for n in names if n != REPETITION],
                                     options, encoder_backend=settings.encoder_backend)
    second = (DetectorSuite.from_names([REPETITION], settings.detector_options)
              if REPETITION in names else None)
    run_id = str(uuid.uuid4())
    versions = {**first.versions, **(second.versions if second else {})}
    sink.start_run(run_id, "worker", settings.kafka_bootstrap, versions, __version__)
    metrics = get_metrics()
    first.load()
    redactor = redaction_stage(first.detectors, options["pii"])
    redactor.load()
    p1 = Processor(settings, first, sink, run_id=run_id, on_batch=metrics.on_batch,
                   policy=policy, redactor=redactor)
    p2 = None
    if second is not None:
        second.load()
        p2 = Processor(settings, second, FindingsSink(sink),  # type: ignore[arg-type]
                       contexts=MemoryContextStore(1, 1000), run_id=run_id,
                       on_batch=lambda r: metrics.on_batch(replace(r, records=0)),
                       # Stage 2 reads the turns stage 1 redacted and stored: the safety net
                       # only; its dead letters are the phrases stage 1 wrote, redacted too.
                       policy=policy, redactor=Redactor(None))
    return Processors(p1, p2)


def make_app(opts: WorkerOptions, procs: Processors, stats: WorkerStats) -> faust.App:
    heartbeat = max(0.5, min(3.0, opts.session_timeout_s / 4))
    datadir = opts.datadir / opts.group / str(opts.web_port)
    datadir.mkdir(parents=True, exist_ok=True)
    app = offsets.App(
        opts.group, broker=f"kafka://{opts.bootstrap}", store="memory://",
        autodiscover=False, web_enabled=True, web_port=opts.web_port, web_host=opts.web_host,
        datadir=str(datadir),
        broker_session_timeout=opts.session_timeout_s, broker_heartbeat_interval=heartbeat,
        broker_commit_interval=1.0, topic_partitions=opts.partitions,
        topic_replication_factor=1, producer_acks=-1,
        producer_max_batch_size=opts.producer_max_batch_size,
        # One bot's repetition state is one changelog record of up to ~0.6 MB at full window.
        producer_max_request_size=4 * 1024 * 1024,
        consumer_auto_offset_reset="earliest", stream_recovery_delay=0.0,
        table_standby_replicas=0,
    )
    raw = dict(key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw",
               partitions=opts.partitions)
    turns = app.topic(opts.turns_topic, **raw)  # type: ignore[arg-type]
    phrases = app.topic(opts.phrases_topic, **raw)  # type: ignore[arg-type]
    dlq = app.topic(opts.dlq_topic, **raw)  # type: ignore[arg-type]
    table_opts: dict[str, Any] = dict(default=None, partitions=opts.partitions,
                                      use_partitioner=True, key_type=bytes)
    contexts = TableContextStore(app.Table("context", **table_opts),
                                 procs.stage1.settings.history_turns)
    procs.stage1.contexts = contexts

    async def send_dlq(**kwargs: Any) -> None:
        await (await dlq.send(**kwargs))

    async def forward(records: Any, _report: Any) -> None:
        engine = procs.stage1.sink.engine
        ids = assistant_turn_ids(records, procs.stage1.settings.max_text_chars)
        messages = await stage1.run_blocking(stored_phrases, engine, ids)
        futures = [await phrases.send(key=k, value=v) for k, v in messages]
        await asyncio.gather(*futures)

    async def admit(messages: Any) -> list[bool]:
        return await app.consumer.admit(messages)  # type: ignore[attr-defined,no-any-return]

    # The stored replies go to `phrases` even without stage 2: `chatmon judge --kafka` reads them.
    stage1 = Stage("stage1", procs.stage1, [contexts], stats, send_dlq, forward,
                   get_metrics().track, admit)

    @app.agent(turns, name="score_turns")
    async def score_turns(stream: Any) -> None:
        async for events in stream.take_events(opts.batch_size, within=opts.within_s):
            await stage1.handle(events)

    if procs.stage2 is not None:
        state = TableStateStore(app.Table("repetition", **table_opts))
        procs.stage2.state = state
        stage2 = Stage("stage2", procs.stage2, [state], stats, send_dlq, admit=admit)

        @app.agent(phrases, name="track_repetition")
        async def track_repetition(stream: Any) -> None:
            async for events in stream.take_events(opts.batch_size, within=opts.within_s):
                await stage2.handle(events)

    @app.timer(RAW_PURGE_INTERVAL_S)
    async def purge_raw() -> None:
        """A worker runs for weeks: opt-in raw text must expire while it does."""
        if procs.stage1.settings.keep_raw_text:
            try:
                await stage1.run_blocking(procs.stage1.sink.purge_expired_raw)
            except SinkError as exc:  # the store is down: the next tick tries again
                log.warning("raw text purge failed: %s", exc)

    contexts.owns = owned = Owned(app, contexts.table, opts.partitions)
    tables = [(stage1, CONTEXT, lambda req: forget_contexts(contexts, req), owned)]
    if procs.stage2 is not None:
        state.owns = owned = Owned(app, state.table, opts.partitions)
        detectors = procs.stage2.suite.detectors
        tables.append((stage2, STATE, lambda req: forget_state(state, detectors, req), owned))
    if opts.otlp_topic:
        from pipeline.kafka import otel

        otel.add_agent(app, opts.otlp_topic, opts.otlp_encoding, opts.batch_size, opts.within_s,
                       opts.partitions, procs.stage1.settings, stats, turns, dlq, admit)
    _lifecycle(app, opts, procs, tables)
    own = [opts.turns_topic, opts.phrases_topic, opts.otlp_topic]
    _observability(app, stats, {t for t in own if t})
    return app


def _lifecycle(app: faust.App, opts: WorkerOptions, procs: Processors, tables: Any) -> None:
    settings = procs.stage1.settings
    lifecycle = WorkerLifecycle(app, procs.stage1.sink.engine,
                                Retention.from_policy(procs.stage1.policy), opts.group, tables)

    @app.timer(settings.deletion_poll_s)
    async def apply_deletions() -> None:
        """chatmon purge, run anywhere, reaches this worker's Tables."""
        try:
            await lifecycle.poll()
        except SinkError as exc:  # the store is down: the next tick tries again
            log.warning("deletion records: %s", exc)

    @app.timer(settings.purge_interval_s)
    async def expire() -> None:
        try:
            await lifecycle.expire()
        except SinkError as exc:
            log.warning("scheduled expiry failed: %s", exc)


def _observability(app: faust.App, stats: WorkerStats, topics: set[str]) -> None:
    @app.page(HEALTH_PATH)
    async def health(web: Any, request: Any) -> Any:
        """Liveness: the worker's event loop answers. A sink outage is reported, not fatal
        (restarting would not help; the worker retries with backoff)."""
        return web.json(stats.snapshot())

    @app.page(METRICS_PATH)
    async def metrics(web: Any, request: Any) -> Any:
        body, content_type = render_latest()
        return web.bytes(body, headers={"Content-Type": content_type})

    @app.page(READY_PATH)
    async def ready(web: Any, request: Any) -> Any:
        snap = stats.snapshot()
        return web.json(snap, status=200 if snap["ready"] else 503)

    @app.timer(2.0)
    async def poll_lag() -> None:
        consumer = app.consumer
        tps = [tp for tp in consumer.assignment() if tp.topic in topics]
        highwaters = {(tp.topic, tp.partition): consumer.highwater(tp) or 0 for tp in tps}
        known = getattr(consumer, "_committed_offset", {})
        committed = {(tp.topic, tp.partition): known.get(tp) for tp in tps}
        lag = stats.update_lag(highwaters, committed)
        stats.offset_rereads = getattr(consumer, "rereads", 0)
        gauges = get_metrics()
        for key, behind in lag.by_partition.items():
            topic, partition = key.rsplit(":", 1)
            gauges.set_consumer_lag(topic, int(partition), behind)

    @app.task
    async def mark_ready() -> None:
        stats.ready = True
