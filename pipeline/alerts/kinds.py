"""In-process evaluation of each rule kind: the Python twin of ``promql.py``'s expressions.

Each function gets the rule and the observed windows and returns the groups (label sets) for
which the rule's condition holds now, with the value the summary reports and the counts behind
it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pipeline.alerts.rules import AlertRule
from pipeline.alerts.windows import Buckets, Evidence, Group

# Series names of the embedded store (the counterparts of the Prometheus metrics).
RECEIVED = "received"
PROCESSED = "processed"
ASSISTANT = "assistant_turns"
FINDING = "flagged_findings"
FLAGGED_TURNS = "flagged_turns"
EMPATHY = "empathy"
DEAD_LETTERS = "dead_letters"
DETECTOR_ERRORS = "detector_errors"
SINK_ERRORS = "sink_errors"
REDACTION_FAILURES = "redaction_failures"
JUDGE_PAIRS = "judge_pairs"  # labels: label, bot, agree


@dataclass
class Observed:
    short: Buckets
    long: Buckets
    evidence: Evidence = field(default_factory=Evidence)


@dataclass(frozen=True)
class Hit:
    group: dict[str, str]
    value: float
    counts: dict[str, float]


def _group(rule: AlertRule, key: Group) -> dict[str, str]:
    return dict(zip(rule.by, key, strict=True))


def count(rule: AlertRule, o: Observed, now: float) -> list[Hit]:
    found = o.short.sum_by(FINDING, rule.by, rule.window_s, now, {"label": rule.label})
    return [Hit(_group(rule, g), n, {"flagged_findings": n})
            for g, (n, _) in found.items() if n >= rule.threshold]


def _shares(rule: AlertRule, store: Buckets, window_s: float,
            now: float) -> dict[Group, tuple[float, float]]:
    num = store.sum_by(FLAGGED_TURNS, rule.by, window_s, now, {"detector": rule.detector})
    den = store.sum_by(ASSISTANT, rule.by, window_s, now)
    return {g: (num.get(g, (0.0, 0.0))[0], d) for g, (d, _) in den.items()}


def ratio(rule: AlertRule, o: Observed, now: float) -> list[Hit]:
    out = []
    for g, (flagged, turns) in _shares(rule, o.short, rule.window_s, now).items():
        if turns >= max(rule.min_volume, 1) and flagged / turns > rule.threshold:
            out.append(Hit(_group(rule, g), flagged / turns,
                           {"flagged_turns": flagged, "assistant_turns": turns}))
    return out


def baseline_drop(rule: AlertRule, o: Observed, now: float) -> list[Hit]:
    cur = o.short.sum_by(EMPATHY, rule.by, rule.window_s, now)
    base = o.long.sum_by(EMPATHY, rule.by, rule.baseline_s, now)
    out = []
    for g, (total, n) in cur.items():
        b_total, b_n = base.get(g, (0.0, 0.0))
        if n < max(rule.min_volume, 1) or b_n <= 0 or b_total <= 0:
            continue
        rel = (total / n) / (b_total / b_n)
        if rel < rule.threshold:
            out.append(Hit(_group(rule, g), rel, {
                "scored_turns": n, "mean_score": round(total / n, 4),
                "baseline_mean_score": round(b_total / b_n, 4), "baseline_turns": b_n}))
    return out


def spike(rule: AlertRule, o: Observed, now: float) -> list[Hit]:
    base = _shares(rule, o.long, rule.baseline_s, now)
    out = []
    for g, (flagged, turns) in _shares(rule, o.short, rule.window_s, now).items():
        if turns < max(rule.min_volume, 1):
            continue
        share = flagged / turns
        b_flagged, b_turns = base.get(g, (0.0, 0.0))
        b_share = b_flagged / b_turns if b_turns else 0.0
        if share > rule.threshold and share > rule.factor * b_share:
            out.append(Hit(_group(rule, g), share, {
                "flagged_turns": flagged, "assistant_turns": turns,
                "baseline_share": round(b_share, 4)}))
    return out


def stalled(rule: AlertRule, o: Observed, now: float) -> list[Hit]:
    received = o.short.total(RECEIVED, rule.window_s, now)
    processed = o.short.total(PROCESSED, rule.window_s, now)
    if received > 0 and processed == 0:
        return [Hit({}, received, {"received": received, "processed": 0})]
    return []


def dead_letter_ratio(rule: AlertRule, o: Observed, now: float) -> list[Hit]:
    received = o.short.total(RECEIVED, rule.window_s, now)
    dead = o.short.total(DEAD_LETTERS, rule.window_s, now)
    if received >= max(rule.min_volume, 1) and dead / received > rule.threshold:
        return [Hit({}, dead / received, {"dead_letters": dead, "received": received})]
    return []


def error_ratio(rule: AlertRule, o: Observed, now: float) -> list[Hit]:
    processed = o.short.total(PROCESSED, rule.window_s, now)
    out = []
    for g, (errors, _) in o.short.sum_by(DETECTOR_ERRORS, rule.by, rule.window_s, now).items():
        share = errors / processed if processed else 1.0
        if errors > 0 and share > rule.threshold:
            out.append(Hit(_group(rule, g), share,
                           {"detector_errors": errors, "processed": processed}))
    return out


def sink_errors(rule: AlertRule, o: Observed, now: float) -> list[Hit]:
    n = o.short.total(SINK_ERRORS, rule.window_s, now)
    return [Hit({}, n, {"sink_errors": n})] if n >= rule.threshold else []


def redaction_failures(rule: AlertRule, o: Observed, now: float) -> list[Hit]:
    n = o.short.total(REDACTION_FAILURES, rule.window_s, now)
    return [Hit({}, n, {"redaction_failures": n})] if n >= rule.threshold else []


def _agreed(rule: AlertRule, store: Buckets, window_s: float,
            now: float) -> dict[Group, tuple[float, float]]:
    total = store.sum_by(JUDGE_PAIRS, rule.by, window_s, now)
    agree = store.sum_by(JUDGE_PAIRS, rule.by, window_s, now, {"agree": "true"})
    return {g: (agree.get(g, (0.0, 0.0))[0], n) for g, (n, _) in total.items()}


def agreement_drop(rule: AlertRule, o: Observed, now: float) -> list[Hit]:
    base = _agreed(rule, o.long, rule.baseline_s, now)
    out = []
    for g, (agree, n) in _agreed(rule, o.long, rule.window_s, now).items():
        b_agree, b_n = base.get(g, (0.0, 0.0))
        if n < max(rule.min_volume, 1) or b_n <= 0 or b_agree <= 0:
            continue
        share, b_share = agree / n, b_agree / b_n
        if share < rule.threshold * b_share:
            out.append(Hit(_group(rule, g), share, {
                "judged": n, "agree": agree, "baseline_share": round(b_share, 4),
                "baseline_judged": b_n}))
    return out


KINDS: dict[str, Callable[[AlertRule, Observed, float], list[Hit]]] = {
    "count": count, "ratio": ratio, "baseline_drop": baseline_drop, "spike": spike,
    "stalled": stalled, "dead_letter_ratio": dead_letter_ratio, "error_ratio": error_ratio,
    "sink_errors": sink_errors, "redaction_failures": redaction_failures,
    "agreement_drop": agreement_drop,
}
