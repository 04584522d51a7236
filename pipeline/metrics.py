"""Prometheus metrics: every metric name in one place, the collectors, and the batch observer.

Names are the series names as PromQL sees them (counters end in ``_total``). Dashboards and the
alert rules (``pipeline/alerts/rules.py``) import them from here.

Label cardinality is bounded: ``bot`` and ``tenant`` values go through :class:`LabelCap` (the
first ``max_values`` distinct values are kept, later ones become ``other``); conversation ids and
text never become labels.

How each runtime wires it (one process-wide :func:`get_metrics` instance on prometheus_client's
default registry):

- embedded ``chatmon run``/``chatmon serve``: ``Processor(on_batch=get_metrics().on_batch)``
  and ``with get_metrics().track(len(records)): processor.process(records)`` around each batch
  (received events, batch latency, sink errors). ``serve`` mounts :func:`asgi_app` at
  ``/metrics``; ``run --metrics-port`` calls :func:`start_http_server`.
- faust workers (``pipeline/kafka/``): the same two calls around ``Processor.process`` (a
  second stage that re-scores stage 1's turns uses ``on_findings_batch`` instead); report
  consumer lag with ``get_metrics().set_consumer_lag(topic, partition, lag)``; expose the
  registry on the worker's web port with ``@app.page("/metrics")`` returning
  ``render_latest()`` (body and content type).

Listeners (the embedded alert engine) receive the same events: ``get_metrics().add_listener(x)``
where ``x`` has ``received(n)``, ``on_batch(report)`` and ``sink_error()``, and optionally
``judged(label, bot, agree)`` (the judge's agreement with the classifiers).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from pipeline.errors import SinkError

if TYPE_CHECKING:
    from pipeline.scoring.process import BatchReport

PREFIX = "chatmon_"
EVENTS_RECEIVED = "chatmon_events_received_total"
EVENTS_PROCESSED = "chatmon_events_processed_total"
TURNS_PROCESSED = "chatmon_turns_processed_total"
FINDINGS = "chatmon_findings_total"
FLAGGED_TURNS = "chatmon_flagged_turns_total"
EMPATHY_SCORE = "chatmon_empathy_score"
DETECTOR_SECONDS = "chatmon_detector_batch_seconds"
DETECTOR_ERRORS = "chatmon_detector_errors_total"
DEAD_LETTERS = "chatmon_dead_letters_total"
SINK_ERRORS = "chatmon_sink_errors_total"
BATCH_SECONDS = "chatmon_batch_seconds"
CONSUMER_LAG = "chatmon_consumer_lag"
LABEL_VALUES_CAPPED = "chatmon_label_values_capped_total"
NOT_SCORED_LANGUAGE = "chatmon_turns_not_scored_language_total"
SUPPRESSED = "chatmon_findings_suppressed_total"
POLICY_INFO = "chatmon_policy_info"
REDACTION_FAILURES = "chatmon_redaction_failures_total"
# The judge (pipeline/judge/, docs/judge.md): requests by outcome, verdicts by where they came
# from, tokens, and judge-vs-classifier pairs (agree = same flag) for the agreement alert.
JUDGE_REQUESTS = "chatmon_judge_requests_total"
JUDGE_VERDICTS = "chatmon_judge_verdicts_total"
JUDGE_TOKENS = "chatmon_judge_tokens_total"
JUDGE_PAIRS = "chatmon_judge_pairs_total"
PURGED_ROWS = "chatmon_purged_rows_total"
EVENTS_DROPPED = "chatmon_events_dropped_total"
# OTLP trace ingest (pipeline/ingest/otel_http.py, docs/otel.md), over HTTP and Kafka alike:
# spans by outcome, and the messages of chat spans that are not turns, by kind.
OTEL_SPANS = "chatmon_otel_spans_total"
OTEL_MESSAGES_SKIPPED = "chatmon_otel_messages_skipped_total"

ALL_METRICS = (EVENTS_RECEIVED, EVENTS_PROCESSED, TURNS_PROCESSED, FINDINGS, FLAGGED_TURNS,
               EMPATHY_SCORE, DETECTOR_SECONDS, DETECTOR_ERRORS, DEAD_LETTERS, SINK_ERRORS,
               BATCH_SECONDS, CONSUMER_LAG, LABEL_VALUES_CAPPED, NOT_SCORED_LANGUAGE, SUPPRESSED,
               POLICY_INFO, REDACTION_FAILURES, JUDGE_REQUESTS, JUDGE_VERDICTS, JUDGE_TOKENS,
               JUDGE_PAIRS, PURGED_ROWS, EVENTS_DROPPED, OTEL_SPANS, OTEL_MESSAGES_SKIPPED)

EMPATHY_LABEL = "empathy.score"
MAX_LABEL_VALUES = 200
OTHER = "other"
NONE = "none"
SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Listener(Protocol):
    def received(self, n: int) -> None: ...

    def on_batch(self, report: BatchReport) -> None: ...

    def sink_error(self) -> None: ...


class LabelCap:
    """Keeps the first ``max_values`` distinct values of one label; later ones map to ``other``.
    An empty value maps to ``none``."""

    def __init__(self, max_values: int = MAX_LABEL_VALUES) -> None:
        self.max_values = max_values
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self.capped = 0

    def __call__(self, value: str | None) -> str:
        if not value:
            return NONE
        if value in self._seen:
            return value
        with self._lock:
            if len(self._seen) < self.max_values:
                self._seen.add(value)
                return value
            self.capped += 1
            return OTHER


def _name(series: str) -> str:
    """prometheus_client adds ``_total`` to counters itself."""
    return series.removesuffix("_total")


class PipelineMetrics:
    """The collectors on one registry, and the observer that updates them from batch reports."""

    def __init__(self, registry: CollectorRegistry = REGISTRY,
                 max_label_values: int = MAX_LABEL_VALUES) -> None:
        self.registry = registry
        self.bots = LabelCap(max_label_values)
        self.tenants = LabelCap(max_label_values)
        self.listeners: list[Listener] = []
        r = registry
        self.received_c = Counter(_name(EVENTS_RECEIVED), "Events handed to the pipeline "
                                  "(before validation).", registry=r)
        self.processed_c = Counter(_name(EVENTS_PROCESSED), "Events through the processing "
                                   "function (stored, skipped or dead-lettered).", registry=r)
        self.turns_c = Counter(_name(TURNS_PROCESSED), "Valid turns stored.",
                               ["bot", "tenant", "role"], registry=r)
        self.findings_c = Counter(_name(FINDINGS), "Stored findings; flagged=true when the "
                                  "policy threshold is reached.",
                                  ["detector", "label", "bot", "tenant", "flagged"], registry=r)
        self.suppressed_c = Counter(_name(SUPPRESSED), "Findings at their policy threshold "
                                    "that an allow-list entry suppressed (stored unflagged).",
                                    ["detector", "label", "bot", "tenant"], registry=r)
        self.policy_g = Gauge(POLICY_INFO, "1 for the policy version deciding flags in this "
                              "process (findings record it too).", ["version"], registry=r)
        self.flagged_turns_c = Counter(_name(FLAGGED_TURNS), "Turns with at least one flagged "
                                       "finding of a detector.", ["detector", "bot", "tenant"],
                                       registry=r)
        self.empathy_h = Histogram(EMPATHY_SCORE, "empathy.score of assistant turns.", ["bot"],
                                   buckets=SCORE_BUCKETS, registry=r)
        self.detector_h = Histogram(DETECTOR_SECONDS, "Seconds a detector spent on one batch.",
                                    ["detector"], buckets=LATENCY_BUCKETS, registry=r)
        self.detector_errors_c = Counter(_name(DETECTOR_ERRORS), "Turns a detector failed on.",
                                         ["detector"], registry=r)
        self.not_scored_language_c = Counter(
            _name(NOT_SCORED_LANGUAGE), "Turns a detector skipped because it does not read "
            "their language.", ["detector"], registry=r)
        self.dead_letters_c = Counter(_name(DEAD_LETTERS), "Events dead-lettered, by reason.",
                                      ["reason"], registry=r)
        self.redaction_failures_c = Counter(
            _name(REDACTION_FAILURES), "Texts the redaction stage's PII analyser failed on, "
            "alone too, by outcome: masked (turn stored fully masked), dead_lettered (turn "
            "dead-lettered without text), text_masked (metadata or a dead letter's excerpt).",
            ["outcome"], registry=r)
        self.purged_c = Counter(_name(PURGED_ROWS), "Rows purged, by table (or worker table: "
                                "state.context, state.repetition) and reason: expired, "
                                "conversation, tenant, bot.", ["table", "reason"], registry=r)
        self.dropped_c = Counter(_name(EVENTS_DROPPED), "Events not stored, scored nor "
                                 "dead-lettered: deleted (a deletion record covers them), "
                                 "expired (past their tenant's retention).", ["reason"],
                                 registry=r)
        self.sink_errors_c = Counter(_name(SINK_ERRORS), "Batches the store could not write.",
                                     registry=r)
        self.batch_h = Histogram(BATCH_SECONDS, "Seconds to process and store one batch.",
                                 buckets=LATENCY_BUCKETS, registry=r)
        self.lag_g = Gauge(CONSUMER_LAG, "Kafka consumer lag in messages.",
                           ["topic", "partition"], registry=r)
        self.capped_c = Counter(_name(LABEL_VALUES_CAPPED), "Label values replaced by 'other' "
                                "because the label reached its cap.", ["label"], registry=r)
        self.judge_requests_c = Counter(
            _name(JUDGE_REQUESTS), "Judge requests by outcome: ok, unusable (an answer that is "
            "not the JSON asked for), refused (4xx), unavailable (after retries), "
            "over_budget (not sent).", ["model", "outcome"], registry=r)
        self.judge_verdicts_c = Counter(_name(JUDGE_VERDICTS), "judge.* findings stored, by "
                                        "source: endpoint or cache.", ["label", "source"],
                                        registry=r)
        self.judge_tokens_c = Counter(_name(JUDGE_TOKENS), "Tokens the judge endpoint "
                                      "reported (or estimated where it did not).", ["model"],
                                      registry=r)
        self.judge_pairs_c = Counter(_name(JUDGE_PAIRS), "Judged replies that also have the "
                                     "rubric's classifier finding; agree=true when they agree "
                                     "on the rubric's scale (the same level, or within one on "
                                     "scales of five or more).", ["label", "bot", "agree"],
                                     registry=r)
        self.otel_spans_c = Counter(
            _name(OTEL_SPANS), "OTLP spans received, by outcome: chat (turns emitted), "
            "no_content (a GenAI span with content capture off), not_chat (other spans of the "
            "trace), refused (a span or one of its turns refused).", ["outcome"], registry=r)
        self.otel_skipped_c = Counter(
            _name(OTEL_MESSAGES_SKIPPED), "Messages of OTLP chat spans that are not turns, by "
            "kind: system, tool, tool_calls, other_choices, no_text, other_role.", ["kind"],
            registry=r)

    def add_listener(self, listener: Listener) -> None:
        self.listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        if listener in self.listeners:
            self.listeners.remove(listener)

    def received(self, n: int) -> None:
        self.received_c.inc(n)
        for lst in self.listeners:
            lst.received(n)

    def sink_error(self) -> None:
        self.sink_errors_c.inc()
        for lst in self.listeners:
            lst.sink_error()

    def judge_request(self, model: str, outcome: str, tokens: int = 0) -> None:
        self.judge_requests_c.labels(model=model, outcome=outcome).inc()
        if tokens:
            self.judge_tokens_c.labels(model=model).inc(tokens)

    def judged(self, label: str, source: str, bot: str | None, agree: bool | None) -> None:
        """One judge.* finding stored; ``agree``: whether it agrees with the classifier's finding
        on the rubric's scale (``pipeline.judge.agreement.agrees``; None: the turn has no
        finding of the rubric's classifier label)."""
        self.judge_verdicts_c.labels(label=label, source=source).inc()
        if agree is not None:
            self.judge_pairs_c.labels(label=label, bot=self.bots(bot),
                                      agree=str(agree).lower()).inc()
            for lst in self.listeners:
                hook = getattr(lst, "judged", None)
                if hook is not None:
                    hook(label, self.bots(bot), agree)

    def otel_received(self, outcomes: dict[str, int], skipped: dict[str, int]) -> None:
        """One OTLP export mapped: its spans by outcome, its non-turn messages by kind."""
        for outcome, n in outcomes.items():
            if n > 0:
                self.otel_spans_c.labels(outcome=outcome).inc(n)
        for kind, n in skipped.items():
            if n > 0:
                self.otel_skipped_c.labels(kind=kind).inc(n)

    def purged(self, table: str, reason: str, n: int) -> None:
        """``Purger(on_rows=...)``: rows a purge removed."""
        self.purged_c.labels(table=table, reason=reason).inc(n)

    def set_consumer_lag(self, topic: str, partition: int, lag: int) -> None:
        self.lag_g.labels(topic=topic, partition=str(partition)).set(lag)

    @contextmanager
    def track(self, n_records: int) -> Iterator[None]:
        """Around one call of ``Processor.process``: counts the events received before
        processing (so a stalled pipeline shows input without output), the batch latency, and
        a failing store."""
        self.received(n_records)
        t0 = time.perf_counter()
        try:
            yield
        except SinkError:
            self.sink_error()
            raise
        finally:
            self.batch_h.observe(time.perf_counter() - t0)

    def on_batch(self, report: BatchReport) -> None:
        """The ``Processor(on_batch=...)`` observer."""
        self.processed_c.inc(report.records)
        if report.policy_version:
            self.policy_g.labels(version=report.policy_version).set(1)
        for row in report.turn_rows:
            self.turns_c.labels(bot=self._bot(row), tenant=self._tenant(row),
                                role=row["role"]).inc()
        self._findings(report.finding_rows)
        for det, seconds in report.detector_seconds.items():
            self.detector_h.labels(detector=det).observe(seconds)
        for det, n in report.detector_errors.items():
            self.detector_errors_c.labels(detector=det).inc(n)
        for det, n in report.language_skipped.items():
            self.not_scored_language_c.labels(detector=det).inc(n)
        for reason, n in report.dead_letters.items():
            self.dead_letters_c.labels(reason=reason).inc(n)
        for outcome, n in report.redaction_failures.items():
            self.redaction_failures_c.labels(outcome=outcome).inc(n)
        for reason, n in report.dropped.items():
            self.dropped_c.labels(reason=reason).inc(n)
        for lst in self.listeners:
            lst.on_batch(report)

    def on_findings_batch(self, report: BatchReport) -> None:
        """The observer for a later stage that re-scores turns stage 1 already counted (the
        faust repetition stage): its findings, timings, errors and dead letters count; its
        events and turns do not (they would be counted twice)."""
        self.on_batch(replace(report, records=0, turn_rows=[]))

    def _findings(self, rows: list[dict[str, Any]]) -> None:
        flagged_turns: set[tuple[str, str, str, str]] = set()
        for row in rows:
            bot, tenant = self._bot(row), self._tenant(row)
            flagged = bool(row["flagged"])
            self.findings_c.labels(detector=row["detector"], label=row["label"], bot=bot,
                                   tenant=tenant, flagged=str(flagged).lower()).inc()
            if flagged:
                flagged_turns.add((row["turn_id"], row["detector"], bot, tenant))
            if row.get("suppressed"):
                self.suppressed_c.labels(detector=row["detector"], label=row["label"], bot=bot,
                                         tenant=tenant).inc()
            if row["label"] == EMPATHY_LABEL:
                self.empathy_h.labels(bot=bot).observe(float(row["score"]))
        for _, det, bot, tenant in flagged_turns:
            self.flagged_turns_c.labels(detector=det, bot=bot, tenant=tenant).inc()

    def _bot(self, row: dict[str, Any]) -> str:
        return self._capped(self.bots, "bot", row.get("bot_id"))

    def _tenant(self, row: dict[str, Any]) -> str:
        return self._capped(self.tenants, "tenant", row.get("tenant"))

    def _capped(self, cap: LabelCap, label: str, value: str | None) -> str:
        out = cap(value)
        if out == OTHER and value != OTHER:
            self.capped_c.labels(label=label).inc()
        return out


_DEFAULT: PipelineMetrics | None = None
_DEFAULT_LOCK = threading.Lock()


def get_metrics() -> PipelineMetrics:
    """The process-wide instance on prometheus_client's default registry (created once)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = PipelineMetrics(REGISTRY)
        return _DEFAULT


def render_latest(registry: CollectorRegistry = REGISTRY) -> tuple[bytes, str]:
    """The exposition body and its content type, for any web framework's ``/metrics`` page."""
    return generate_latest(registry), CONTENT_TYPE_LATEST


def asgi_app(registry: CollectorRegistry = REGISTRY) -> Any:
    """An ASGI app serving the registry (``chatmon serve`` mounts it at ``/metrics``)."""
    from prometheus_client import make_asgi_app

    return make_asgi_app(registry)


def start_http_server(port: int, addr: str = "127.0.0.1",
                      registry: CollectorRegistry = REGISTRY) -> str:
    """Serve ``/metrics`` from a background thread; returns the endpoint URL."""
    from prometheus_client import start_http_server as _start

    server, _thread = _start(port, addr=addr, registry=registry)
    return f"http://{addr}:{server.server_port}/metrics"
