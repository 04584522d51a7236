"""The report's comparisons, with the intervals of :mod:`pipeline.compare.stats`: Wilson for
rates, Newcombe for a difference of rates, Student's t for means and Welch's for their
difference, from the moments (count, sum, sum of squares) the rollups keep, so that no reply is
read (issue 41; ``chatmon compare`` keeps its bootstrap).

A group (a bot, a bot and model, a user group) with fewer replies than the minimum is not
estimated at all: it is listed as having too few replies. A difference is *marked* only when its
interval excludes 0 (``significant``); otherwise it is shown as what it is, an interval around 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.compare.stats import (
    Estimate,
    Moments,
    excludes_zero,
    newcombe,
    t_mean,
    welch_diff,
    wilson,
)

MIN_REPLIES = 20
CONFIDENCE = 0.95
UNIT = (0.0, 1.0)  # scores, alignment
LEVELS = (0.0, 2.0)  # EPITOME levels


@dataclass(frozen=True)
class Row:
    """One group: this window's estimate, the window before's (None when that one had too few
    replies) and the change between them (``later - earlier``), or for a gap, the group's
    difference to the rest (``change``, with ``before`` the rest's estimate)."""

    key: str
    now: dict[str, Any]
    before: dict[str, Any] | None = None
    change: dict[str, Any] | None = None

    @property
    def significant(self) -> bool:
        return bool(self.change and self.change["significant"])


@dataclass(frozen=True)
class Groups:
    rows: list[Row] = field(default_factory=list)
    too_few: list[tuple[str, int]] = field(default_factory=list)  # (key, replies)
    min_replies: int = MIN_REPLIES


def _diff(e: Estimate) -> dict[str, Any]:
    return {**e.as_dict(), "significant": bool(excludes_zero(e))}


def means(now: Mapping[str, Moments], before: Mapping[str, Moments],
          min_replies: int = MIN_REPLIES, confidence: float = CONFIDENCE,
          within: tuple[float, float] | None = UNIT) -> Groups:
    """Per group: the mean now and before (t intervals, cut to ``within``, the values'
    range) and the change (Welch)."""
    def mean(m: Moments) -> dict[str, Any]:
        return t_mean(m, confidence, within).as_dict()

    rows, too_few = [], []
    for key, m in now.items():
        if m.n < min_replies:
            too_few.append((key, m.n))
            continue
        earlier = before.get(key, Moments())
        if earlier.n < min_replies:
            rows.append(Row(key, mean(m)))
            continue
        rows.append(Row(key, mean(m), mean(earlier), _diff(welch_diff(earlier, m, confidence))))
    return Groups(rows, too_few, min_replies)


def rates(now: Mapping[str, tuple[int, int]], before: Mapping[str, tuple[int, int]],
          min_replies: int = MIN_REPLIES, confidence: float = CONFIDENCE) -> Groups:
    """Per group, (events, replies) now and before: the rates (Wilson) and the change
    (Newcombe)."""
    rows, too_few = [], []
    for key, (k, n) in now.items():
        if n < min_replies:
            too_few.append((key, n))
            continue
        k0, n0 = before.get(key, (0, 0))
        if n0 < min_replies:
            rows.append(Row(key, wilson(k, n, confidence).as_dict()))
            continue
        rows.append(Row(key, wilson(k, n, confidence).as_dict(),
                        wilson(k0, n0, confidence).as_dict(),
                        _diff(newcombe(k0, n0, k, n, confidence))))
    return Groups(rows, too_few, min_replies)


def gaps(groups: Mapping[str, tuple[Moments, Moments]],
         min_replies: int = MIN_REPLIES, confidence: float = CONFIDENCE) -> Groups:
    """Per group, (its sample, the rest's): the group's mean minus the rest's, with Welch's
    interval of that difference. Both sides need the minimum."""
    rows, too_few = [], []
    for key, (group, rest) in groups.items():
        if group.n < min_replies or rest.n < min_replies:
            too_few.append((key, group.n))
            continue
        rows.append(Row(key, t_mean(group, confidence, UNIT).as_dict(),
                        t_mean(rest, confidence, UNIT).as_dict(),
                        _diff(welch_diff(rest, group, confidence))))
    return Groups(rows, too_few, min_replies)
