"""*chatmon on-call*: live health from Prometheus. Every metric name comes from
:mod:`pipeline.metrics`, so a renamed series breaks this build, not the dashboard."""

from __future__ import annotations

from dashboards.builder import (
    PROMETHEUS,
    Json,
    Panel,
    PromQuery,
    dashboard,
    row,
    signal_colours,
    stat,
    timeseries,
)
from pipeline import metrics as m

UID = "chatmon-oncall"
W = "[5m]"


def _rate(name: str, by: str, selector: str = "") -> str:
    return f"sum by ({by}) (rate({name}{selector}{W}))"


def _quantile(q: float, name: str, by: str = "") -> str:
    group = f"le, {by}" if by else "le"
    return f"histogram_quantile({q}, sum by ({group}) (rate({name}_bucket{W})))"


def _traffic() -> list[Panel]:
    return [
        row("Traffic and findings"),
        stat("Events in (per s)", PromQuery(f"sum(rate({m.EVENTS_RECEIVED}{W}))"), unit="ops"),
        stat("Events processed (per s)", PromQuery(f"sum(rate({m.EVENTS_PROCESSED}{W}))"),
             unit="ops"),
        stat("Dead letters (last hour)", PromQuery(f"sum(increase({m.DEAD_LETTERS}[1h]))"),
             red_above=1),
        stat("Sink errors (last hour)", PromQuery(f"sum(increase({m.SINK_ERRORS}[1h]))"),
             red_above=1),
        timeseries("Flagged findings per bot (per s)",
                   PromQuery(_rate(m.FINDINGS, "bot", '{flagged="true"}'), "{{bot}}"),
                   unit="ops", description="Findings at or above their policy threshold."),
        timeseries("Flagged turns per detector (per s)",
                   PromQuery(_rate(m.FLAGGED_TURNS, "detector"), "{{detector}}"), unit="ops",
                   overrides=signal_colours()),
        timeseries("Suppressed by the policy allow-list (per s)",
                   PromQuery(_rate(m.SUPPRESSED, "tenant, label"), "{{tenant}} {{label}}"),
                   unit="ops", description="Findings at their threshold that an allow-list "
                                           "entry covered: stored unflagged, never paged."),
        timeseries("Turns stored per bot (per s)",
                   PromQuery(_rate(m.TURNS_PROCESSED, "bot, role"), "{{bot}} {{role}}"),
                   unit="ops"),
        timeseries("Median empathy per bot",
                   PromQuery(_quantile(0.5, m.EMPATHY_SCORE, "bot"), "{{bot}}"),
                   unit="percentunit"),
    ]


def _health() -> list[Panel]:
    return [
        row("Latency, lag and failures"),
        timeseries("Batch latency",
                   PromQuery(_quantile(0.5, m.BATCH_SECONDS), "p50"),
                   PromQuery(_quantile(0.99, m.BATCH_SECONDS), "p99"), unit="s"),
        timeseries("Detector latency p99 per batch",
                   PromQuery(_quantile(0.99, m.DETECTOR_SECONDS, "detector"), "{{detector}}"),
                   unit="s", overrides=signal_colours()),
        timeseries("Consumer lag (messages)",
                   PromQuery(f"sum by (topic) ({m.CONSUMER_LAG})", "{{topic}}")),
        timeseries("Dead letters by reason (per 5 min)",
                   PromQuery(f"sum by (reason) (increase({m.DEAD_LETTERS}{W}))", "{{reason}}"),
                   bars=True),
        timeseries("Detector errors (turns per s)",
                   PromQuery(_rate(m.DETECTOR_ERRORS, "detector"), "{{detector}}"), unit="ops",
                   overrides=signal_colours()),
        timeseries("Turns not scored: language the detector does not read (per s)",
                   PromQuery(_rate(m.NOT_SCORED_LANGUAGE, "detector"), "{{detector}}"),
                   unit="ops", overrides=signal_colours()),
        timeseries("Sink errors, redaction failures, capped label values (per s)",
                   PromQuery(f"sum(rate({m.SINK_ERRORS}{W}))", "sink errors"),
                   PromQuery(_rate(m.REDACTION_FAILURES, "outcome"),
                             "redaction failed: {{outcome}}"),
                   PromQuery(_rate(m.LABEL_VALUES_CAPPED, "label"), "capped {{label}}"),
                   unit="ops"),
    ]


def build() -> Json:
    return dashboard(UID, "chatmon on-call", _traffic() + _health(), default_source=PROMETHEUS,
                     description="Live pipeline health from Prometheus: finding rates per bot, "
                                 "latency, consumer lag, dead letters and errors.",
                     time_from="now-6h", refresh="30s", tags=("chatmon", "on-call"))
