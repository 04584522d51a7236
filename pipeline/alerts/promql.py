"""The rules of ``rules.py`` as Prometheus alerting rules (YAML).

``python -m pipeline.alerts.promql > deploy/prometheus/chatmon-alerts.rules.yml`` re-renders the
shipped file; a test checks the committed file equals this output and runs ``promtool check
rules`` on it.

Counters that appear for the first time (a bot's first leak) have no earlier sample, so
``increase()`` alone misses them; the count rule also fires on series younger than the window
(``x unless x offset <window>``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

from pipeline import metrics as m
from pipeline.alerts.rules import RATIO_KINDS, RULES, AlertRule, duration

GROUP = "chatmon"
RUNBOOK_DOC = "docs/alerts.md#{anchor}"


def _by(rule: AlertRule) -> str:
    return f"sum by ({', '.join(rule.by)})" if rule.by else "sum"


def _sel(series: str, **labels: str) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return f"{series}{{{inner}}}" if inner else series


def _incr(rule: AlertRule, series: str, window: str | None = None, **labels: str) -> str:
    w = window or duration(rule.window_s)
    return f"{_by(rule)} (increase({_sel(series, **labels)}[{w}]))"


def _count(rule: AlertRule) -> str:
    sel = _sel(m.FINDINGS, label=rule.label, flagged="true")
    w = duration(rule.window_s)
    new = f"{_by(rule)} ({sel} unless {sel} offset {w})"
    return f"{_incr(rule, m.FINDINGS, label=rule.label, flagged='true')} >= {rule.threshold:g}" \
           f"\nor\n{new} >= {rule.threshold:g}"


def _share(rule: AlertRule, window: str | None = None) -> str:
    num = _incr(rule, m.FLAGGED_TURNS, window, detector=rule.detector)
    den = _incr(rule, m.TURNS_PROCESSED, window, role="assistant")
    return f"({num}\n  / {den})"


def _volume(rule: AlertRule) -> str:
    on = f"on ({', '.join(rule.by)}) " if rule.by else ""
    return (f"and {on}{_incr(rule, m.TURNS_PROCESSED, role='assistant')} "
            f">= {rule.min_volume:g}")


def _ratio(rule: AlertRule) -> str:
    return f"{_share(rule)} > {rule.threshold:g}\n{_volume(rule)}"


def _mean(rule: AlertRule, window: str) -> str:
    return (f"({_by(rule)} (rate({m.EMPATHY_SCORE}_sum[{window}]))\n"
            f"  / {_by(rule)} (rate({m.EMPATHY_SCORE}_count[{window}])))")


def _baseline_drop(rule: AlertRule) -> str:
    w, b = duration(rule.window_s), duration(rule.baseline_s)
    on = f"on ({', '.join(rule.by)}) "
    return (f"{_mean(rule, w)}\n< {rule.threshold:g} * {_mean(rule, b)}\n"
            f"and {on}{_by(rule)} (increase({m.EMPATHY_SCORE}_count[{w}])) "
            f">= {rule.min_volume:g}")


def _spike(rule: AlertRule) -> str:
    b = duration(rule.baseline_s)
    return (f"{_share(rule)} > {rule.threshold:g}\nand {_share(rule)}\n"
            f"  > {rule.factor:g} * {_share(rule, b)}\n{_volume(rule)}")


def _stalled(rule: AlertRule) -> str:
    w = duration(rule.window_s)
    return (f"increase({m.EVENTS_RECEIVED}[{w}]) > 0\n"
            f"unless increase({m.EVENTS_PROCESSED}[{w}]) > 0")


def _dead_letter_ratio(rule: AlertRule) -> str:
    w = duration(rule.window_s)
    received = f"increase({m.EVENTS_RECEIVED}[{w}])"
    return (f"sum without (reason) (increase({m.DEAD_LETTERS}[{w}]))\n  / {received}"
            f" > {rule.threshold:g}\nand {received} >= {rule.min_volume:g}")


def _error_ratio(rule: AlertRule) -> str:
    w = duration(rule.window_s)
    return (f"{_incr(rule, m.DETECTOR_ERRORS)}\n"
            f"  / scalar(sum(increase({m.EVENTS_PROCESSED}[{w}]))) > {rule.threshold:g}")


def _sink_errors(rule: AlertRule) -> str:
    return f"{_incr(rule, m.SINK_ERRORS)} >= {rule.threshold:g}"


def _redaction_failures(rule: AlertRule) -> str:
    # The first failure creates the series: `unless ... offset` catches a counter born inside
    # the window, which increase() alone misses (as for the count rule).
    w = duration(rule.window_s)
    series = m.REDACTION_FAILURES
    return (f"{_incr(rule, series)} >= {rule.threshold:g}\nor\n"
            f"{_by(rule)} ({series} unless {series} offset {w}) >= {rule.threshold:g}")


def _lag(rule: AlertRule) -> str:
    w = duration(rule.window_s)
    return (f"{_by(rule)} ({m.CONSUMER_LAG}) > {rule.threshold:g}\n"
            f"and {_by(rule)} (delta({m.CONSUMER_LAG}[{w}])) > 0")


def _agreed(rule: AlertRule, window: str) -> str:
    """Share of judge-classifier pairs that agree; disagreements counted, so that a window
    where every pair disagrees (no agree="true" series) still has a value."""
    total = f"{_by(rule)} (increase({m.JUDGE_PAIRS}[{window}]))"
    wrong = f"{_by(rule)} (increase({_sel(m.JUDGE_PAIRS, agree='false')}[{window}]))"
    return f"(1 - ({wrong} or 0 * {total})\n  / {total})"


def _agreement_drop(rule: AlertRule) -> str:
    w, b = duration(rule.window_s), duration(rule.baseline_s)
    on = f"on ({', '.join(rule.by)}) "
    return (f"{_agreed(rule, w)}\n< {rule.threshold:g} * {_agreed(rule, b)}\n"
            f"and {on}{_by(rule)} (increase({m.JUDGE_PAIRS}[{w}])) >= {rule.min_volume:g}")


EXPRESSIONS: dict[str, Callable[[AlertRule], str]] = {
    "count": _count, "ratio": _ratio, "baseline_drop": _baseline_drop, "spike": _spike,
    "stalled": _stalled, "dead_letter_ratio": _dead_letter_ratio, "error_ratio": _error_ratio,
    "sink_errors": _sink_errors, "lag": _lag, "redaction_failures": _redaction_failures,
    "agreement_drop": _agreement_drop,
}


def go_template(text: str, kind: str = "count") -> str:
    """``{bot}`` placeholders as Prometheus template expressions."""
    fmt = "humanizePercentage" if kind in RATIO_KINDS else "humanize"

    def sub(match: re.Match[str]) -> str:
        name = match.group(1)
        return f"{{{{ $value | {fmt} }}}}" if name == "value" else f"{{{{ $labels.{name} }}}}"

    return re.sub(r"\{(\w+)\}", sub, text)


def anchor(rule: AlertRule) -> str:
    return rule.name.lower()


def _q(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid YAML double-quoted scalar


def render_rule(rule: AlertRule) -> list[str]:
    expr = EXPRESSIONS[rule.kind](rule)
    lines = [f"      - alert: {rule.name}", "        expr: |"]
    lines += [f"          {line}" for line in expr.splitlines()]
    if rule.for_s:
        lines.append(f"        for: {duration(rule.for_s)}")
    labels = {"severity": rule.severity, "source": "chatmon"}
    if rule.detector:
        labels["detector"] = rule.detector
    lines.append("        labels:")
    lines += [f"          {k}: {_q(v)}" for k, v in labels.items()]
    lines += [
        "        annotations:",
        f"          summary: {_q(go_template(rule.summary, rule.kind))}",
        f"          runbook: {_q(rule.runbook)}",
        f"          runbook_doc: {_q(RUNBOOK_DOC.format(anchor=anchor(rule)))}",
        f"          window: {_q(duration(rule.window_s))}",
    ]
    return lines


def render_rules(rules: Sequence[AlertRule] = RULES) -> str:
    lines = [
        "# Generated from pipeline/alerts/rules.py by `python -m pipeline.alerts.promql`;",
        "# do not edit by hand (tests/test_alerts_rules.py compares it with the generator).",
        "groups:",
        f"  - name: {GROUP}",
        "    rules:",
    ]
    for rule in rules:
        lines += render_rule(rule)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render_rules(), end="")
