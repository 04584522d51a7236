"""Issue 41: the report computed from the rollups gives the numbers it gave when it read every
reply (tests/report/per_reply.py keeps that computation), on a generated store (12 bots, three
models, three weeks, user groups: tests/report/seed_wide.py, written through the sink) and on
the example data (``chatmon run`` of examples/transcripts.jsonl, real detectors).

Rates (and their Wilson and Newcombe intervals) and every point estimate are equal; the
intervals of means, Student's t and Welch's from the moments where the bootstrap drew from the
replies, agree within TOLERANCE of the bootstrap interval's half width (docs/dashboards.md,
"Statistics a reader can trust", says how close they were).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine

from pipeline.cli import cli
from pipeline.report.comparisons import Settings
from pipeline.report.estimates import Groups
from pipeline.report.weekly import Window, comparisons, default_window
from pipeline.store import db
from pipeline.store.sink import Sink
from tests.dashboards import seed
from tests.report import per_reply
from tests.report import seed_wide as wide

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "transcripts.jsonl"
# A bound of a mean's interval may move by this share of the bootstrap interval's half width.
TOLERANCE = 0.3
MEANS = ("empathy", "bot_empathy", "gap")
RATES = ("missed", "stock_empathy", "near_duplicates")


def _bounds_close(new: dict[str, Any] | None, old: dict[str, Any] | None,
                  where: str) -> float:
    """Asserts equal point estimates and n, and bounds within TOLERANCE; returns the largest
    bound shift as a share of the old half width."""
    assert (new is None) == (old is None), where
    if new is None or old is None:
        return 0.0
    # the same mean summed in another order: equal, but for the last printed digit where it
    # sits on a rounding tie (x.xxxx5 from scores of 4 decimals)
    assert new["value"] == pytest.approx(old["value"], abs=1.000001e-4), where
    assert new["n"] == old["n"], where
    half = (old["high"] - old["low"]) / 2
    shift = max(abs(new["low"] - old["low"]), abs(new["high"] - old["high"]))
    assert shift <= TOLERANCE * half + 1e-4, (where, new, old)  # 1e-4: the 4-decimal rounding
    return shift / half if half > 0 else 0.0


def _same_means(new: Groups, old: Groups, name: str) -> float:
    assert [r.key for r in new.rows] == [r.key for r in old.rows], name
    assert new.too_few == old.too_few, name
    worst = 0.0
    for a, b in zip(new.rows, old.rows, strict=True):
        for part in ("now", "before", "change"):
            worst = max(worst, _bounds_close(getattr(a, part), getattr(b, part),
                                             f"{name} {a.key} {part}"))
        if a.change is not None and b.change is not None and a.significant != b.significant:
            # a verdict may only flip where the interval touches 0 within the tolerance
            near = min(abs(b.change["low"]), abs(b.change["high"]))
            assert near <= TOLERANCE * (b.change["high"] - b.change["low"]) / 2, (name, a.key)
    return worst


def _same_models(new: dict[str, Any] | None, old: dict[str, Any] | None) -> float:
    assert (new is None) == (old is None)
    if new is None or old is None:
        return 0.0
    assert new["models"] == old["models"] and new["replies"] == old["replies"]
    old_rows = {r["signal"]: r for r in old["signals"]}
    assert [r["signal"] for r in new["signals"]] == [
        s for s in old_rows if not s.startswith("style.")]
    worst = 0.0
    for row in new["signals"]:
        was = old_rows[row["signal"]]
        if row["kind"] == "rate":
            assert row["models"] == was["models"], row["signal"]
            assert row["differences"] == was["differences"], row["signal"]
            continue
        for part in ("models", "differences"):
            for m, e in row[part].items():
                worst = max(worst, _bounds_close(e, was[part][m], f"{row['signal']} {m}"))
    return worst


def compare(engine: Engine, window: Window) -> dict[str, float]:
    """Asserts the report's data equal to the per-reply computation's; returns the largest
    interval shift per kind of mean (a share of the bootstrap half width)."""
    new = comparisons(engine, window, Settings())
    old = per_reply.comparisons(engine, window.start, window.end, window.previous().start)
    for name in ("missed", "stock_empathy", "near_duplicates"):
        assert new[name] == old[name], name
    for harm, groups in old["harms"].items():
        assert new["harms"][harm] == groups, harm
    assert {r["bot"]: r["replies"] for r in new["bots"]} == old["replies"]
    worst = {name: _same_means(new[name], old[name], name) for name in MEANS}
    for m, groups in old["mechanisms"].items():
        worst[m] = _same_means(new["mechanisms"][m], groups, m)
    worst["models"] = _same_models(new["models"], old["models"])
    return worst


def _edge_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Beside the wide store: 25 replies this week of a bot and model without names, and 25
    users who mention two groups in one turn (the reply counts for each) and one group twice
    (it counts once)."""
    turns, findings = [], []
    for c in range(50):
        bot, model = ("", "") if c < 25 else (wide.FLAT_BOT, wide.MODELS[1])
        t0 = wide.END - wide.WEEK + timedelta(hours=2, minutes=7 * c)
        user = seed._turn(f"edge-{c:02d}", 0, "user", t0, bot, "acme") | {"model": model}
        reply = seed._turn(f"edge-{c:02d}", 1, "assistant", t0 + timedelta(minutes=1), bot,
                           "acme") | {"model": model}
        turns += [user, reply]
        findings.append(seed._finding(reply, "empathy.score", 0.3 + c / 100, False, {
            "er": {"level": c % 3}, "ip": {"level": 0}, "ex": {"level": 1},
            "alignment": 0.5}))
        if c >= 25:
            for i, (category, group) in enumerate((("age", "65+"), ("disability", "deaf"),
                                                   ("age", "65+"))):
                findings.append(seed._finding(user, "bias.user_group", 0.8, True, {
                    "category": category, "group": group}) | {"id": f"edge-{c}-{i}"})
    return turns, findings


