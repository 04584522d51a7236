"""The weekly report as a reader sees it, in headless Chromium (Debian's /usr/bin/chromium over
the DevTools pipe) at 1280, 1440 and 1920 px and on a 390 px phone, on a store built to stress it
(tests/report/seed_wide.py: 12 bots, 40-character model names, user groups of 1, 5 and 50
replies): nothing clipped by its card, nothing overlapping, measured on the page's own geometry
(tests/geometry.py) over every card and every figure the report has, whoever added it. Groups
under the minimum are listed and not drawn; the gap chart draws intervals; a difference is
marked only when its interval excludes 0. The picture in docs/dashboards.md is taken here
(CHATMON_UPDATE_SCREENSHOTS=1)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from dashboards import queries as q
from dashboards import sqlrun
from pipeline.report import comparisons as cmp
from pipeline.report import panels
from pipeline.report.weekly import Window, collect, render
from tests import geometry
from tests.browser import CHROMIUM, Chromium, shot_path
from tests.report import seed_wide as wide

WIDTHS = (1280, 1440, 1920, 390)
WINDOW = Window(wide.END - wide.WEEK, wide.END)
needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                    reason="Debian package chromium not installed")
# Every figure drawn, at its card's width (a figure drawn before the page finished its layout is
# redrawn when its card settles).
DRAWN = """(() => { const p = [...document.querySelectorAll('.js-plotly-plot')];
  return p.length > 0 && p.every(d => { const s = d.querySelector('svg.main-svg');
    return s && Math.abs(s.getBoundingClientRect().width - d.getBoundingClientRect().width) < 1;
  }); })()"""
FIGURES = """[...document.querySelectorAll('.js-plotly-plot')].map(gd => ({
  id: gd.id, card: gd.closest('section').id,
  traces: gd.data.map(t => ({name: t.name, type: t.type, x: t.x, y: t.y,
    error: t.error_x ? {plus: t.error_x.array, minus: t.error_x.arrayminus} : null,
    colour: t.marker && t.marker.color, ring: t.marker && t.marker.line && t.marker.line.width})),
  errorbars: gd.querySelectorAll('.errorbar path.xerror').length,
  ticks: [...gd.querySelectorAll('.ytick text')].map(e => e.textContent),
}))"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    engine = wide.wide_store(tmp_path_factory.mktemp("wide"))
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def report(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "weekly.html"
    path.write_text(render(engine, WINDOW, datetime(2026, 11, 21, 9, tzinfo=UTC)),
                    encoding="utf-8")
    return path


def _open(browser: Chromium, page: Path, width: int) -> None:
    browser.width = width
    browser.open(page.as_uri())
    browser.wait_until(DRAWN)
    browser.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


@pytest.fixture(scope="module")
def seen(report: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, Any]]:
    """Per width: the page's geometry, its figures' drawn data, and its console errors."""
    tmp = tmp_path_factory.mktemp("chromium")
    browser = Chromium(tmp / "profile")
    out = {}
    try:
        for width in WIDTHS:
            _open(browser, report, width)
            out[width] = {"page": geometry.measure(browser, "main section"),
                          "figures": browser.evaluate(FIGURES), "errors": browser.errors()}
            if width == 1280:
                top = browser.evaluate("document.querySelector('.grid').offsetTop")
                browser.screenshot(shot_path("report.png", tmp), clip={
                    "x": 0, "y": top - 14, "width": width, "height": 1500, "scale": 0.6})
    finally:
        browser.close()
    return out


@needs_chromium
@pytest.mark.parametrize("width", WIDTHS)
def test_nothing_is_clipped_and_no_text_overlaps_another(seen: dict[int, Any],
                                                         width: int) -> None:
    page = seen[width]["page"]
    assert len(page["cards"]) >= 15  # tables and every figure card
    assert sum(len(c["svgs"]) > 0 for c in page["cards"]) >= 10
    assert geometry.problems(page) == []
    assert seen[width]["errors"] == []


@needs_chromium
def test_the_store_draws_every_figure_the_report_has(seen: dict[int, Any]) -> None:
    """The check above covers whatever figure the report has, but only if this store makes the
    report draw it: a figure added to pipeline/report/panels.py must be drawn here (extend
    seed_wide.py with the findings it reads)."""
    source = Path(panels.__file__).read_text()
    every = set(re.findall(r'"(plot-[\w-]+)"', source)) | {f"plot-{h}" for h in panels.HARM_TITLES}
    assert len(every) >= 11
    for width in WIDTHS:
        assert {f["id"] for f in seen[width]["figures"]} == every


def _figure(seen: dict[int, Any], div: str) -> dict[str, Any]:
    return next(f for f in seen[1440]["figures"] if f["id"] == div)


