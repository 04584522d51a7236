"""Webhook delivery for embedded alerts: generic JSON, Slack-compatible and PagerDuty Events v2.

Targets come from settings (``CHATMON_ALERT_WEBHOOK_URL`` with ``CHATMON_ALERT_WEBHOOK_FORMAT``,
``CHATMON_ALERT_SLACK_WEBHOOK_URL``, ``CHATMON_ALERT_PAGERDUTY_ROUTING_KEY``). PagerDuty gets
``page`` alerts only; the others get every severity. A background thread posts, so a slow
receiver never holds up the pipeline; failures are retried twice and logged with the
receiver's scheme and host only (Slack URLs and routing keys are secrets).

Payloads carry the rule, severity, labels (bot, tenant, detector), counts, window and evidence
(conversation ids, turn indexes, labels); never transcript text.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import SecretStr

from pipeline.alerts.engine import Alert
from pipeline.settings import Settings

log = logging.getLogger(__name__)
Format = Literal["json", "slack", "pagerduty"]
RETRIES = 2
TIMEOUT_S = 5.0
PD_SEVERITY = {"page": "critical", "ticket": "warning"}


@dataclass(frozen=True)
class Target:
    url: SecretStr
    fmt: Format
    severities: frozenset[str] = frozenset({"page", "ticket"})
    routing_key: SecretStr | None = None

    @property
    def safe_name(self) -> str:
        """Scheme and host only: paths and queries of webhook URLs hold tokens."""
        parts = urlsplit(self.url.get_secret_value())
        return f"{self.fmt} webhook {parts.scheme}://{parts.hostname}:{parts.port or ''}"


def targets_from_settings(s: Settings) -> list[Target]:
    out = []
    if s.alert_webhook_url is not None:
        out.append(Target(s.alert_webhook_url, s.alert_webhook_format,
                          routing_key=s.alert_pagerduty_routing_key))
    if s.alert_slack_webhook_url is not None:
        out.append(Target(s.alert_slack_webhook_url, "slack"))
    if s.alert_pagerduty_routing_key is not None and s.alert_webhook_format != "pagerduty":
        out.append(Target(SecretStr(s.alert_pagerduty_url), "pagerduty", frozenset({"page"}),
                          s.alert_pagerduty_routing_key))
    return out


def generic_payload(alert: Alert) -> dict[str, Any]:
    return {"source": "chatmon", "version": 1, **asdict(alert)}


def _evidence_line(alert: Alert, limit: int = 10) -> str:
    refs = [f"{e['conversation_id']}#{e['turn']}" for e in alert.evidence[:limit]]
    return ", ".join(refs) if refs else "none in window"


def slack_payload(alert: Alert) -> dict[str, Any]:
    icon = ":rotating_light:" if alert.status == "firing" else ":white_check_mark:"
    head = f"{icon} [{alert.status.upper()}] {alert.rule} ({alert.severity})"
    labels = " ".join(f"`{k}={v}`" for k, v in sorted(alert.labels.items()))
    counts = ", ".join(f"{k}={v:g}" for k, v in alert.counts.items())
    body = (f"*{head}*\n{alert.summary}\n{labels}\ncounts ({alert.window_s:g} s window): "
            f"{counts}\nevidence: {_evidence_line(alert)}\nfirst check: {alert.runbook}")
    return {"text": f"{head}: {alert.summary}",
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": body}}]}


def pagerduty_payload(alert: Alert, routing_key: str) -> dict[str, Any]:
    event: dict[str, Any] = {
        "routing_key": routing_key,
        "event_action": "trigger" if alert.status == "firing" else "resolve",
        "dedup_key": f"chatmon-{alert.fingerprint}",
    }
    if alert.status == "firing":
        event["payload"] = {
            "summary": alert.summary[:1024],
            "source": "chatmon",
            "severity": PD_SEVERITY.get(alert.severity, "warning"),
            "component": alert.labels.get("bot", "chatmon"),
            "group": alert.labels.get("tenant", ""),
            "class": alert.rule,
            "custom_details": {"labels": alert.labels, "counts": alert.counts,
                               "window_s": alert.window_s, "evidence": alert.evidence,
                               "runbook": alert.runbook, "started_at": alert.started_at},
        }
    return event


def payload(target: Target, alert: Alert) -> dict[str, Any]:
    if target.fmt == "slack":
        return slack_payload(alert)
    if target.fmt == "pagerduty":
        key = target.routing_key.get_secret_value() if target.routing_key else ""
        return pagerduty_payload(alert, key)
    return generic_payload(alert)


class WebhookNotifier:
    """Posts alerts to every target that takes their severity, from one sender thread."""

    def __init__(self, targets: list[Target], timeout_s: float = TIMEOUT_S,
                 backoff_s: float = 0.5) -> None:
        self.targets = targets
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s
        self.failures = 0
        self._queue: queue.Queue[tuple[Target, bytes] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="chatmon-alert-sender",
                                         daemon=True)
        self._thread.start()

    def send(self, alert: Alert) -> None:
        for target in self.targets:
            if alert.severity in target.severities:
                body = json.dumps(payload(target, alert)).encode()
                self._queue.put((target, body))

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            try:
                self._post(*item)
            finally:
                self._queue.task_done()
        self._queue.task_done()

    def _post(self, target: Target, body: bytes) -> None:
        req = urllib.request.Request(target.url.get_secret_value(), data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        for attempt in range(RETRIES + 1):
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                    resp.read()
                return
            except (urllib.error.URLError, OSError, ValueError) as exc:
                status = getattr(exc, "code", None)
                log.warning("alert delivery to %s failed (attempt %d/%d): %s%s",
                            target.safe_name, attempt + 1, RETRIES + 1, type(exc).__name__,
                            f" {status}" if status else "")
                if attempt < RETRIES:
                    time.sleep(self.backoff_s * (2 ** attempt))
        self.failures += 1

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until queued alerts are posted (or failed); False on timeout."""
        deadline = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def close(self, timeout_s: float = 10.0) -> None:
        self.flush(timeout_s)
        self._queue.put(None)
        self._thread.join(timeout=1)
