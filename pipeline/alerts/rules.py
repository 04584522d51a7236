"""Every alert rule, its threshold, window and severity: the ONE place.

Both evaluators read this table: ``pipeline/alerts/promql.py`` renders it as Prometheus rules
(``deploy/prometheus/chatmon-alerts.rules.yml``, re-rendered and compared in a test) and
``pipeline/alerts/engine.py`` evaluates the same rules in process over sliding windows when
chatmon runs without Prometheus. Operators override numbers per rule with
``CHATMON_ALERT_RULES='{"ChatmonToxicityRate": {"threshold": 0.1}}'``.

Severities: ``page`` wakes someone (PagerDuty), ``ticket`` goes to the team channel (Slack).
``docs/alerts.md`` has one section per rule, with its runbook line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from pipeline.errors import ConfigError

Severity = Literal["page", "ticket"]
Kind = Literal["count", "ratio", "baseline_drop", "spike", "stalled", "dead_letter_ratio",
               "error_ratio", "sink_errors", "lag", "redaction_failures", "agreement_drop"]
MINUTE = 60.0
HOUR = 3600.0
DAY = 86400.0
RATIO_KINDS = frozenset({"ratio", "baseline_drop", "spike", "dead_letter_ratio", "error_ratio",
                         "agreement_drop"})
# Kinds whose window is hours or days: the embedded engine reads them from its hourly baseline
# buckets, so they do not stretch the fine-grained short window every other rule shares.
LONG_KINDS = frozenset({"agreement_drop"})
TUNABLE = ("threshold", "window_s", "for_s", "min_volume", "baseline_s", "factor")


@dataclass(frozen=True)
class AlertRule:
    name: str
    severity: Severity
    kind: Kind
    # What is measured, over which window, and when it fires (see ``kind`` in promql.py).
    threshold: float
    window_s: float
    summary: str  # {bot} {tenant} {detector} {value} are filled in by both evaluators
    runbook: str  # what to check first: one line
    for_s: float = 0.0
    min_volume: float = 0.0  # turns (or events) the window must hold before a ratio counts
    baseline_s: float = 0.0
    factor: float = 0.0
    detector: str = ""
    label: str = ""
    by: tuple[str, ...] = ("bot", "tenant")
    embedded: bool = True  # False: no data for it without Kafka (consumer lag)


RULES: tuple[AlertRule, ...] = (
    AlertRule(
        "ChatmonPIILeak", "page", "count", threshold=1, window_s=5 * MINUTE,
        detector="pii", label="pii.leak",
        summary="bot {bot} (tenant {tenant}) emitted PII the user did not give: {value} "
                "flagged pii.leak findings",
        runbook="chatmon findings --label pii.leak --bot BOT --flagged: which entity, which "
                "conversations; check the bot's retrieval/context source and pull it if needed",
    ),
    AlertRule(
        "ChatmonSensitiveEcho", "page", "count", threshold=1, window_s=5 * MINUTE,
        detector="pii", label="pii.sensitive_echo",
        summary="bot {bot} (tenant {tenant}) displayed a full card number, SSN, IBAN or a "
                "user's password / one-time code: {value} flagged pii.sensitive_echo findings",
        runbook="chatmon findings --label pii.sensitive_echo --bot BOT --flagged: which entity "
                "(evidence), which conversations; make the bot mask values (last four digits "
                "only) and check its prompt and tools for the full value",
    ),
    AlertRule(
        "ChatmonToxicityRate", "page", "ratio", threshold=0.05, window_s=15 * MINUTE,
        min_volume=20, detector="toxicity",
        summary="bot {bot} (tenant {tenant}): {value} of assistant turns flagged toxic",
        runbook="chatmon findings --detector toxicity --bot BOT --flagged: a prompt injection "
                "wave or a model/prompt change? compare with the model label and last deploy",
    ),
    AlertRule(
        "ChatmonManipulationRate", "page", "ratio", threshold=0.05, window_s=15 * MINUTE,
        min_volume=20, detector="manipulation",
        summary="bot {bot} (tenant {tenant}): {value} of assistant turns flagged manipulative",
        runbook="chatmon findings --detector manipulation --bot BOT --flagged: which cue "
                "(dependence, guilt, urgency, data solicitation); check the last prompt change",
    ),
    AlertRule(
        "ChatmonEmpathyDrop", "ticket", "baseline_drop", threshold=0.8, window_s=HOUR,
        baseline_s=7 * DAY, min_volume=30, for_s=30 * MINUTE, detector="empathy",
        label="empathy.score", by=("bot",),
        summary="bot {bot}: mean empathy score fell to {value} of its 7-day mean",
        runbook="weekly report / empathy dashboard for BOT: did the model or system prompt "
                "change? read a few low-scoring turns with chatmon findings --label "
                "empathy.score --bot BOT",
    ),
    AlertRule(
        "ChatmonEmpathyFailureSpike", "ticket", "spike", threshold=0.4, window_s=HOUR,
        baseline_s=7 * DAY, factor=1.5, min_volume=30, for_s=30 * MINUTE,
        detector="empathy", by=("bot",),
        summary="bot {bot}: {value} of assistant turns flagged with an empathy failure "
                "(an upset user missed, a stock formula...; 1.5x its 7-day share)",
        runbook="chatmon findings --detector empathy --bot BOT --flagged: mostly "
                "empathy.missed or formulaic_restatement? a prompt or model change that "
                "turned the bot into a script",
    ),
    AlertRule(
        "ChatmonRepetitionSpike", "ticket", "spike", threshold=0.3, window_s=HOUR,
        baseline_s=7 * DAY, factor=2.0, min_volume=30, for_s=15 * MINUTE,
        detector="repetition", by=("bot",),
        summary="bot {bot}: {value} of assistant turns flagged as formulaic repetition "
                "(stock empathy formulas, near-duplicates or a fixed template; over twice its "
                "7-day share)",
        runbook="chatmon findings --label repetition.stock_empathy --bot BOT --flagged first: "
                "which empathy formula is said to everyone; then --detector repetition for "
                "near-duplicates and templates; check a prompt or decoding (temperature) "
                "change. The bot's procedural script (repetition.stock_phrase) is not flagged "
                "and never counts",
    ),
    AlertRule(
        "ChatmonPipelineStalled", "page", "stalled", threshold=0, window_s=5 * MINUTE,
        for_s=MINUTE, by=(),
        summary="chatmon receives events but processed none in the window",
        runbook="chatmon logs and /health: a hung detector batch, a locked database, or a "
                "worker stuck in rebalance; restart the worker after saving its logs",
    ),
    AlertRule(
        "ChatmonDeadLetterSurge", "ticket", "dead_letter_ratio", threshold=0.1,
        window_s=10 * MINUTE, min_volume=50, by=(),
        summary="{value} of incoming events were dead-lettered",
        runbook="chatmon_dead_letters_total by reason, then the dead_letters table: a producer "
                "schema change (missing fields, bad ts) is the usual cause",
    ),
    AlertRule(
        "ChatmonDetectorErrors", "ticket", "error_ratio", threshold=0.01, window_s=10 * MINUTE,
        by=("detector",),
        summary="detector {detector} failed on {value} of processed events",
        runbook="worker logs for the detector's exception (model files missing, out of "
                "memory); its findings are missing while it fails",
    ),
    AlertRule(
        "ChatmonRedactionFailed", "ticket", "redaction_failures", threshold=1,
        window_s=10 * MINUTE, by=(),
        summary="the redaction stage could not analyse {value} texts; they were masked or "
                "dead-lettered, never stored as written",
        runbook="chatmon_redaction_failures_total by outcome, then the worker log's "
                "'redaction:' warnings (spaCy model missing, out of memory); turns are stored "
                "masked (or dead-lettered) until the PII analyser runs again",
    ),
    AlertRule(
        "ChatmonSinkErrors", "page", "sink_errors", threshold=1, window_s=5 * MINUTE, by=(),
        summary="the store rejected {value} batches",
        runbook="database reachable? disk full? migrations applied (chatmon db upgrade)?",
    ),
    AlertRule(
        "ChatmonJudgeAgreementDrop", "ticket", "agreement_drop", threshold=0.8, window_s=DAY,
        baseline_s=7 * DAY, min_volume=30, by=("label",), detector="judge",
        summary="judge and classifier agree on {value} of the replies judged for {label} in "
                "the last day, well below their 7-day agreement",
        runbook="chatmon review agreement --since YESTERDAY: which side moved? read a dozen "
                "disagreeing replies (chatmon findings --label LABEL); check the bot's model "
                "and prompt, the classifier's version, the judge model and rubric version",
    ),
    AlertRule(
        "ChatmonConsumerLagGrowing", "page", "lag", threshold=1000, window_s=10 * MINUTE,
        for_s=5 * MINUTE, by=("topic",), embedded=False,
        summary="consumer lag on {topic} is {value} messages and growing",
        runbook="worker count vs partitions, slow detector batches (chatmon_detector_batch_"
                "seconds), a crashed worker; scale workers up to the partition count",
    ),
)


def duration(seconds: float) -> str:
    """Seconds as a Prometheus duration (``90`` -> ``1m30s``; ``0.5`` -> ``500ms``)."""
    ms = round(seconds * 1000)
    if ms <= 0:
        return "0s"
    out = ""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000),
                       ("ms", 1)):
        n, ms = divmod(ms, size)
        if n:
            out += f"{n}{unit}"
    return out


CONDITION = {
    "count": "flagged `{label}` findings in the window >= {threshold:g}",
    "ratio": "share of assistant turns with a flagged {detector} finding > {threshold:.0%} "
             "(at least {min_volume:g} assistant turns)",
    "baseline_drop": "mean empathy score < {threshold:.0%} of the bot's mean over {baseline} "
                     "(at least {min_volume:g} scored turns)",
    "spike": "share of turns with a flagged {detector} finding > {threshold:.0%} and > "
             "{factor:g}x its share over {baseline} (at least {min_volume:g} turns)",
    "stalled": "events received but none processed",
    "dead_letter_ratio": "dead-lettered / received > {threshold:.0%} (at least {min_volume:g} "
                         "events)",
    "error_ratio": "turns a detector failed on / processed events > {threshold:.0%}",
    "sink_errors": "failed store writes >= {threshold:g}",
    "redaction_failures": "texts the PII analyser could not redact (masked or dead-lettered) "
                          ">= {threshold:g}",
    "lag": "consumer lag > {threshold:g} messages and growing over the window",
    "agreement_drop": "share of judged replies where judge and classifier agree on the "
                      "rubric's scale < "
                      "{threshold:.0%} of that share over {baseline} (at least {min_volume:g} "
                      "judged replies)",
}


def thresholds_table(table: tuple[AlertRule, ...] = RULES) -> str:
    """The markdown thresholds table of the on-call section (a test keeps the docs in sync)."""
    lines = ["| alert | severity | fires when | window | for | per |",
             "|---|---|---|---|---|---|"]
    for r in table:
        cond = CONDITION[r.kind].format(label=r.label, detector=r.detector, threshold=r.threshold,
                                        min_volume=r.min_volume, factor=r.factor,
                                        baseline=duration(r.baseline_s))
        lines.append(f"| {r.name} | {r.severity} | {cond} | {duration(r.window_s)} | "
                     f"{duration(r.for_s) if r.for_s else '-'} | {', '.join(r.by) or 'instance'} |")
    return "\n".join(lines) + "\n"


def rules(overrides: Mapping[str, Mapping[str, float]] | None = None) -> tuple[AlertRule, ...]:
    """The rules with per-rule numeric overrides applied (unknown names or fields are errors)."""
    if not overrides:
        return RULES
    known = {r.name: r for r in RULES}
    unknown = set(overrides) - set(known)
    if unknown:
        raise ConfigError(f"unknown alert rules {sorted(unknown)}; known: {sorted(known)}")
    out = []
    for rule in RULES:
        try:
            change: dict[str, Any] = {k: float(v) for k, v in
                                      overrides.get(rule.name, {}).items()}
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{rule.name}: override values must be numbers") from exc
        if set(change) - set(TUNABLE):
            raise ConfigError(f"{rule.name}: only {', '.join(TUNABLE)} can be overridden")
        out.append(replace(rule, **change))
    return tuple(out)
