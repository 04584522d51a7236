"""The embedded alert engine: the rules of ``rules.py`` evaluated in process, for runs without
Prometheus.

It listens to the same events as the metrics (``PipelineMetrics.add_listener``): received
events, each stored batch's report, sink errors. Every batch and every ``interval_s`` (a ticker
thread, so alerts also resolve when input stops) it evaluates all rules and hands transitions
to a notifier:

- deduplication: a firing alert (rule + label set = fingerprint) is sent once, not per batch;
- ``for_s``: the condition must hold that long before the alert fires;
- cooldown: after a notification for a fingerprint, the next firing one waits ``cooldown_s``
  (a flapping rule pages once per cooldown, the held alert goes out if it still holds then);
- resolve: when a sent alert's condition clears, a ``resolved`` message follows.

Evidence is conversation ids with turn indexes and labels, never text.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from pipeline.alerts import kinds as k
from pipeline.alerts.rules import LONG_KINDS, RATIO_KINDS, AlertRule
from pipeline.alerts.windows import Buckets, Mark, labels_of
from pipeline.metrics import EMPATHY_LABEL, LabelCap

if TYPE_CHECKING:
    from pipeline.scoring.process import BatchReport

log = logging.getLogger(__name__)
BASELINE_BUCKET_S = 3600.0
SHORT_BUCKETS_PER_WINDOW = 30


@dataclass(frozen=True)
class Alert:
    rule: str
    severity: str
    status: str  # "firing" | "resolved"
    summary: str
    labels: dict[str, str]
    value: float
    counts: dict[str, float]
    window_s: float
    evidence: list[dict[str, Any]]
    fingerprint: str
    runbook: str
    started_at: str
    ended_at: str | None = None


class Notifier(Protocol):
    def send(self, alert: Alert) -> None: ...


@dataclass
class _State:
    pending_since: float | None = None
    sent: Alert | None = None
    last_sent: float = float("-inf")


@dataclass
class AlertEngine:
    rules: Sequence[AlertRule]
    notifier: Notifier
    cooldown_s: float = 300.0
    clock: Callable[[], float] = time.time
    max_label_values: int = 200
    states: dict[str, _State] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rules = [r for r in self.rules if r.embedded]
        fine = [r.window_s for r in self.rules if r.kind not in LONG_KINDS]
        short = max(fine, default=300.0)
        bucket = max(min(fine, default=60.0) / SHORT_BUCKETS_PER_WINDOW, 0.05)
        baseline = max((r.baseline_s for r in self.rules), default=0.0)
        self.observed = k.Observed(Buckets(bucket, short),
                                   Buckets(min(BASELINE_BUCKET_S, baseline / 24 or 1.0),
                                           baseline))
        self.bots, self.tenants = LabelCap(self.max_label_values), LabelCap(self.max_label_values)
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # listener interface (pipeline.metrics.Listener)
    def received(self, n: int) -> None:
        with self._lock:
            self.observed.short.add(k.RECEIVED, (), self.clock(), n)

    def sink_error(self) -> None:
        with self._lock:
            self.observed.short.add(k.SINK_ERRORS, (), self.clock())
        self.evaluate()

    def on_batch(self, report: BatchReport) -> None:
        now = self.clock()
        with self._lock:
            self._record(report, now)
        self.evaluate()

    def judged(self, label: str, bot: str, agree: bool) -> None:
        """A judge.* finding with its classifier counterpart (``PipelineMetrics.judged``)."""
        now = self.clock()
        with self._lock:
            self.observed.long.add(k.JUDGE_PAIRS, labels_of(label=label, bot=bot,
                                                            agree=str(agree).lower()), now)

    def _record(self, report: BatchReport, now: float) -> None:
        o = self.observed
        o.short.add(k.PROCESSED, (), now, report.records)
        for reason, n in report.dead_letters.items():
            o.short.add(k.DEAD_LETTERS, labels_of(reason=reason), now, n)
        for det, n in report.detector_errors.items():
            o.short.add(k.DETECTOR_ERRORS, labels_of(detector=det), now, n)
        for outcome, n in report.redaction_failures.items():
            o.short.add(k.REDACTION_FAILURES, labels_of(outcome=outcome), now, n)
        for conversation_id, turn in report.redaction_failed_turns:
            o.evidence.add("redaction", "failed", Mark(now, conversation_id, turn,
                                                       "redaction_failed", ()))
        for row in report.turn_rows:
            if row["role"] == "assistant":
                self._both(k.ASSISTANT, self._labels(row), now)
        flagged_turns: dict[tuple[str, str], dict[str, Any]] = {}
        for row in report.finding_rows:
            labels = self._labels(row)
            if row["label"] == EMPATHY_LABEL:
                self._both(k.EMPATHY, labels, now, float(row["score"]))
            if not row["flagged"]:
                continue
            o.short.add(k.FINDING, labels_of(label=row["label"], **dict(labels)), now)
            mark = Mark(now, row["conversation_id"], int(row["turn"]), row["label"], labels)
            o.evidence.add("label", row["label"], mark)
            if (row["turn_id"], row["detector"]) not in flagged_turns:
                flagged_turns[(row["turn_id"], row["detector"])] = row
                o.evidence.add("detector", row["detector"], mark)
        for (_, det), row in flagged_turns.items():
            self._both(k.FLAGGED_TURNS, labels_of(detector=det, **dict(self._labels(row))), now)

    def _both(self, series: str, labels: tuple[tuple[str, str], ...], now: float,
              value: float = 1.0) -> None:
        self.observed.short.add(series, labels, now, value)
        self.observed.long.add(series, labels, now, value)

    def _labels(self, row: dict[str, Any]) -> tuple[tuple[str, str], ...]:
        return labels_of(bot=self.bots(row.get("bot_id")), tenant=self.tenants(row.get("tenant")))

    # evaluation
    def evaluate(self) -> list[Alert]:
        """Evaluate every rule now; returns the notifications sent."""
        with self._lock:
            now = self.clock()
            sent: list[Alert] = []
            active: set[str] = set()
            for rule in self.rules:
                for hit in k.KINDS[rule.kind](rule, self.observed, now):
                    fp = fingerprint(rule, hit.group)
                    active.add(fp)
                    alert = self._step(rule, hit, fp, now)
                    if alert is not None:
                        sent.append(alert)
            sent += self._resolve(active, now)
            self._prune(now)
        for alert in sent:
            self.notifier.send(alert)
        return sent

    def _step(self, rule: AlertRule, hit: k.Hit, fp: str, now: float) -> Alert | None:
        st = self.states.setdefault(fp, _State())
        if st.pending_since is None:
            st.pending_since = now
        if st.sent is not None:  # already notified: keep the latest numbers for the resolve
            st.sent = replace(st.sent, value=hit.value, counts=hit.counts)
            return None
        if now - st.pending_since < rule.for_s:
            return None
        if now - st.last_sent < self.cooldown_s:  # held; sent by a later evaluation
            return None
        st.sent = self._alert(rule, hit, fp, now)
        st.last_sent = now
        return st.sent

    def _resolve(self, active: set[str], now: float) -> list[Alert]:
        out = []
        for fp, st in list(self.states.items()):
            if fp in active:
                continue
            st.pending_since = None
            if st.sent is not None:
                out.append(replace(st.sent, status="resolved", ended_at=_iso(now)))
                st.sent, st.last_sent = None, now
            elif now - st.last_sent >= self.cooldown_s:
                del self.states[fp]
        return out

    def _alert(self, rule: AlertRule, hit: k.Hit, fp: str, now: float) -> Alert:
        labels = {**hit.group, "alertname": rule.name, "severity": rule.severity}
        if rule.detector:
            labels["detector"] = rule.detector
        kind, name = ("label", rule.label) if rule.kind == "count" else ("detector", rule.detector)
        if rule.kind == "redaction_failures":
            kind, name = "redaction", "failed"
        marks = self.observed.evidence.find(kind, name, hit.group, rule.window_s, now)
        return Alert(
            rule=rule.name, severity=rule.severity, status="firing",
            summary=summary(rule, labels, hit.value), labels=labels, value=hit.value,
            counts=hit.counts, window_s=rule.window_s,
            evidence=[{"conversation_id": m.conversation_id, "turn": m.turn, "label": m.label}
                      for m in marks],
            fingerprint=fp, runbook=rule.runbook, started_at=_iso(now))

    def _prune(self, now: float) -> None:
        self.observed.short.prune(now)
        self.observed.long.prune(now)
        self.observed.evidence.prune(now, self.observed.short.horizon_s)

    # ticker
    def start(self, interval_s: float) -> None:
        """Evaluate every ``interval_s`` seconds in a daemon thread until :meth:`stop`."""
        self._thread = threading.Thread(target=self._tick, args=(interval_s,),
                                        name="chatmon-alerts", daemon=True)
        self._thread.start()

    def _tick(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            try:
                self.evaluate()
            except Exception as exc:  # alerting must never stop the pipeline
                log.error("alert evaluation failed: %s", type(exc).__name__)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def fingerprint(rule: AlertRule, group: dict[str, str]) -> str:
    key = rule.name + "|" + "|".join(f"{k}={v}" for k, v in sorted(group.items()))
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def summary(rule: AlertRule, labels: dict[str, str], value: float) -> str:
    shown = f"{value:.1%}" if rule.kind in RATIO_KINDS else f"{value:g}"
    return rule.summary.format_map(_Default({**labels, "value": shown}))


class _Default(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "?"


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
