"""The report's statistics (pipeline/report/estimates.py) and its label rules (layout.py):
groups under the minimum are left out and listed, rates have chatmon compare's intervals, means
Student's t and Welch's from their moments (issue 41: the report reads rollups, not replies,
so the bootstrap intervals these tests pinned before are now the moments' ones), and a
difference counts only when its interval excludes 0."""

from __future__ import annotations

import random

import pytest

from pipeline.compare.stats import Moments, welch_diff, wilson
from pipeline.report import estimates as est
from pipeline.report.layout import abbreviate, label_with_bot


def _values(n: int, centre: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [min(1.0, max(0.0, centre + rng.uniform(-0.1, 0.1))) for _ in range(n)]


def _scores(n: int, centre: float, seed: int) -> Moments:
    return Moments.of(_values(n, centre, seed))


def test_groups_under_the_minimum_are_listed_not_estimated() -> None:
    g = est.means({"a": _scores(19, 0.5, 1), "b": _scores(20, 0.5, 2),
                   "c": Moments.of([0.4])},
                  {"a": _scores(30, 0.5, 3), "b": _scores(30, 0.5, 4)}, min_replies=20)
    assert [r.key for r in g.rows] == ["b"]
    assert g.too_few == [("a", 19), ("c", 1)]
    assert est.means({"b": _scores(5, 0.5, 2)}, {}, min_replies=5).rows[0].key == "b"
    # a bot with replies but no empathy score is listed with 0
    assert est.means({"none": Moments()}, {}).too_few == [("none", 0)]


@pytest.mark.parametrize("before_n,now_centre,significant", [
    (40, 0.30, True),  # a real drop: its interval is below 0
    (40, 0.50, False),  # the same replies again: within chance
    (40, 0.49, False),  # a small shift on 40 replies: within chance
    (10, 0.30, None),  # the week before had too few: no change at all
])
def test_a_change_is_marked_only_when_its_interval_excludes_zero(
        before_n: int, now_centre: float, significant: bool | None) -> None:
    before, now = _scores(before_n, 0.5, 5), _scores(40, now_centre, 6)
    (row,) = est.means({"bot": now}, {"bot": before}, min_replies=20).rows
    if significant is None:
        assert row.before is None and row.change is None and not row.significant
        return
    expected = welch_diff(before, now).as_dict()
    assert row.change is not None
    assert (row.change["low"], row.change["high"]) == (expected["low"], expected["high"])
    assert row.significant is significant
    assert significant == (row.change["low"] > 0 or row.change["high"] < 0)


def test_rates_use_wilson_and_newcombe() -> None:
    g = est.rates({"toxic": (12, 30), "calm": (1, 30), "tiny": (3, 8)},
                  {"toxic": (0, 30), "calm": (0, 30)})
    rows = {r.key: r for r in g.rows}
    assert g.too_few == [("tiny", 8)]
    w = wilson(12, 30)
    assert rows["toxic"].now == w.as_dict()
    change = rows["toxic"].change
    assert rows["toxic"].significant and change is not None and change["low"] > 0
    assert not rows["calm"].significant  # 1 of 30 after 0 of 30 is chance


def test_a_gap_needs_both_sides_and_counts_only_outside_chance() -> None:
    rest = _scores(60, 0.5, 7)
    g = est.gaps({"deaf": (_scores(50, 0.25, 8), rest), "same": (_scores(50, 0.5, 9), rest),
                  "five": (_scores(5, 0.1, 10), rest),
                  "no rest": (_scores(30, 0.5, 11), Moments())})
    rows = {r.key: r for r in g.rows}
    assert set(rows) == {"deaf", "same"}
    assert g.too_few == [("five", 5), ("no rest", 30)]
    gap = rows["deaf"].change
    assert rows["deaf"].significant and gap is not None and gap["high"] < 0
    assert not rows["same"].significant


def test_labels_are_cut_in_the_middle_and_stay_unique() -> None:
    assert abbreviate(["short"]) == ["short"]
    long = "helpdesk-north-01 / acme-support-assistant-2026-09-eu-west-1"
    assert abbreviate([long]) == ["helpdesk-north-01…09-eu-west-1"]
    # cut alike at 20 characters: both keep more until they differ
    twins = ["bot / acme-support-assistant-2026-09-eu-west-1-blue",
             "bot / acme-support-assistant-2026-11-eu-west-1-blue"]
    out = abbreviate(twins, 20)
    assert len(set(out)) == 2 and all(len(o) < len(t) for o, t in zip(out, twins, strict=True))
    assert abbreviate(twins, 20) == out  # deterministic


def test_text_and_bot_labels_keep_the_bot() -> None:
    out = label_with_bot(["i completely understand your frustration", "thanks"],
                         ["helpdesk-a", "helpdesk-a"])
    assert out == ["i completely unders… · helpdesk-a", "thanks · helpdesk-a"]
