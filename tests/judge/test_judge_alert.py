"""ChatmonJudgeAgreementDrop: the Prometheus rule (promtool unit tests on synthetic series) and
the embedded engine (fake clock) fire when judge and classifier stop agreeing, and stay quiet
when their agreement holds or there are too few judged replies."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from pipeline.alerts import promql
from pipeline.alerts.engine import AlertEngine
from pipeline.metrics import PipelineMetrics
from tests.test_alerts_engine import Clock, Inbox, rule
from tests.test_alerts_rules import RULES_FILE, needs_promtool

NAME = "ChatmonJudgeAgreementDrop"


def _annotations(value: str, label: str) -> dict[str, str]:
    r = rule(NAME)
    return {"summary": r.summary.format(value=value, label=label), "runbook": r.runbook,
            "window": promql.duration(r.window_s),
            "runbook_doc": promql.RUNBOOK_DOC.format(anchor=promql.anchor(r))}


PAIRS = 'chatmon_judge_pairs_total{label="judge.epitome_er",bot="b1",agree="%s"}'
LABELS = {"label": "judge.epitome_er", "severity": "ticket", "source": "chatmon",
          "detector": "judge"}
CASES = [
    ("agreement falls from 100% to 20% on the last day",
     [{"series": PAIRS % "true", "values": "0+10x168 1680+2x24"},
      {"series": PAIRS % "false", "values": "0x168 0+8x24"}],
     [{"eval_time": "192h", "alertname": NAME, "exp_alerts": [
         {"exp_labels": LABELS, "exp_annotations": _annotations("20%", "judge.epitome_er")}]},
      {"eval_time": "160h", "alertname": NAME, "exp_alerts": []}]),
    ("near miss: the same 60% agreement all week",
     [{"series": PAIRS % "true", "values": "0+6x192"},
      {"series": PAIRS % "false", "values": "0+4x192"}],
     [{"eval_time": "192h", "alertname": NAME, "exp_alerts": []}]),
    ("near miss: total disagreement on too few replies (1 a day)",
     [{"series": PAIRS % "true", "values": "0+10x168 1680x24"},
      {"series": PAIRS % "false", "values": "0x168 0+0.04x24"}],
     [{"eval_time": "192h", "alertname": NAME, "exp_alerts": []}]),
]


@needs_promtool
@pytest.mark.parametrize(("what", "series", "checks"), CASES, ids=[c[0] for c in CASES])
def test_promtool(tmp_path: Path, what, series, checks):
    shutil.copy(RULES_FILE, tmp_path / "rules.yml")
    spec = {"rule_files": ["rules.yml"], "evaluation_interval": "1h",
            "tests": [{"interval": "1h", "input_series": series, "alert_rule_test": checks}]}
    (tmp_path / "test.yml").write_text(json.dumps(spec))
    out = subprocess.run([shutil.which("promtool") or "promtool", "test", "rules", "test.yml"],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, f"{what}\n{out.stdout}{out.stderr}"


def _fed(per_hour: list[tuple[int, int]]) -> tuple[Inbox, AlertEngine]:
    """An engine fed through the metrics' listener hook, hour by hour: (agree, disagree)."""
    inbox, clock = Inbox(), Clock()
    eng = AlertEngine([rule(NAME)], inbox, cooldown_s=0.0, clock=clock)
    metrics = PipelineMetrics(CollectorRegistry())
    metrics.add_listener(eng)
    for agree, disagree in per_hour:
        for i in range(agree + disagree):
            metrics.judged("judge.epitome_er", "endpoint", "b1", i < agree)
        clock.t += 3600
    eng.evaluate()
    return inbox, eng


def test_embedded_engine_fires_on_a_drop():
    inbox, _ = _fed([(10, 0)] * 168 + [(2, 8)] * 24)
    (alert,) = inbox.alerts
    assert (alert.rule, alert.labels["label"], alert.status) == (NAME, "judge.epitome_er",
                                                                 "firing")
    assert alert.value == pytest.approx(0.2, abs=0.02)
    assert "agree on 20.0% of the replies judged for judge.epitome_er" in alert.summary


@pytest.mark.parametrize("hours", [[(6, 4)] * 192,            # steady 60%: no drop
                                   [(10, 0)] * 168 + [(0, 1)] * 24])  # 24 replies < 30
def test_embedded_engine_near_misses(hours):
    inbox, _ = _fed(hours)
    assert inbox.alerts == []
