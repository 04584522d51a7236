"""The embedded alert engine on a fake clock: each rule kind fires on its positive case and stays
quiet on its near miss; dedup, ``for``, cooldown and resolve; evidence without text."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from pipeline.alerts.engine import Alert, AlertEngine
from pipeline.alerts.rules import RULES, AlertRule
from pipeline.scoring.process import BatchReport


class Clock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


class Inbox:
    def __init__(self) -> None:
        self.alerts: list[Alert] = []

    def send(self, alert: Alert) -> None:
        self.alerts.append(alert)

    def names(self, status: str = "firing") -> list[str]:
        return [a.rule for a in self.alerts if a.status == status]


def rule(name: str, **change: float) -> AlertRule:
    return replace(next(r for r in RULES if r.name == name), **change)


def engine(*rules: AlertRule, cooldown_s: float = 0.0) -> tuple[AlertEngine, Inbox, Clock]:
    inbox, clock = Inbox(), Clock()
    return AlertEngine(list(rules), inbox, cooldown_s=cooldown_s, clock=clock), inbox, clock


def batch(n_turns: int = 0, flagged: dict[str, int] | None = None, bot: str = "bot-a",
          tenant: str = "acme", empathy: float | None = None, start: int = 0,
          dead: dict[str, int] | None = None, errors: dict[str, int] | None = None,
          records: int | None = None) -> BatchReport:
    """``n_turns`` assistant turns; the first ``flagged[label]`` of them carry that label."""
    turns, findings = [], []
    for i in range(start, start + n_turns):
        cid = f"{bot}-conv-{i}"
        turns.append(dict(conversation_id=cid, turn=1, role="assistant", bot_id=bot,
                          tenant=tenant))
        for label, n in (flagged or {}).items():
            if i - start < n:
                findings.append(_finding(cid, label, 0.9, True, bot, tenant))
        if empathy is not None:
            findings.append(_finding(cid, "empathy.score", empathy, False, bot, tenant))
    n_dead = sum((dead or {}).values())
    return BatchReport(records=records if records is not None else n_turns + n_dead,
                       turn_rows=turns, finding_rows=findings, dead_letters=Counter(dead or {}),
                       detector_errors=Counter(errors or {}))


def _finding(cid: str, label: str, score: float, flagged: bool, bot: str,
             tenant: str) -> dict[str, Any]:
    return dict(turn_id=f"{cid}:1", conversation_id=cid, turn=1, bot_id=bot, tenant=tenant,
                detector=label.split(".")[0], label=label, score=score, flagged=flagged,
                excerpt="my card is [CREDIT_CARD]")


def test_leak_fires_once_with_evidence_then_resolves_after_the_window():
    eng, inbox, clock = engine(rule("ChatmonPIILeak", window_s=60))
    eng.on_batch(batch(3, {"pii.leak": 1}))
    clock.t += 10
    eng.on_batch(batch(3, {"pii.leak": 1}, start=3))  # still firing: deduplicated
    assert inbox.names() == ["ChatmonPIILeak"]
    alert = inbox.alerts[0]
    assert alert.labels == {"bot": "bot-a", "tenant": "acme", "alertname": "ChatmonPIILeak",
                            "severity": "page", "detector": "pii"}
    assert alert.counts == {"flagged_findings": 1}
    assert alert.evidence == [{"conversation_id": "bot-a-conv-0", "turn": 1,
                               "label": "pii.leak"}]
    assert "CREDIT_CARD" not in repr(alert)
    clock.t += 30
    eng.evaluate()
    assert inbox.names("resolved") == []  # the second leak is still in the window
    clock.t += 45
    eng.evaluate()
    resolved = [a for a in inbox.alerts if a.status == "resolved"]
    assert len(resolved) == 1 and resolved[0].fingerprint == alert.fingerprint
    assert resolved[0].counts == {"flagged_findings": 2} and resolved[0].ended_at


def test_each_bot_and_tenant_is_its_own_alert():
    eng, inbox, _ = engine(rule("ChatmonPIILeak"))
    eng.on_batch(batch(1, {"pii.leak": 1}, bot="a", tenant="t1"))
    eng.on_batch(batch(1, {"pii.leak": 1}, bot="a", tenant="t2"))
    eng.on_batch(batch(1, {"pii.email_address": 1}, bot="b"))  # near miss: not a leak
    assert sorted((a.labels["bot"], a.labels["tenant"]) for a in inbox.alerts) == \
        [("a", "t1"), ("a", "t2")]


@pytest.mark.parametrize(("name", "n", "flagged", "fires"), [
    ("ChatmonToxicityRate", 40, 4, True),        # 10% of 40
    ("ChatmonToxicityRate", 40, 2, False),       # 5% is not over 5%
    ("ChatmonToxicityRate", 10, 10, False),      # too few turns
    ("ChatmonManipulationRate", 25, 5, True),
    ("ChatmonManipulationRate", 100, 3, False),
])
def test_rate_rules(name, n, flagged, fires):
    eng, inbox, _ = engine(rule(name))
    label = "toxicity.insult" if "Toxicity" in name else "manipulation.guilt"
    eng.on_batch(batch(n, {label: flagged}))
    assert inbox.names() == ([name] if fires else [])
    if fires:
        assert inbox.alerts[0].counts == {"flagged_turns": flagged, "assistant_turns": n}
        assert inbox.alerts[0].value == pytest.approx(flagged / n)
        assert len(inbox.alerts[0].evidence) == min(flagged, 10)


def test_rate_counts_a_turn_once_however_many_labels_fired():
    eng, inbox, _ = engine(rule("ChatmonToxicityRate"))
    eng.on_batch(batch(40, {"toxicity.insult": 2, "toxicity.threat": 2}))
    assert inbox.names() == []  # 2 turns of 40, not 4 findings


@pytest.mark.parametrize(("current", "fires"), [(0.3, True), (0.6, False)])
def test_empathy_drop_against_the_bots_own_baseline(current, fires):
    r = rule("ChatmonEmpathyDrop", window_s=3600, baseline_s=7 * 86400, for_s=0)
    eng, inbox, clock = engine(r)
    for day in range(6):
        clock.t += 86400
        eng.on_batch(batch(50, empathy=0.7, bot="bot-e", start=day * 50))
    clock.t += 86400
    eng.on_batch(batch(40, empathy=current, bot="bot-e", start=1000))
    assert inbox.names() == (["ChatmonEmpathyDrop"] if fires else [])
    if fires:
        c = inbox.alerts[0].counts
        assert c["mean_score"] == pytest.approx(0.3) and c["baseline_mean_score"] < 0.7


def test_empathy_drop_waits_for_its_for_duration():
    eng, inbox, clock = engine(rule("ChatmonEmpathyDrop", for_s=600))
    eng.on_batch(batch(300, empathy=0.8))
    clock.t += 2 * 86400
    eng.on_batch(batch(40, empathy=0.2, start=500))
    assert inbox.names() == []
    clock.t += 601
    eng.on_batch(batch(1, empathy=0.2, start=900))
    assert inbox.names() == ["ChatmonEmpathyDrop"]


@pytest.mark.parametrize(("baseline_flagged", "now_flagged", "fires"), [
    (5, 20, True),    # 10% -> 50%
    (30, 20, False),  # 30% usual: 50% now is not twice the 7-day share
    (5, 10, False),   # 25% is under the 30% floor
])
def test_repetition_spike(baseline_flagged, now_flagged, fires):
    eng, inbox, clock = engine(rule("ChatmonRepetitionSpike", for_s=0))
    eng.on_batch(batch(100, {"repetition.stock_empathy": baseline_flagged}, bot="r"))
    clock.t += 2 * 86400
    eng.on_batch(batch(40, {"repetition.stock_empathy": now_flagged}, bot="r", start=200))
    assert inbox.names() == (["ChatmonRepetitionSpike"] if fires else [])
    if fires:  # the evidence names the formulaic empathy it counted
        assert {e["label"] for e in inbox.alerts[0].evidence} == {"repetition.stock_empathy"}


@pytest.mark.parametrize("script_flagged", [False, True])
def test_repetition_spike_spares_a_clean_bots_script(script_flagged: bool) -> None:
    """Procedural stock phrases are stored unflagged (issue "Quiet on a clean bot"): a task
    bot whose every reply is its script does not raise the spike; the same replies flagged
    (the policy before that issue) would."""
    eng, inbox, clock = engine(rule("ChatmonRepetitionSpike", for_s=0))
    eng.on_batch(batch(100, {"repetition.stock_empathy": 5}, bot="r"))
    clock.t += 2 * 86400
    now = batch(40, bot="r", start=200)
    now.finding_rows.extend(_finding(t["conversation_id"], "repetition.stock_phrase", 1.0,
                                     script_flagged, "r", "acme") for t in now.turn_rows)
    eng.on_batch(now)
    assert inbox.names() == (["ChatmonRepetitionSpike"] if script_flagged else [])


def test_health_rules():
    eng, inbox, clock = engine(rule("ChatmonPipelineStalled", for_s=0),
                               rule("ChatmonDeadLetterSurge"), rule("ChatmonDetectorErrors"),
                               rule("ChatmonSinkErrors"))
    eng.received(10)
    eng.evaluate()
    assert inbox.names() == ["ChatmonPipelineStalled"]
    eng.on_batch(batch(95, dead={"invalid_json": 5}))  # 5%: under the dead-letter threshold
    assert inbox.names("resolved") == ["ChatmonPipelineStalled"]
    eng.received(60)
    eng.on_batch(batch(40, dead={"missing_field": 20}, errors={"toxicity": 3}))
    eng.sink_error()
    fired = inbox.names()
    assert {"ChatmonDeadLetterSurge", "ChatmonDetectorErrors", "ChatmonSinkErrors"} <= set(fired)
    errors = next(a for a in inbox.alerts if a.rule == "ChatmonDetectorErrors")
    assert errors.labels["detector"] == "toxicity"


def test_cooldown_holds_a_refire_then_sends_it():
    eng, inbox, clock = engine(rule("ChatmonPIILeak", window_s=600), cooldown_s=300)
    eng.on_batch(batch(1, {"pii.leak": 1}))
    clock.t += 630
    eng.evaluate()
    assert [a.status for a in inbox.alerts] == ["firing", "resolved"]
    clock.t += 10
    eng.on_batch(batch(1, {"pii.leak": 1}, start=5))  # inside the cooldown: held
    clock.t += 200
    eng.evaluate()
    assert len(inbox.alerts) == 2
    clock.t += 91
    eng.evaluate()  # cooldown over and still leaking: sent now, without a new batch
    assert [a.status for a in inbox.alerts] == ["firing", "resolved", "firing"]


def test_consumer_lag_rule_is_prometheus_only():
    eng, _, _ = engine(*RULES)
    assert "ChatmonConsumerLagGrowing" not in {r.name for r in eng.rules}
    assert len(eng.rules) == len(RULES) - 1


def test_many_bots_are_capped():
    inbox, clock = Inbox(), Clock()
    eng = AlertEngine([rule("ChatmonPIILeak")], inbox, clock=clock, max_label_values=2)
    for b in ("a", "b", "c", "d"):
        eng.on_batch(batch(1, {"pii.leak": 1}, bot=b))
    assert sorted(a.labels["bot"] for a in inbox.alerts) == ["a", "b", "other"]


def test_redaction_failures_open_a_ticket_with_the_turns_as_evidence():
    eng, inbox, clock = engine(rule("ChatmonRedactionFailed", window_s=60))
    eng.on_batch(batch(5))  # near miss: turns redacted as usual
    assert inbox.names() == []
    failed = replace(batch(2), redaction_failures=Counter({"masked": 2, "text_masked": 1}),
                     redaction_failed_turns=[("conv-9", 3), ("conv-9", 5)])
    eng.on_batch(failed)
    assert inbox.names() == ["ChatmonRedactionFailed"]
    alert = inbox.alerts[0]
    assert alert.severity == "ticket" and alert.counts == {"redaction_failures": 3}
    assert alert.evidence == [{"conversation_id": "conv-9", "turn": 3, "label": "redaction_failed"},
                              {"conversation_id": "conv-9", "turn": 5, "label": "redaction_failed"}]
    clock.t += 120
    eng.evaluate()
    assert inbox.names("resolved") == ["ChatmonRedactionFailed"]
