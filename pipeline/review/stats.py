"""Small statistics for the review loop: Wilson intervals and threshold suggestions.

A suggestion works on reviewed findings, not reviews: two people judging one finding are one
observation (their share of "present" answers), or the interval would be too narrow.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pipeline.errors import MissingExtraError

Z95 = 1.959963984540054
MIN_REVIEWED = 30  # reviewed findings of a label before any threshold is suggested
MIN_ABOVE = 10  # reviewed findings at or above a suggested threshold


def kappa(a: Sequence[Any], b: Sequence[Any],
          weights: Literal["linear", "quadratic"] | None = None) -> float | None:
    """Cohen's kappa of two raters (scikit-learn), quadratic-weighted for ordinal scales, as
    Kumar et al. report it; None where it is undefined (neither rater varies, or no pair)."""
    from sklearn.metrics import cohen_kappa_score

    if not a or len(set(a) | set(b)) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value = cohen_kappa_score(list(a), list(b), weights=weights)
    return None if math.isnan(value) else round(float(value), 4)


def alpha_two(a: Sequence[float], b: Sequence[float],
              level: Literal["nominal", "ordinal", "interval"]) -> float | None:
    """Krippendorff's alpha of two raters on the same units; None where undefined."""
    try:
        import krippendorff
        import numpy as np
    except ImportError as exc:
        raise MissingExtraError("krippendorff", "review") from exc
    if not a or len(set(a) | set(b)) < 2:
        return None
    value = krippendorff.alpha(reliability_data=np.array([a, b], dtype=float),
                               level_of_measurement=level)
    return None if math.isnan(value) else round(float(value), 4)


def wilson(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for a proportion (good at small n and near 0 or 1, unlike the
    normal approximation)."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class Suggestion:
    status: str  # "ok" | "too_few_reviews" | "unreachable"
    reason: str
    threshold: float | None = None
    precision: float | None = None
    ci95: tuple[float, float] | None = None
    above: int | None = None  # reviewed findings at or above the threshold
    meets_target_at_95: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "reason": self.reason}
        if self.status == "ok" and self.ci95 is not None:
            out.update(threshold=self.threshold, precision=_r(self.precision),
                       ci95=[_r(self.ci95[0]), _r(self.ci95[1])], above=self.above,
                       meets_target_at_95=self.meets_target_at_95)
        return out


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def suggest_threshold(scores: Sequence[float], present: Sequence[float], target: float,
                      min_reviewed: int = MIN_REVIEWED, min_above: int = MIN_ABOVE) -> Suggestion:
    """The lowest threshold at which the reviewed findings scoring at or above it reach
    ``target`` precision, with at least ``min_above`` of them; ``present`` holds each finding's
    share of "present" answers (0..1)."""
    n = len(scores)
    if n < min_reviewed:
        return Suggestion("too_few_reviews", f"{n} reviewed findings; at least {min_reviewed} "
                          "are needed to suggest a threshold")
    pairs = sorted(zip(scores, present, strict=True), reverse=True)
    best: tuple[float, float, int] | None = None
    hits = 0.0
    for i, (score, share) in enumerate(pairs, start=1):
        hits += share
        # A threshold sits between distinct scores: decide only at the last of a tie.
        if i < n and pairs[i][0] == score:
            continue
        if i >= min_above and hits / i >= target:
            best = (score, hits, i)
    if best is None:
        return Suggestion("unreachable", f"no threshold reaches precision {target:g} with at "
                          f"least {min_above} reviewed findings above it")
    score, hits, above = best
    low, high = wilson(hits, above)
    return Suggestion("ok", f"lowest threshold with precision >= {target:g} on {above} reviewed "
                      "findings at or above it", score, hits / above, (low, high), above,
                      low >= target)
