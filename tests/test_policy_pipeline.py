"""The policy through the real pipeline: per-tenant thresholds on the real empathy detector's
findings (the issue's Done-when), allow-list suppression on the real PII detector's findings
(stored unflagged with the entry's id, counted in the summary and a metric, never the raw
text), and both alert paths respecting it: the embedded engine, and the shipped Prometheus
rules under promtool on the counters the pipeline exported."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import create_engine, text

from pipeline.alerts.engine import Alert, AlertEngine
from pipeline.alerts.rules import RULES
from pipeline.embedded import runner
from pipeline.ingest.events import RawRecord
from pipeline.metrics import PipelineMetrics
from pipeline.policy.engine import Policy
from pipeline.scoring.process import BatchReport
from tests.conftest import EXAMPLES
from tests.test_alerts_rules import _alert
from tests.test_policy import ISSUE_POLICY

ROOT = Path(__file__).resolve().parents[1]
RULES_FILE = ROOT / "deploy/prometheus/chatmon-alerts.rules.yml"
PROMTOOL = shutil.which("promtool")
# The issue's file raises empathy.alignment for globex and its Done-when also names empathy.er;
# since issue 27 those are measurements the shipped policy never flags (threshold 2.0), so the
# tenant layer is shown on empathy's failures instead.
DONE_WHEN_POLICY = ISSUE_POLICY.replace(
    '"empathy.alignment" = 1.0',
    '"empathy.alignment" = 1.0\n"empathy.missed" = 1.0\n"empathy.formulaic_restatement" = 1.0')
WITHOUT_GLOBEX = ISSUE_POLICY.replace('[tenants.globex.thresholds]\n"empathy.alignment" = 1.0\n',
                                      "")
RAISED = ("empathy.missed", "empathy.formulaic_restatement")
SUPPORT_LINE = "(212) 555-0147"
ALLOW_SUPPORT_LINE = f"""
version = "support-line"
[[allow]]
id = "globex-support-line"
tenant = "globex"
label = "pii.*"
literal = "{SUPPORT_LINE}"
reason = "globex's own support number, which its bot gives out on purpose"
"""


def version_of(path: Path) -> str:
    from pipeline.settings import Settings

    return Policy.from_settings(Settings(policy_file=path)).version


@pytest.fixture(scope="module")
def empathy_suite():  # type: ignore[no-untyped-def]
    from pipeline.scoring.suite import DetectorSuite

    suite = DetectorSuite.from_names(["empathy"])
    suite.load()
    return suite


def example_records(n_conversations: int) -> list[RawRecord]:
    """The first conversations of examples/transcripts.jsonl (both tenants take part)."""
    lines = (EXAMPLES / "transcripts.jsonl").read_text().splitlines()
    keep = {f"conv-{i:04d}" for i in range(1, n_conversations + 1)}
    return [RawRecord("examples", f"line {i}", line) for i, line in enumerate(lines, 1)
            if json.loads(line)["conversation_id"] in keep]


def findings(url: str) -> dict[str, dict[str, Any]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(text("select id, tenant, label, score, flagged, suppressed, "
                                 "suppressed_by, policy_version, excerpt from findings"))
        out = {r.id: dict(r._mapping) for r in rows}
    engine.dispose()
    return out


@pytest.mark.slow
def test_done_when_globex_gets_no_empathy_flags_below_1_and_others_are_unchanged(
        empathy_suite, make_processor, tmp_path: Path) -> None:
    records = example_records(40)
    stores = {}
    for name, text_ in (("with", DONE_WHEN_POLICY), ("without", WITHOUT_GLOBEX)):
        url = f"sqlite:///{tmp_path / name}.db"
        (tmp_path / f"{name}.toml").write_text(text_)
        proc = make_processor(url, suite=empathy_suite, policy_file=tmp_path / f"{name}.toml")
        proc.process(records)
        stores[name] = findings(url)
    with_, without = stores["with"], stores["without"]
    assert with_.keys() == without.keys() and with_
    tenants = {r["tenant"] for r in with_.values()}
    assert tenants == {"acme", "globex"}
    below = [r for r in with_.values() if r["tenant"] == "globex" and r["label"] in RAISED
             and r["score"] < 1.0]
    assert below and not any(r["flagged"] for r in below)
    # The test can fail: without the tenant section, some of those were flagged.
    assert any(without[r["id"]]["flagged"] for r in below)
    changed = {fid for fid in with_ if with_[fid]["flagged"] != without[fid]["flagged"]}
    assert changed and all(with_[f]["tenant"] == "globex" and with_[f]["label"] in RAISED
                           for f in changed)
    assert {r["policy_version"] for r in with_.values()} == {version_of(tmp_path / "with.toml")}


def _pii_turns(tenant: str, conv: str) -> list[RawRecord]:
    user = {"conversation_id": conv, "turn": 0, "role": "user", "text": "My order never came.",
            "ts": "2026-11-20T10:00:00Z", "bot_id": "helpdesk", "tenant": tenant}
    bot = {**user, "turn": 1, "role": "assistant", "ts": "2026-11-20T10:00:05Z",
           "text": f"Please call our support line on {SUPPORT_LINE} between 9 and 5."}
    return [RawRecord("t", f"{conv} {i}", json.dumps(e)) for i, e in enumerate((user, bot))]


@pytest.fixture
def suppressed_run(make_processor, sqlite_url: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """The support line said by globex's bot and by acme's, with globex's allow-list entry."""
    path = tmp_path / "policy.toml"
    path.write_text(ALLOW_SUPPORT_LINE)
    proc = make_processor(sqlite_url, policy_file=path)
    src = tmp_path / "turns.jsonl"
    src.write_text("".join(json.dumps(json.loads(r.data)) + "\n" for r in  # type: ignore[arg-type]
                           _pii_turns("globex", "g1") + _pii_turns("acme", "a1")))
    reports: list[BatchReport] = []
    proc.on_batch = reports.append
    summary = runner.run([str(src)], proc.settings, progress=False, processor=proc)
    return proc, summary, reports


