"""chatmon report: one self-contained HTML file (plotly.js inline, nothing fetched), checked in
headless Chromium (Debian's /usr/bin/chromium over the DevTools pipe): it loads with no console
errors and every plot renders an svg. How it reads at each width, and the screenshot in the
docs: tests/report/test_report_layout.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine

from pipeline.cli import cli
from pipeline.report.weekly import Window, default_window, render
from pipeline.store import db
from tests.browser import CHROMIUM, Chromium
from tests.dashboards.seed import seed_store

ROOT = Path(__file__).resolve().parents[1]
N_PLOTS = 14  # every figure but the empathy gap (its groups all have too few replies)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Engine]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'chatmon.db'}"
    db.upgrade(url)
    engine = db.make_engine(url)
    seed_store(engine)
    yield url, engine
    engine.dispose()


@pytest.fixture(scope="module")
def report(store: tuple[str, Engine], tmp_path_factory: pytest.TempPathFactory) -> Path:
    _, engine = store
    path = tmp_path_factory.mktemp("report") / "weekly.html"
    html = render(engine, default_window(engine), datetime(2026, 11, 21, 9, tzinfo=UTC))
    path.write_text(html, encoding="utf-8")
    return path


def test_default_window_is_the_7_days_ending_at_the_newest_turn(store: tuple[str, Engine],
                                                                 tmp_path: Path) -> None:
    _, engine = store
    window = default_window(engine)
    # the newest turn is at 18:08: the window ends at the next midnight (UTC): the phrase and
    # user-group rollups count whole days
    assert window.end == datetime(2026, 11, 21, 0, 0, tzinfo=UTC)
    assert window.end - window.start == timedelta(days=7)
    assert window.previous() == Window(window.start - timedelta(days=7), window.start)
    empty = db.make_engine(f"sqlite:///{tmp_path / 'empty.db'}")
    db.upgrade(str(empty.url))
    now = datetime.now(UTC)
    assert 0 < (default_window(empty).end - now).total_seconds() <= 86400
    assert default_window(empty).end.hour == 0


def test_report_is_self_contained(report: Path) -> None:
    html = report.read_text()
    assert not re.search(r"<script[^>]+src=", html)
    assert not re.search(r"<link[^>]+href=", html)
    library = html.index("<script>"), html.index("</script>")
    assert "plotly.js v" in html[library[0]:library[1]]  # the library itself is inline
    rest = html[:library[0]] + html[library[1]:]
    assert not re.findall(r"https?://", rest)  # and nothing else points anywhere
    assert html.count("Plotly.newPlot") == N_PLOTS
    assert "[assistant turn" not in html  # aggregates and redacted excerpts only


def test_report_shows_every_section(report: Path) -> None:
    html = report.read_text()
    for text in ("Per bot: this week", "Worst conversations", "Data quality", "helpdesk-a",
                 "care-c", "2026-11-14 00:00 to 2026-11-21 00:00",
                 "Reviewers against flags, per label"):
        assert text in html
    agreement = html.split('<section id="agreement">', 1)[1].split("</section>", 1)[0]
    assert "<td>empathy.score</td>" in agreement and "<td>pii.leak</td>" in agreement
    links = re.findall(r'href="#conv-([^"]+)"', html)
    assert len(links) == 10 and all(f'<section id="conv-{c}">' in html for c in links)


def test_cli_report_writes_the_file_and_prints_its_path(store: tuple[str, Engine],
                                                        tmp_path: Path) -> None:
    url, _ = store
    out = tmp_path / "r" / "weekly.html"
    result = CliRunner().invoke(cli, ["report", "--database-url", url, "--out", str(out),
                                      "--until", "2026-11-14", "--days", "3"])
    assert result.exit_code == 0, result.output
    assert str(out) in result.output and "2026-11-11 00:00 .. 2026-11-14 00:00" in result.output
    assert "Plotly.newPlot" in out.read_text()


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian package chromium not installed")
def test_report_renders_in_headless_chromium(report: Path, tmp_path: Path) -> None:
    browser = Chromium(tmp_path / "profile", width=1400)
    try:
        browser.open(report.as_uri())
        plots = browser.wait_until(
            "(() => { const p = [...document.querySelectorAll('.js-plotly-plot')];"
            " return p.length && p.every(d => d.querySelector('svg.main-svg'))"
            " ? p.length : 0; })()")
        assert plots == N_PLOTS
        traces = browser.evaluate(
            "[...document.querySelectorAll('.js-plotly-plot')].map(d => d.data.length)")
        assert all(n >= 1 for n in traces)
        assert browser.errors() == []
        assert all(u.startswith(("file:", "data:")) for u in browser.requested_urls())
    finally:
        browser.close()


def test_report_on_postgresql(postgres_url: str) -> None:
    engine = db.make_engine(postgres_url)
    try:
        seed_store(engine)
        window = default_window(engine)
        assert window.end == datetime(2026, 11, 21, 0, 0, tzinfo=UTC)
        html = render(engine, window)
        assert html.count("Plotly.newPlot") == N_PLOTS
        assert len(re.findall(r'href="#conv-([^"]+)"', html)) == 10
    finally:
        engine.dispose()


def test_report_on_an_empty_store_says_so(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    db.upgrade(url)
    engine = db.make_engine(url)
    html = render(engine, default_window(engine))
    engine.dispose()
    assert "Plotly.newPlot" not in html
    assert "No assistant replies in this window." in html
    assert "nothing to plot" in html
    assert "No reviews of findings in this window" in html


def test_report_refuses_an_unmigrated_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    db.upgrade(url, "0001")
    result = CliRunner().invoke(cli, ["report", "--database-url", url, "--out",
                                      str(tmp_path / "r.html")])
    assert result.exit_code != 0
    assert "chatmon db upgrade" in str(result.exception)
    assert not (tmp_path / "r.html").exists()
