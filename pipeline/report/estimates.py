"""The report's comparisons, with the intervals of ``chatmon compare`` (:mod:`pipeline.compare.
stats`: Wilson for rates, Newcombe for a difference of rates, a fixed-seed bootstrap for means
and their difference).

A group (a bot, a bot and model, a user group) with fewer replies than the minimum is not
estimated at all: it is listed as having too few replies. A difference is *marked* only when its
interval excludes 0 (``significant``); otherwise it is shown as what it is, an interval around 0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pipeline.compare.stats import (
    Estimate,
    bootstrap_diff,
    bootstrap_mean,
    excludes_zero,
    newcombe,
    wilson,
)

MIN_REPLIES = 20
CONFIDENCE = 0.95
K = TypeVar("K")
R = TypeVar("R")


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


def split(items: Iterable[R], key: Callable[[R], K | None]) -> dict[K, list[R]]:
    """Items by ``key`` (None: left out), keys in sorted order."""
    out: dict[K, list[R]] = defaultdict(list)
    for item in items:
        k = key(item)
        if k is not None:
            out[k].append(item)
    return dict(sorted(out.items(), key=lambda kv: str(kv[0])))


def means(now: Mapping[str, Sequence[float]], before: Mapping[str, Sequence[float]],
          min_replies: int = MIN_REPLIES, confidence: float = CONFIDENCE) -> Groups:
    """Per group: the mean now and before (bootstrap intervals) and the change."""
    rows, too_few = [], []
    for key, values in now.items():
        if len(values) < min_replies:
            too_few.append((key, len(values)))
            continue
        earlier = before.get(key, ())
        if len(earlier) < min_replies:
            rows.append(Row(key, bootstrap_mean(values, confidence).as_dict()))
            continue
        rows.append(Row(key, bootstrap_mean(values, confidence).as_dict(),
                        bootstrap_mean(earlier, confidence).as_dict(),
                        _diff(bootstrap_diff(earlier, values, confidence))))
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


def gaps(groups: Mapping[str, tuple[Sequence[float], Sequence[float]]],
         min_replies: int = MIN_REPLIES, confidence: float = CONFIDENCE) -> Groups:
    """Per group, (its values, the rest's values): the group's mean minus the rest's, with the
    bootstrap interval of that difference. Both sides need the minimum."""
    rows, too_few = [], []
    for key, (group, rest) in groups.items():
        if len(group) < min_replies or len(rest) < min_replies:
            too_few.append((key, len(group)))
            continue
        rows.append(Row(key, bootstrap_mean(group, confidence).as_dict(),
                        bootstrap_mean(rest, confidence).as_dict(),
                        _diff(bootstrap_diff(rest, group, confidence))))
    return Groups(rows, too_few, min_replies)