@pytest.fixture(scope="module")
def wide_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    engine = wide.wide_store(tmp_path_factory.mktemp("wide"))
    Sink(engine).write(*_edge_rows())
    yield engine
    engine.dispose()


def test_generated_store_gives_the_same_numbers(wide_engine: Engine) -> None:
    worst = compare(wide_engine, Window(wide.END - wide.WEEK, wide.END))
    print(json.dumps({"generated": worst}))
    # the store is made to have something in every comparison
    new = comparisons(wide_engine, Window(wide.END - wide.WEEK, wide.END), Settings())
    assert new["gap"].rows and new["harms"]["toxicity"].rows and new["models"] is not None
    assert any(r.change for r in new["empathy"].rows)
    assert "(no bot) / (no model)" in [r.key for r in new["empathy"].rows]
    gaps = {r.key: r.now["n"] for r in new["gap"].rows}
    assert gaps[f"65+ (age) · {wide.FLAT_BOT}"] == 75  # 50 seeded + 25 mentioning two groups
    assert gaps[f"deaf (disability) · {wide.FLAT_BOT}"] == 25


def test_a_window_off_the_day_is_rounded_up_to_it(wide_engine: Engine) -> None:
    until = wide.END - wide.WEEK / 2 + wide.WEEK / 700  # 12:14 on a day mid-week
    window = default_window(wide_engine, until)
    assert window.end == until.replace(hour=0, minute=0, second=0) + wide.WEEK / 7
    assert window.end.hour == window.end.minute == window.end.second == 0
    compare(wide_engine, window)


@pytest.mark.slow
def test_example_data_gives_the_same_numbers(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chatmon.db'}"
    res = CliRunner().invoke(cli, ["run", str(EXAMPLES), "--json", "--no-progress"],
                             env={"CHATMON_DATABASE_URL": url})
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["turns_stored"] == 460
    engine = db.make_engine(url)
    try:
        window = default_window(engine)
        worst = compare(engine, window)
        print(json.dumps({"examples": worst}))
        old = per_reply.comparisons(engine, window.start, window.end, window.previous().start)
        assert old["empathy"].rows and old["models"] is not None
    finally:
        engine.dispose()