@needs_chromium
def test_groups_under_the_minimum_are_listed_not_drawn(seen: dict[int, Any],
                                                       report: Path) -> None:
    gap = _figure(seen, "plot-gap")
    drawn = {y for t in gap["traces"] for y in t["y"]}
    assert any(y.startswith("deaf (disability)") for y in drawn)
    assert any(y.startswith("65+ (age) · billing") for y in drawn)
    assert not any(y.startswith(("muslim", "65+ (age) · helpdesk")) for y in drawn)
    html = report.read_text()
    listed = html.split('id="card-plot-gap"', 1)[1].split("</section>", 1)[0]
    assert "muslim (religion) · helpdesk-north-01 (n=5)" in listed
    assert "65+ (age) · helpdesk-north-01 (n=1)" in listed
    empathy = _figure(seen, "plot-empathy")
    assert not any("tiny-pilot" in y for t in empathy["traces"] for y in t["y"])
    assert "tiny-pilot-bot-11 / acme-support-assistant-2026-11-eu-west-1 (n=8)" in html


@needs_chromium
def test_the_gap_chart_draws_intervals_and_marks_only_what_excludes_zero(
        seen: dict[int, Any]) -> None:
    gap = _figure(seen, "plot-gap")
    points = 0
    for trace in gap["traces"]:
        for x, plus, minus in zip(trace["x"], trace["error"]["plus"], trace["error"]["minus"],
                                  strict=True):
            points += 1
            assert plus > 0 and minus > 0  # an interval, not a bare bar
            excludes_zero = x - minus > 0 or x + plus < 0
            assert excludes_zero == (trace["name"] == "interval excludes 0")
    assert points == 2 and gap["errorbars"] >= points
    marked = next(t for t in gap["traces"] if t["name"] == "interval excludes 0")
    assert [y.split(" · ")[0] for y in marked["y"]] == ["deaf (disability)"]


def test_changes_are_marked_only_when_their_interval_excludes_zero(engine: Engine) -> None:
    data = collect(engine, WINDOW, cmp.Settings())
    groups = [data["empathy"], data["near_duplicates"], *data["harms"].values()]
    rows = [r for g in groups for r in g.rows if r.change is not None]
    assert len(rows) > 40
    for r in rows:
        c = r.change
        assert r.significant == (c["low"] > 0 or c["high"] < 0)
    toxic = {r.key: r for r in data["harms"]["toxicity"].rows}
    assert toxic[wide.TOXIC_BOT].significant and toxic[wide.TOXIC_BOT].change["low"] > 0
    assert sum(r.significant for r in toxic.values()) == 1


@needs_chromium
def test_rings_mark_the_significant_changes_in_the_drawing(seen: dict[int, Any]) -> None:
    toxicity = _figure(seen, "plot-toxicity")
    now = next(t for t in toxicity["traces"] if t["name"] == "this week")
    ringed = [y for y, w in zip(now["y"], now["ring"], strict=True) if w > 0]
    assert ringed == [wide.TOXIC_BOT]


def test_the_minimum_is_configurable(engine: Engine) -> None:
    data = collect(engine, WINDOW, cmp.Settings(min_replies=3))
    listed = [k for k, _ in data["gap"].too_few]
    assert listed == ["65+ (age) · helpdesk-north-01"]
    assert len(data["gap"].rows) == 3


def test_the_report_draws_the_dashboards_numbers(engine: Engine) -> None:
    """The intervals are computed from the replies in Python; their centres must be the
    numbers the Grafana panels show from SQL."""
    data = collect(engine, WINDOW, cmp.Settings())

    def sql(query: Any) -> list[dict[str, Any]]:
        return sqlrun.run(engine, query.sql, WINDOW.start, WINDOW.end).records()

    gaps = {f"{r['user_group']} ({r['category']}) · {r['bot']}": r["gap"]
            for r in sql(q.EMPATHY_GAP)}
    assert len(data["gap"].rows) == 2
    for row in data["gap"].rows:
        assert row.change["value"] == pytest.approx(float(gaps[row.key]), abs=1e-4)
    means = {f"{r['bot']} / {r['model']}": r["empathy"] for r in sql(q.MECHANISMS)}
    assert len(data["empathy"].rows) == 12  # 14 bot/models, 2 with too few replies
    for row in data["empathy"].rows:
        assert row.now["value"] == pytest.approx(float(means[row.key]), abs=1e-4)
    summary = {r["bot"]: r for r in sql(q.BOT_SUMMARY)}
    for harm, groups in data["harms"].items():
        for row in groups.rows:
            assert 1000 * row.now["value"] == pytest.approx(float(summary[row.key][harm]),
                                                            abs=0.1)