def test_allow_list_suppresses_globex_support_line_only(suppressed_run, sqlite_url) -> None:
    proc, summary, _ = suppressed_run
    rows = [r for r in findings(sqlite_url).values() if r["label"] in
            ("pii.phone_number", "pii.leak")]
    globex = [r for r in rows if r["tenant"] == "globex"]
    acme = [r for r in rows if r["tenant"] == "acme"]
    assert {r["label"] for r in globex} == {r["label"] for r in acme} == {
        "pii.phone_number", "pii.leak"}
    assert all(r["suppressed"] and not r["flagged"] and r["suppressed_by"] ==
               "globex-support-line" for r in globex)
    assert all(r["flagged"] and not r["suppressed"] and r["suppressed_by"] is None for r in acme)
    assert {r["policy_version"] for r in rows} == {proc.policy.version}
    d = summary.as_dict()
    assert d["suppressed_by_label"] == {"pii.leak": 1, "pii.phone_number": 1}
    assert d["policy_version"].startswith("support-line+")
    dump = json.dumps(list(findings(sqlite_url).values()), default=str)
    assert SUPPORT_LINE not in dump and "555-0147" not in dump  # matched raw, never stored


def test_suppressed_findings_are_counted_in_the_metrics(suppressed_run) -> None:
    proc, _, reports = suppressed_run
    pm = PipelineMetrics(CollectorRegistry())
    for r in reports:
        pm.on_batch(r)
    get = pm.registry.get_sample_value
    labels = {"detector": "pii", "label": "pii.leak", "bot": "helpdesk"}
    assert get("chatmon_findings_suppressed_total", {**labels, "tenant": "globex"}) == 1
    assert get("chatmon_findings_suppressed_total", {**labels, "tenant": "acme"}) is None
    assert get("chatmon_findings_total", {**labels, "tenant": "globex", "flagged": "true"}) is None
    assert get("chatmon_findings_total", {**labels, "tenant": "acme", "flagged": "true"}) == 1
    assert get("chatmon_policy_info", {"version": proc.policy.version}) == 1


class Inbox:
    def __init__(self) -> None:
        self.alerts: list[Alert] = []

    def send(self, alert: Alert) -> None:
        self.alerts.append(alert)


def test_embedded_alerts_page_for_acme_not_for_globex(suppressed_run) -> None:
    _, _, reports = suppressed_run
    inbox = Inbox()
    engine = AlertEngine([r for r in RULES if r.name == "ChatmonPIILeak"], inbox, cooldown_s=0)
    for r in reports:
        engine.on_batch(r)
    firing = [a for a in inbox.alerts if a.status == "firing"]
    assert [(a.rule, a.labels["tenant"]) for a in firing] == [("ChatmonPIILeak", "acme")]


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian package "
                    "prometheus; `make system-deps` installs it)")
def test_prometheus_rules_page_for_acme_not_for_globex(suppressed_run, tmp_path: Path) -> None:
    """The pipeline's own exported counters, as a series that appears after 2 minutes, through
    the shipped rules file."""
    _, _, reports = suppressed_run
    pm = PipelineMetrics(CollectorRegistry())
    for r in reports:
        pm.on_batch(r)
    series = []
    for metric in pm.registry.collect():
        for s in metric.samples:
            if s.name == "chatmon_findings_total" and s.labels["label"] == "pii.leak":
                inner = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                series.append({"series": f"{s.name}{{{inner}}}",
                               "values": f"_ _ {s.value:g} {s.value:g} {s.value:g}"})
    assert len(series) == 2  # acme flagged=true, globex flagged=false
    shutil.copy(RULES_FILE, tmp_path / "rules.yml")
    expected = _alert("ChatmonPIILeak", "1", bot="helpdesk", tenant="acme")
    spec = {"rule_files": ["rules.yml"], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": [
                {"eval_time": "3m", "alertname": "ChatmonPIILeak", "exp_alerts": [expected]}]}]}
    (tmp_path / "test.yml").write_text(json.dumps(spec))
    out = subprocess.run([PROMTOOL, "test", "rules", "test.yml"], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
