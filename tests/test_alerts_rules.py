"""The alert rules: the shipped Prometheus file is the generator's output, promtool accepts it and
its unit tests (synthetic series: positives and near misses) pass, the Alertmanager example is
valid, overrides are checked, and the on-call docs carry every rule and the thresholds table."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pipeline.alerts import promql
from pipeline.alerts.rules import RULES, rules, thresholds_table
from pipeline.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
RULES_FILE = ROOT / "deploy/prometheus/chatmon-alerts.rules.yml"
DOCS = ROOT / "docs/alerts.md"
PROMTOOL = shutil.which("promtool")
AMTOOL = shutil.which("amtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian "
                                    "package prometheus; `make system-deps` installs it)")


def test_shipped_rules_file_is_the_generated_one():
    assert RULES_FILE.read_text() == promql.render_rules(), \
        "re-render: python -m pipeline.alerts.promql > deploy/prometheus/chatmon-alerts.rules.yml"


def test_every_rule_has_a_severity_a_runbook_and_a_known_kind():
    assert len({r.name for r in RULES}) == len(RULES)
    for r in RULES:
        assert r.severity in ("page", "ticket") and r.runbook and r.kind in promql.EXPRESSIONS
    pages = {r.name for r in RULES if r.severity == "page"}
    assert {"ChatmonPIILeak", "ChatmonToxicityRate", "ChatmonManipulationRate"} <= pages


@pytest.mark.parametrize(("overrides", "ok"), [
    ({"ChatmonToxicityRate": {"threshold": 0.2}}, True),
    ({"ChatmonPIILeak": {"window_s": 10, "for_s": 0}}, True),
    ({"ChatmonNoSuchRule": {"threshold": 1}}, False),
    ({"ChatmonPIILeak": {"severity": 1}}, False),
    ({"ChatmonPIILeak": {"threshold": "lots"}}, False),
])
def test_overrides(overrides, ok):
    if not ok:
        with pytest.raises(ConfigError):
            rules(overrides)
        return
    got = {r.name: r for r in rules(overrides)}
    for name, change in overrides.items():
        for k, v in change.items():
            assert getattr(got[name], k) == v
    assert got["ChatmonSinkErrors"] == next(r for r in RULES if r.name == "ChatmonSinkErrors")


@pytest.mark.parametrize(("seconds", "text"), [(300, "5m"), (90, "1m30s"), (604800, "7d"),
                                              (0.5, "500ms"), (0, "0s")])
def test_duration(seconds, text):
    assert promql.duration(seconds) == text


@needs_promtool
def test_promtool_check_rules():
    out = subprocess.run([PROMTOOL, "check", "rules", str(RULES_FILE)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(RULES)} rules found" in out.stdout


@needs_promtool
def test_promtool_check_prometheus_example():
    out = subprocess.run([PROMTOOL, "check", "config", "prometheus.yml"], capture_output=True,
                         text=True, timeout=60, cwd=RULES_FILE.parent)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.skipif(AMTOOL is None, reason="amtool not installed (Debian package "
                    "prometheus-alertmanager)")
def test_alertmanager_example_routes_by_severity():
    cfg = ROOT / "deploy/alertmanager/alertmanager.yml"
    out = subprocess.run([AMTOOL, "check-config", str(cfg)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    for labels, receiver in [("severity=page", "pagerduty-page"),
                             ("severity=ticket", "slack-tickets")]:
        got = subprocess.run([AMTOOL, "config", "routes", "test", f"--config.file={cfg}",
                              "alertname=ChatmonPIILeak", labels], capture_output=True,
                             text=True, timeout=60)
        assert got.stdout.strip() == receiver, got.stdout + got.stderr


def _annotations(name: str, value: str, **labels: str) -> dict[str, str]:
    rule = next(r for r in RULES if r.name == name)
    summary = rule.summary.format(value=value, **{k: labels.get(k, "") for k in
                                                  ("bot", "tenant", "detector", "topic")})
    return {"summary": summary, "runbook": rule.runbook, "window": promql.duration(rule.window_s),
            "runbook_doc": promql.RUNBOOK_DOC.format(anchor=promql.anchor(rule))}


def _alert(name: str, value: str, **labels: str) -> dict[str, Any]:
    rule = next(r for r in RULES if r.name == name)
    exp = {"severity": rule.severity, "source": "chatmon", **labels}
    if rule.detector:
        exp["detector"] = rule.detector
    return {"exp_labels": exp, "exp_annotations": _annotations(name, value, **labels)}


BT = {"bot": "b1", "tenant": "t1"}
LEAK = 'chatmon_findings_total{detector="pii",label="pii.leak",bot="b1",tenant="t1",flagged="%s"}'
TURNS = 'chatmon_turns_processed_total{bot="b1",tenant="t1",role="assistant"}'
TOX = 'chatmon_flagged_turns_total{detector="toxicity",bot="b1",tenant="t1"}'
ECHO = LEAK.replace("pii.leak", "pii.sensitive_echo")
REDACTION = 'chatmon_redaction_failures_total{outcome="%s"}'

PROMTOOL_CASES: list[tuple[str, list[dict[str, str]], list[dict[str, Any]]]] = [
    ("leak on a series that first appears already at 1",
     [{"series": LEAK % "true", "values": "_ _ 1 1 1 1 1 1 1 1 1 1"}],
     [{"eval_time": "3m", "alertname": "ChatmonPIILeak", "exp_alerts": [_alert(
         "ChatmonPIILeak", "1", **BT)]},
      {"eval_time": "9m", "alertname": "ChatmonPIILeak", "exp_alerts": []}]),
    ("leak as an increase of an existing series; resolves after the window",
     [{"series": LEAK % "true", "values": "0 0 0 0 0 0 0 2 2 2 2 2 2 2 2 2 2 2 2 2"}],
     [{"eval_time": "6m", "alertname": "ChatmonPIILeak", "exp_alerts": []},
      {"eval_time": "8m", "alertname": "ChatmonPIILeak", "exp_alerts": [_alert(
          "ChatmonPIILeak", "2", **BT)]},
      {"eval_time": "14m", "alertname": "ChatmonPIILeak", "exp_alerts": []}]),
    ("near miss: unflagged pii.leak findings do not page",
     [{"series": LEAK % "false", "values": "0 1 2 3 4 5 6"}],
     [{"eval_time": "5m", "alertname": "ChatmonPIILeak", "exp_alerts": []}]),
    ("sensitive echo on a series that first appears already at 1 pages",
     [{"series": ECHO % "true", "values": "_ _ 1 1 1 1 1 1 1 1 1 1"}],
     [{"eval_time": "3m", "alertname": "ChatmonSensitiveEcho", "exp_alerts": [_alert(
         "ChatmonSensitiveEcho", "1", **BT)]},
      {"eval_time": "3m", "alertname": "ChatmonPIILeak", "exp_alerts": []},
      {"eval_time": "9m", "alertname": "ChatmonSensitiveEcho", "exp_alerts": []}]),
    ("near miss: unflagged pii.sensitive_echo findings do not page",
     [{"series": ECHO % "false", "values": "0 1 2 3 4 5 6"}],
     [{"eval_time": "5m", "alertname": "ChatmonSensitiveEcho", "exp_alerts": []}]),
    ("a first redaction failure opens a ticket; it resolves after the window",
     [{"series": REDACTION % "masked", "values": "_ _ 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3"}],
     [{"eval_time": "4m", "alertname": "ChatmonRedactionFailed", "exp_alerts": [
         {"exp_labels": {"severity": "ticket", "source": "chatmon"},
          "exp_annotations": _annotations("ChatmonRedactionFailed", "3")}]},
      {"eval_time": "15m", "alertname": "ChatmonRedactionFailed", "exp_alerts": []}]),
    ("near miss: no new redaction failures, no ticket",
     [{"series": REDACTION % "dead_lettered", "values": "2x20"}],
     [{"eval_time": "15m", "alertname": "ChatmonRedactionFailed", "exp_alerts": []}]),
    ("toxicity at 10% of 10 turns a minute pages",
     [{"series": TURNS, "values": "0+10x30"}, {"series": TOX, "values": "0+1x30"}],
     [{"eval_time": "20m", "alertname": "ChatmonToxicityRate", "exp_alerts": [_alert(
         "ChatmonToxicityRate", "10%", **BT)]}]),
    ("near misses: 2% toxic; 100% toxic on too few turns",
     [{"series": TURNS, "values": "0+10x30"},
      {"series": TOX, "values": "0+0.2x30"},
      {"series": TURNS.replace("b1", "b2"), "values": "0+1x30"},
      {"series": TOX.replace("b1", "b2"), "values": "0+1x30"}],
     [{"eval_time": "20m", "alertname": "ChatmonToxicityRate", "exp_alerts": []}]),
    ("input without processing is a stall; processing clears it",
     [{"series": "chatmon_events_received_total", "values": "0+10x20"},
      {"series": "chatmon_events_processed_total", "values": "0x10 0+10x10"}],
     [{"eval_time": "8m", "alertname": "ChatmonPipelineStalled", "exp_alerts": [
         {"exp_labels": {"severity": "page", "source": "chatmon"},
          "exp_annotations": _annotations("ChatmonPipelineStalled", "")}]},
      {"eval_time": "14m", "alertname": "ChatmonPipelineStalled", "exp_alerts": []}]),
]


@needs_promtool
@pytest.mark.parametrize(("what", "series", "checks"), PROMTOOL_CASES,
                         ids=[c[0] for c in PROMTOOL_CASES])
def test_promtool_unit_tests(tmp_path, what, series, checks):
    shutil.copy(RULES_FILE, tmp_path / "rules.yml")
    spec = {"rule_files": ["rules.yml"], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": checks}]}
    (tmp_path / "test.yml").write_text(json.dumps(spec))  # JSON is YAML
    out = subprocess.run([PROMTOOL, "test", "rules", "test.yml"], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, f"{what}\n{out.stdout}{out.stderr}"


def test_docs_list_every_rule_and_the_current_thresholds():
    text = DOCS.read_text()
    assert thresholds_table() in text, "paste thresholds_table() into docs/alerts.md"
    for r in RULES:
        assert f'<a id="{promql.anchor(r)}"></a>' in text, r.name
