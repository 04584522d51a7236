"""The alerts a stretch of stored traffic would raise, judged at its own timestamps.

``chatmon eval benign`` scores a file in large batches; here its stored turn and finding rows
are handed to the embedded ``AlertEngine`` (the same rules, windows, ``for`` durations and
cooldown as ``chatmon run``) one timestamp at a time, with the engine's clock set to that
timestamp, so a week of traffic is judged as a week and not as the few minutes the scoring
took. In a gap between timestamps the engine is also evaluated once each rule's window after
the last event, as its ticker thread would, so a condition that has cleared resolves before the
next event instead of holding one alert open for the whole file. Only the rules about what the
bot says (those with a detector) are replayed: the pipeline-health rules (stalled input, dead
letters, sink errors) describe this run's machine, not the traffic.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pipeline.alerts.engine import Alert, AlertEngine
from pipeline.alerts.rules import rules
from pipeline.scoring.process import BatchReport
from pipeline.settings import Settings

EVIDENCE_KEPT = 5


class _Recorder:
    """Keeps what the engine would have sent (a stand-in for the webhook, not a test double:
    the engine's own decisions are what is counted)."""

    def __init__(self) -> None:
        self.sent: list[Alert] = []

    def send(self, alert: Alert) -> None:
        self.sent.append(alert)


def _epoch(ts: Any) -> float:
    if isinstance(ts, datetime):
        return (ts if ts.tzinfo else ts.replace(tzinfo=UTC)).timestamp()
    return datetime.fromisoformat(str(ts).replace("Z", "+00:00")).timestamp()


def replay_alerts(turn_rows: Sequence[dict[str, Any]], finding_rows: Sequence[dict[str, Any]],
                  settings: Settings) -> list[dict[str, Any]]:
    """One entry per rule that fired: its severity, how many notifications it sent, and the
    first conversations of its evidence (ids and turn indexes, never text)."""
    now = [0.0]
    recorder = _Recorder()
    signal_rules = [r for r in rules(settings.alert_rules) if r.detector]
    engine = AlertEngine(signal_rules, recorder, cooldown_s=settings.alert_cooldown_s,
                         clock=lambda: now[0])
    by_time: dict[float, BatchReport] = defaultdict(BatchReport)
    for row in turn_rows:
        report = by_time[_epoch(row["ts"])]
        report.records += 1
        report.turn_rows.append(row)
    for row in finding_rows:
        by_time[_epoch(row["ts"])].finding_rows.append(row)
    windows = sorted({r.window_s for r in signal_rules})
    previous = None
    for t in sorted(by_time):
        if previous is not None:  # the ticker's evaluations in a gap: alerts resolve there
            for w in windows:
                if previous + w + 1 < t:
                    now[0] = previous + w + 1
                    engine.evaluate()
        now[0] = previous = t
        engine.on_batch(by_time[t])
    firing = [a for a in recorder.sent if a.status == "firing"]
    counts = Counter(a.rule for a in firing)
    out = []
    for name, n in sorted(counts.items()):
        first = [a for a in firing if a.rule == name]
        out.append({"rule": name, "severity": first[0].severity, "count": n,
                    "evidence": [e for a in first for e in a.evidence][:EVIDENCE_KEPT]})
    return out
