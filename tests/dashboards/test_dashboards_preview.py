"""Each dashboard's layout, drawn from its JSON as static HTML and screenshotted in headless
Chromium (into docs/img/dashboard-<uid>.png, which docs/dashboards.md shows, with
CHATMON_UPDATE_SCREENSHOTS=1). The browser checks that every panel is drawn where its gridPos
says, and, at 1280, 1440 and 1920 px and on a 390 px phone (panels stacked, as Grafana does),
that no panel leaves the page and no title or query is clipped or overlaps another text
(tests/geometry.py, the report's check)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboards import builders
from dashboards.preview import COLUMN_PX, ROW_PX, layout_html
from tests import geometry
from tests.browser import CHROMIUM, Chromium, shot_path

WIDTHS = (1280, 1440, 1920, 390)

BOXES = """[...document.querySelectorAll('#grid > div')].map(e => {
  const r = e.getBoundingClientRect(), g = document.getElementById('grid').getBoundingClientRect();
  return [Math.round(r.left - g.left), Math.round(r.top - g.top), e.className];
})"""


def test_preview_lists_every_panel() -> None:
    for build in builders().values():
        dash = build()
        html = layout_html(dash)
        for panel in dash["panels"]:
            assert panel["title"].replace("&", "&amp;") in html


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian package chromium not installed")
@pytest.mark.parametrize("stem", list(builders()))
def test_layout_screenshot(stem: str, tmp_path: Path) -> None:
    dash = builders()[stem]()
    page = tmp_path / f"{stem}.html"
    page.write_text(layout_html(dash), encoding="utf-8")
    browser = Chromium(tmp_path / "profile", width=24 * COLUMN_PX + 24, height=700)
    try:
        browser.open(page.as_uri())
        boxes = browser.evaluate(BOXES)
        assert browser.errors() == []
        shot = browser.screenshot(shot_path(f"dashboard-{dash['uid']}.png", tmp_path))
    finally:
        browser.close()
    assert len(boxes) == len(dash["panels"])
    for (left, top, _cls), panel in zip(boxes, dash["panels"], strict=True):
        g = panel["gridPos"]
        assert (left, top) == (g["x"] * COLUMN_PX, g["y"] * ROW_PX), panel["title"]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian package chromium not installed")
@pytest.mark.parametrize("stem", list(builders()))
def test_nothing_is_clipped_or_overlapping_at_any_width(stem: str, tmp_path: Path) -> None:
    dash = builders()[stem]()
    page = tmp_path / f"{stem}.html"
    page.write_text(layout_html(dash), encoding="utf-8")
    browser = Chromium(tmp_path / "profile")
    try:
        for width in WIDTHS:
            browser.width = width
            browser.open(page.as_uri())
            seen = geometry.measure(browser, ".panel, .row")
            assert len(seen["cards"]) == len(dash["panels"])
            assert geometry.problems(seen) == [], width
        assert browser.errors() == []
    finally:
        browser.close()
