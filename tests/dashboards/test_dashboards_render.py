"""Dashboards as code: the committed JSON (dashboards/generated/ and the copies Grafana's file
provider reads in deploy/grafana/dashboards/) equals a fresh render; rendering is deterministic;
panels sit on the grid without overlap; Prometheus queries only use metrics that pipeline.metrics
defines; every datasource uid is provisioned."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from dashboards import GENERATED, builders, render_all, to_json
from pipeline.cli import cli
from pipeline.metrics import ALL_METRICS

ROOT = Path(__file__).resolve().parents[2]
DEPLOY_DASHBOARDS = ROOT / "deploy" / "grafana" / "dashboards"
DATASOURCES = ROOT / "deploy" / "grafana" / "provisioning" / "datasources" / "chatmon.yml"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("dash")
    return {p.name: p.read_text() for p in render_all(out)}


def test_committed_json_equals_a_fresh_render(rendered: dict[str, str]) -> None:
    assert set(rendered) == {"chatmon-oncall.json", "chatmon-weekly-quality.json"}
    for name, body in rendered.items():
        assert (GENERATED / name).read_text() == body, "re-run: chatmon dashboards render"
        assert (DEPLOY_DASHBOARDS / name).read_text() == body, (
            "re-run: chatmon dashboards render --out deploy/grafana/dashboards")


def test_rendering_twice_gives_identical_bytes() -> None:
    for build in builders().values():
        assert to_json(build()) == to_json(build())


def test_cli_render_writes_one_file_per_dashboard(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["dashboards", "render", "--out", str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    files = sorted(p.name for p in (tmp_path / "d").iterdir())
    assert files == ["chatmon-oncall.json", "chatmon-weekly-quality.json"]
    assert str(tmp_path / "d" / "chatmon-oncall.json") in result.output


def _cells(panel: dict[str, Any]) -> set[tuple[int, int]]:
    g = panel["gridPos"]
    return {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}


@pytest.mark.parametrize("stem", list(builders()))
def test_panels_fit_the_grid_without_overlap(stem: str) -> None:
    dash = builders()[stem]()
    seen: set[tuple[int, int]] = set()
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dash["panels"]:
        g = panel["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24
        cells = _cells(panel)
        assert not cells & seen, panel["title"]
        seen |= cells


def test_oncall_queries_use_only_defined_metrics() -> None:
    dash = builders()["chatmon-oncall"]()
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 12
    for expr in exprs:
        used = set(re.findall(r"\b(chatmon_[a-z_]+?)(?:_bucket)?\b", expr))
        assert used and used <= set(ALL_METRICS), expr
    joined = " ".join(exprs)
    for name in ("chatmon_findings_total", "chatmon_batch_seconds", "chatmon_consumer_lag",
                 "chatmon_dead_letters_total"):
        assert name in joined


def test_datasource_uids_are_provisioned() -> None:
    sources = yaml.safe_load(DATASOURCES.read_text())["datasources"]
    provisioned = {(s["type"], s["uid"]) for s in sources}
    for build in builders().values():
        for panel in build()["panels"]:
            if panel["type"] == "row":
                continue
            ds = panel["datasource"]
            assert (ds["type"], ds["uid"]) in provisioned
            assert all(t["datasource"] == ds for t in panel["targets"])


def test_weekly_dashboard_has_the_promised_panels() -> None:
    dash = json.loads((GENERATED / "chatmon-weekly-quality.json").read_text())
    titles = " | ".join(p["title"] for p in dash["panels"])
    for words in ("Empathy per bot and model", "EPITOME", "Emotion alignment",
                  "stock empathy formulas", "Stock empathy share", "procedural phrases",
                  "Near-duplicate", "templaticity", "per 1,000", "Empathy gap", "Week over week",
                  "Worst conversations", "expectation"):
        assert words in titles
    # formulaic empathy leads the repetition row; the bot's script follows it
    assert titles.index("Top stock empathy formulas") < titles.index("Top procedural phrases")
    worst = next(p for p in dash["panels"] if p["title"] == "Worst conversations")
    (link,) = worst["fieldConfig"]["overrides"][0]["properties"][0]["value"]
    assert "var-conversation=${__value.raw}" in link["url"]


def test_alert_rule_file_is_current_and_uses_the_panel_query() -> None:
    from dashboards import alerting, queries

    path = ROOT / "deploy" / "grafana" / "provisioning" / "alerting" / "chatmon.yml"
    text = path.read_text()
    assert text == alerting.to_yaml(), "re-run: python -m dashboards.alerting > " + str(path)
    loaded = yaml.safe_load(text.replace("$$", "$"))
    assert loaded == alerting.build()
    (rule,) = loaded["groups"][0]["rules"]
    assert rule["data"][0]["model"]["rawSql"] == queries.VALIDATION_FAILED_COUNT.sql.strip()
    assert rule["data"][0]["datasourceUid"] == "chatmon-postgres"
    weekly = json.loads((GENERATED / "chatmon-weekly-quality.json").read_text())
    panel_sql = {t["rawSql"] for p in weekly["panels"] for t in p.get("targets", [])}
    assert queries.VALIDATION_FAILED_COUNT.sql.strip() in panel_sql


@pytest.mark.skipif(shutil.which("promtool") is None, reason="Debian package prometheus absent")
def test_oncall_promql_parses(tmp_path: Path) -> None:
    """promtool parses every expression (as recording rules; grafana's {{legend}} is not PromQL)."""
    dash = builders()["chatmon-oncall"]()
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    rules = {"groups": [{"name": "oncall", "rules": [
        {"record": f"chatmon:oncall_panel_{i}", "expr": e} for i, e in enumerate(exprs)]}]}
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules))
    res = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"{len(exprs)} rules found" in res.stdout
