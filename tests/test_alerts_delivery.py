"""Webhook delivery: generic JSON, Slack and PagerDuty Events v2 payloads, routing by severity,
retries, and no secrets or text in logs and payloads. Posts go to a real loopback receiver."""

from __future__ import annotations

import json
import logging

import pytest
from pydantic import SecretStr

from pipeline.alerts.delivery import (
    Target,
    WebhookNotifier,
    pagerduty_payload,
    payload,
    slack_payload,
    targets_from_settings,
)
from pipeline.alerts.engine import Alert
from pipeline.settings import Settings
from tests.alerting.receiver import Receiver

SLACK_TOKEN = "T000/B000/XXXXsecretXXXX"
ROUTING_KEY = "R0UT1NGKEYsecret"


def alert(status: str = "firing", severity: str = "page") -> Alert:
    return Alert(
        rule="ChatmonPIILeak", severity=severity, status=status,
        summary="bot bot-a (tenant acme) emitted PII the user did not give: 2 flagged pii.leak "
                "findings",
        labels={"bot": "bot-a", "tenant": "acme", "detector": "pii", "severity": severity,
                "alertname": "ChatmonPIILeak"},
        value=2, counts={"flagged_findings": 2}, window_s=300,
        evidence=[{"conversation_id": "conv-7", "turn": 3, "label": "pii.leak"},
                  {"conversation_id": "conv-9", "turn": 1, "label": "pii.leak"}],
        fingerprint="abc123", runbook="chatmon findings --label pii.leak",
        started_at="2026-11-21T12:00:00Z",
        ended_at=None if status == "firing" else "2026-11-21T12:06:00Z")


def test_generic_payload_carries_labels_counts_window_and_evidence():
    body = payload(Target(SecretStr("http://x/"), "json"), alert())
    assert body["status"] == "firing" and body["rule"] == "ChatmonPIILeak"
    assert body["labels"]["bot"] == "bot-a" and body["labels"]["tenant"] == "acme"
    assert body["counts"] == {"flagged_findings": 2} and body["window_s"] == 300
    assert body["evidence"][0] == {"conversation_id": "conv-7", "turn": 3, "label": "pii.leak"}
    assert set(body) >= {"fingerprint", "started_at", "ended_at", "severity", "summary"}


def test_slack_payload_is_text_and_blocks_with_evidence_refs():
    firing, resolved = slack_payload(alert()), slack_payload(alert("resolved"))
    assert "[FIRING] ChatmonPIILeak (page)" in firing["text"]
    block = firing["blocks"][0]["text"]["text"]
    assert "conv-7#3" in block and "conv-9#1" in block and "`bot=bot-a`" in block
    assert "[RESOLVED]" in resolved["text"]


def test_pagerduty_trigger_and_resolve_share_a_dedup_key():
    trigger = pagerduty_payload(alert(), ROUTING_KEY)
    resolve = pagerduty_payload(alert("resolved"), ROUTING_KEY)
    assert trigger["event_action"] == "trigger" and resolve["event_action"] == "resolve"
    assert trigger["dedup_key"] == resolve["dedup_key"] == "chatmon-abc123"
    assert trigger["routing_key"] == ROUTING_KEY
    p = trigger["payload"]
    assert p["severity"] == "critical" and p["source"] == "chatmon"
    assert p["component"] == "bot-a" and p["group"] == "acme" and p["class"] == "ChatmonPIILeak"
    assert p["custom_details"]["evidence"][1]["conversation_id"] == "conv-9"
    assert "payload" not in resolve
    assert pagerduty_payload(alert(severity="ticket"), "k")["payload"]["severity"] == "warning"


@pytest.mark.parametrize(("env", "expected"), [
    ({}, []),
    ({"alert_webhook_url": "http://h/hook"}, [("json", {"page", "ticket"})]),
    ({"alert_webhook_url": "http://h/hook", "alert_webhook_format": "slack"},
     [("slack", {"page", "ticket"})]),
    ({"alert_pagerduty_routing_key": "k"}, [("pagerduty", {"page"})]),
    ({"alert_webhook_url": "http://h/pd", "alert_webhook_format": "pagerduty",
      "alert_pagerduty_routing_key": "k"}, [("pagerduty", {"page", "ticket"})]),
    ({"alert_slack_webhook_url": "http://h/s", "alert_pagerduty_routing_key": "k"},
     [("slack", {"page", "ticket"}), ("pagerduty", {"page"})]),
])
def test_targets_from_settings(env, expected):
    got = targets_from_settings(Settings(**env))
    assert [(t.fmt, set(t.severities)) for t in got] == expected


def test_notifier_posts_each_format_and_routes_by_severity():
    with Receiver() as rx:
        targets = [Target(SecretStr(rx.url("/generic")), "json"),
                   Target(SecretStr(rx.url(f"/services/{SLACK_TOKEN}")), "slack"),
                   Target(SecretStr(rx.url("/v2/enqueue")), "pagerduty", frozenset({"page"}),
                          SecretStr(ROUTING_KEY))]
        notifier = WebhookNotifier(targets)
        notifier.send(alert())
        notifier.send(alert(severity="ticket"))
        assert notifier.flush(10)
        notifier.close()
    paths = sorted(path for path, _, _ in rx.requests)
    assert paths == sorted(["/generic", "/generic", f"/services/{SLACK_TOKEN}",
                            f"/services/{SLACK_TOKEN}", "/v2/enqueue"])
    pd = next(body for path, body, _ in rx.requests if path == "/v2/enqueue")
    assert pd["routing_key"] == ROUTING_KEY and pd["payload"]["severity"] == "critical"


def test_failed_delivery_retries_and_logs_no_secret(caplog):
    caplog.set_level(logging.DEBUG)
    with Receiver(status=500) as rx:
        target = Target(SecretStr(rx.url(f"/services/{SLACK_TOKEN}?token={ROUTING_KEY}")),
                        "slack")
        notifier = WebhookNotifier([target], backoff_s=0.01)
        notifier.send(alert())
        assert notifier.flush(10)
        notifier.close()
    assert len(rx.requests) == 3  # one try and two retries
    assert notifier.failures == 1
    assert "failed (attempt 3/3): HTTPError 500" in caplog.text
    assert f"127.0.0.1:{rx.port}" in caplog.text
    assert SLACK_TOKEN not in caplog.text and ROUTING_KEY not in caplog.text
    assert "secret" not in caplog.text


def test_payloads_hold_no_text_fields():
    for fmt in ("json", "slack", "pagerduty"):
        body = json.dumps(payload(Target(SecretStr("http://x/"), fmt, routing_key=None),
                                  alert()))
        assert "excerpt" not in body and "text_redacted" not in body
