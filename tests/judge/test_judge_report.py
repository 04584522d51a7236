"""Classifier-vs-judge agreement per week in the weekly report and the Grafana dashboard, on the
seeded store (tests/dashboards/seed.py: the judge agrees less in the last week)."""

from __future__ import annotations

from sqlalchemy import create_engine

from dashboards import queries as q
from dashboards import weekly
from pipeline.report.weekly import Window, collect, render
from pipeline.store import db
from tests.dashboards.seed import END, seed_store


def test_weekly_kappa_shows_the_drift_in_report_and_dashboard(sqlite_url):
    db.upgrade(sqlite_url)
    engine = create_engine(sqlite_url)
    seed_store(engine)
    window = Window(END.replace(day=14), END)
    rows = collect(engine, window)["judge_agreement"]
    assert {r["metric"] for r in rows} == {"judge.empathy / judge-seed"}
    assert len(rows) == 3 and all(r["n"] > 5 for r in rows)  # three ISO weeks
    kappas = [r["kappa"] for r in rows]
    assert kappas[-1] < min(kappas[:-1]) - 0.2  # the seeded drift
    html = render(engine, window)
    assert 'id="plot-judge-agreement"' in html and "Classifier vs LLM judge" in html
    panels = {p["title"]: p for p in weekly.build()["panels"]}
    panel = panels["Classifier vs LLM judge agreement per week (weighted kappa)"]
    assert panel["targets"][0]["rawSql"] == q.JUDGE_AGREEMENT_WEEKLY.sql.strip()
