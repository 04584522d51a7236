"""Start and stop embedded alerting for ``chatmon run`` and ``chatmon serve``.

Enabled when a webhook is configured (``CHATMON_ALERT_WEBHOOK_URL``,
``CHATMON_ALERT_SLACK_WEBHOOK_URL`` or ``CHATMON_ALERT_PAGERDUTY_ROUTING_KEY``); otherwise
alerting is Prometheus's job (``deploy/prometheus/``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pipeline.alerts.delivery import WebhookNotifier, targets_from_settings
from pipeline.alerts.engine import AlertEngine
from pipeline.alerts.rules import rules
from pipeline.metrics import PipelineMetrics
from pipeline.settings import Settings

log = logging.getLogger(__name__)


@dataclass
class Alerting:
    engine: AlertEngine
    notifier: WebhookNotifier
    metrics: PipelineMetrics

    def close(self) -> None:
        """Evaluate once more (so a short run still alerts), then deliver what is queued."""
        self.engine.stop()
        self.engine.evaluate()
        self.metrics.remove_listener(self.engine)
        self.notifier.close()


def start_alerting(settings: Settings, metrics: PipelineMetrics) -> Alerting | None:
    targets = targets_from_settings(settings)
    if not targets:
        return None
    notifier = WebhookNotifier(targets)
    engine = AlertEngine(rules(settings.alert_rules), notifier,
                         cooldown_s=settings.alert_cooldown_s)
    metrics.add_listener(engine)
    engine.start(settings.alert_eval_interval_s)
    log.info("embedded alerting on: %s", ", ".join(t.safe_name for t in targets))
    return Alerting(engine, notifier, metrics)


@contextmanager
def alerting_session(settings: Settings, metrics: PipelineMetrics) -> Iterator[Alerting | None]:
    """Embedded alerting for the length of a run; delivers what is queued on the way out."""
    alerting = start_alerting(settings, metrics)
    try:
        yield alerting
    finally:
        if alerting is not None:
            alerting.close()
