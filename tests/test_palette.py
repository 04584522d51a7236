"""One colour per signal (dashboards/palette.py), told apart by every reader: the six signal
colours stay apart (CIEDE2000 >= 10) with normal vision and under simulated deuteranopia and
protanopia; the week before keeps its signal's hue, lighter; and the report's figures and both
Grafana dashboards draw each signal in its colour."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from dashboards import GENERATED
from dashboards.palette import SIGNAL, lighter
from pipeline.report.panels import panels
from pipeline.report.weekly import Window, collect
from tests.colour_vision import DEUTERANOPIA, NORMAL, PROTANOPIA, Matrix, delta_e, hue, lab
from tests.report import seed_wide as wide

APART = 10.0
VISIONS = {"normal": NORMAL, "deuteranopia": DEUTERANOPIA, "protanopia": PROTANOPIA}
# plotly's default qualitative colours, which the report used before: blue and purple become
# one colour for a deuteranope, so the check below must reject them.
PLOTLY = ("#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3")


def closest(colours: Any, vision: Matrix) -> float:
    return min(delta_e(lab(a, vision), lab(b, vision))
               for a, b in itertools.combinations(colours, 2))


@pytest.mark.parametrize("vision", list(VISIONS))
def test_signal_colours_stay_apart_for_every_reader(vision: str) -> None:
    assert closest(SIGNAL.values(), VISIONS[vision]) >= APART


def test_the_check_rejects_a_palette_that_is_not_colour_blind_safe() -> None:
    assert closest(PLOTLY, NORMAL) >= APART  # fine for most readers ...
    assert closest(PLOTLY, DEUTERANOPIA) < 6  # ... not for a deuteranope
    assert closest(PLOTLY, PROTANOPIA) < 1


@pytest.mark.parametrize("signal", list(SIGNAL))
def test_the_week_before_keeps_the_hue_lighter(signal: str) -> None:
    solid, light = SIGNAL[signal], lighter(SIGNAL[signal])
    assert abs((hue(light) - hue(solid) + 180) % 360 - 180) <= 15
    assert lab(light)[0] - lab(solid)[0] >= 10
    for vision in VISIONS.values():  # and the two of a pair are told apart
        assert delta_e(lab(solid, vision), lab(light, vision)) >= APART


@pytest.fixture(scope="module")
def wide_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    engine = wide.wide_store(tmp_path_factory.mktemp("palette"))
    yield engine
    engine.dispose()


def test_report_figures_draw_each_signal_in_its_colour(wide_engine: Engine) -> None:
    data = collect(wide_engine, Window(wide.END - wide.WEEK, wide.END))
    cards = {p.id: p.figure for p in panels(data) if p.figure is not None}
    for signal, card in (("toxicity", "plot-toxicity"), ("bias", "plot-bias"),
                         ("manipulation", "plot-manipulation"), ("pii", "plot-pii"),
                         ("empathy", "plot-empathy"), ("repetition", "plot-near-duplicates"),
                         ("repetition", "plot-stock-empathy")):
        colours = {t.name: t.marker.color for t in cards[card].data}
        assert colours == {"this week": SIGNAL[signal], "the week before": lighter(SIGNAL[signal])}
    for ranked in ("plot-formulas", "plot-phrases"):
        assert {t.marker.color for t in cards[ranked].data} == {SIGNAL["repetition"]}


def _colours(panel: dict[str, Any]) -> list[tuple[str, str]]:
    """(matched series, colour) of a panel: its default colour and its overrides."""
    default = panel.get("fieldConfig", {}).get("defaults", {}).get("color")
    out = [("*", default["fixedColor"])] if default and "fixedColor" in default else []
    for o in panel.get("fieldConfig", {}).get("overrides", []):
        out += [(o["matcher"]["options"], p["value"]["fixedColor"]) for p in o["properties"]
                if p["id"] == "color"]
    return out


@pytest.mark.parametrize("stem", ["chatmon-weekly-quality", "chatmon-oncall"])
def test_grafana_draws_each_signal_in_its_colour(stem: str) -> None:
    dash = json.loads((GENERATED / f"{stem}.json").read_text())
    coloured = {p["title"]: _colours(p) for p in dash["panels"] if _colours(p)}
    assert len(coloured) >= 4
    for title, pairs in coloured.items():
        for matched, colour in pairs:
            signal = next((s for s in SIGNAL if s in matched), None)
            assert colour in SIGNAL.values(), title
            if signal is not None:
                assert colour == SIGNAL[signal], (title, matched)
    by_detector = "Flagged turns per detector (per s)" if stem == "chatmon-oncall" else (
        "Flagged replies per 1,000 replies (weekly)")
    assert {c for _, c in coloured[by_detector]} == set(SIGNAL.values())


def test_the_palette_module_is_the_one_source() -> None:
    """No hex colour of a signal is written anywhere else in the report or dashboards code."""
    root = Path(__file__).resolve().parents[1]
    code = [*(root / "pipeline" / "report").rglob("*.py"), *(root / "dashboards").glob("*.py")]
    for path in code:
        if path.name == "palette.py":
            continue
        text = path.read_text().upper()
        assert not [c for c in SIGNAL.values() if c.upper() in text], path
