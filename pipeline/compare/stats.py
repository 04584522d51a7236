"""Confidence intervals for ``chatmon compare`` and ``chatmon report``: Wilson score intervals
for rates, Newcombe's hybrid score interval for a difference of two rates, percentile bootstrap
for means and their difference. Deterministic: the bootstrap draws from a generator with a fixed
seed, over values in a fixed order, so the same store gives the same output.

Means from their sums alone (:class:`Moments`: n, the sum and the sum of squares, what the
rollups keep): Student's t interval for a mean and Welch's for a difference of two, so that the
report never reads the replies themselves (issue 41). From 20 values per group on, the two kinds
of interval agree closely (docs/dashboards.md, "Intervals").

A difference is "larger than chance" when its interval excludes 0 (for two rates this is close
to a two-proportion test at the same level, but stays sensible at 0 or n events).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

SEED = 20_240_501
RESAMPLES = 2000
# Above this many values per sample the bootstrap's memory and time grow for no gain: the
# normal approximation of the mean (central limit) is as good there.
MAX_BOOTSTRAP_N = 20_000


@dataclass(frozen=True, slots=True)
class Estimate:
    value: float | None
    low: float | None
    high: float | None
    n: int

    def as_dict(self) -> dict[str, float | int | None]:
        r = _round
        return {"value": r(self.value), "low": r(self.low), "high": r(self.high), "n": self.n}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def z_value(confidence: float) -> float:
    if not 0.5 <= confidence < 1.0:
        raise ValueError(f"confidence must be in [0.5, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def _wilson_bounds(k: int, n: int, z: float) -> tuple[float, float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return p, max(0.0, centre - half), min(1.0, centre + half)


def wilson(k: int, n: int, confidence: float = 0.95) -> Estimate:
    """The Wilson score interval of the rate k/n (Wilson 1927); None values for n = 0."""
    if n == 0:
        return Estimate(None, None, None, 0)
    return Estimate(*_wilson_bounds(k, n, z_value(confidence)), n)


def newcombe(k1: int, n1: int, k2: int, n2: int, confidence: float = 0.95) -> Estimate:
    """Difference of rates k2/n2 - k1/n1 with Newcombe's hybrid score interval (Newcombe 1998,
    method 10), built from the two Wilson intervals."""
    if n1 == 0 or n2 == 0:
        return Estimate(None, None, None, min(n1, n2))
    z = z_value(confidence)
    (p1, l1, u1), (p2, l2, u2) = _wilson_bounds(k1, n1, z), _wilson_bounds(k2, n2, z)
    d = p2 - p1
    low = d - math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2)
    high = d + math.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2)
    return Estimate(d, low, high, min(n1, n2))


def _means(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """RESAMPLES bootstrap means of ``values``, drawn in chunks to bound memory."""
    n, out, chunk = len(values), [], max(1, 2_000_000 // max(1, len(values)))
    for start in range(0, RESAMPLES, chunk):
        idx = rng.integers(0, n, size=(min(chunk, RESAMPLES - start), n))
        out.append(values[idx].mean(axis=1))
    return np.concatenate(out)


def bootstrap_mean(values: Sequence[float], confidence: float = 0.95) -> Estimate:
    """Mean with a percentile bootstrap interval (normal approximation for very large n)."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return Estimate(None, None, None, 0)
    mean = float(x.mean())
    if x.size > MAX_BOOTSTRAP_N:
        half = z_value(confidence) * float(x.std(ddof=1)) / math.sqrt(x.size)
        return Estimate(mean, mean - half, mean + half, int(x.size))
    boots = _means(x, np.random.default_rng(SEED))
    lo, hi = np.quantile(boots, [(1 - confidence) / 2, (1 + confidence) / 2])
    return Estimate(mean, float(lo), float(hi), int(x.size))


def bootstrap_diff(first: Sequence[float], second: Sequence[float],
                   confidence: float = 0.95) -> Estimate:
    """mean(second) - mean(first), each sample resampled on its own (independent samples)."""
    a, b = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if a.size == 0 or b.size == 0:
        return Estimate(None, None, None, int(min(a.size, b.size)))
    d = float(b.mean() - a.mean())
    if max(a.size, b.size) > MAX_BOOTSTRAP_N:
        se = math.sqrt(float(a.var(ddof=1)) / a.size + float(b.var(ddof=1)) / b.size)
        half = z_value(confidence) * se
        return Estimate(d, d - half, d + half, int(min(a.size, b.size)))
    rng = np.random.default_rng(SEED)
    boots = _means(b, rng) - _means(a, rng)
    lo, hi = np.quantile(boots, [(1 - confidence) / 2, (1 + confidence) / 2])
    return Estimate(d, float(lo), float(hi), int(min(a.size, b.size)))


@dataclass(frozen=True, slots=True)
class Moments:
    """A sample known only by its size, sum and sum of squares: enough for its mean and the
    t interval of it, and they add and subtract (a bot's replies minus one user group's)."""

    n: int = 0
    total: float = 0.0
    total_sq: float = 0.0

    @classmethod
    def of(cls, values: Sequence[float]) -> Moments:
        return cls(len(values), math.fsum(values), math.fsum(v * v for v in values))

    def __add__(self, other: Moments) -> Moments:
        return Moments(self.n + other.n, self.total + other.total,
                       self.total_sq + other.total_sq)

    def __sub__(self, other: Moments) -> Moments:
        return Moments(self.n - other.n, self.total - other.total,
                       self.total_sq - other.total_sq)

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None

    @property
    def variance(self) -> float | None:
        """The sample variance (n - 1); None under two values. Never below 0 (rounding)."""
        if self.n < 2:
            return None
        return max(0.0, (self.total_sq - self.total * self.total / self.n) / (self.n - 1))


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _t_tail(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom, t >= 0."""
    x = df / (df + t * t)
    a, b = df / 2.0, 0.5
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x)) if x < 1.0 else 0.0
    if x < (a + 1.0) / (a + b + 2.0):
        return 0.5 * front * _betacf(a, b, x) / a
    return 0.5 * (1.0 - front * _betacf(b, a, 1.0 - x) / b)


def _t_density(t: float, df: float) -> float:
    return math.exp(math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0)
                    - (df + 1.0) / 2.0 * math.log1p(t * t / df)) / math.sqrt(df * math.pi)


def t_value(confidence: float, df: float) -> float:
    """The two-sided Student's t quantile (the t of ``mean ± t · se``) for ``df`` >= 1 degrees
    of freedom: Newton's method on the exact tail from the Cornish-Fisher expansion (Abramowitz
    and Stegun 26.7.5), bisection where that does not settle; the normal quantile beyond 10**6
    degrees (at 95 % they differ by under 3e-6 there)."""
    z = z_value(confidence)
    if not df >= 1.0:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    if df > 1e6:
        return z
    target = (1.0 - confidence) / 2.0
    t = z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df * df)
    for _ in range(50):
        step = (_t_tail(t, df) - target) / _t_density(t, df)
        t += step
        if t <= 0.0 or not math.isfinite(t):
            break
        if abs(step) < 1e-12 * t:
            return t
    low, high = z, 2.0 * z  # bisection: the tail falls as t grows
    while _t_tail(high, df) > target:
        low, high = high, 2.0 * high
    while high - low > 1e-12 * high:
        mid = (low + high) / 2.0
        low, high = (mid, high) if _t_tail(mid, df) > target else (low, mid)
    return (low + high) / 2.0


def t_mean(m: Moments, confidence: float = 0.95,
           within: tuple[float, float] | None = None) -> Estimate:
    """The mean with Student's t interval, from the moments alone (no interval under two
    values). ``within``: the range the values lie in (a score's [0, 1]); the interval is cut
    to it, as a mean can never leave it (near a bound, with few values off it, the t interval
    would cross it where the bootstrap's stops at it)."""
    if m.n == 0:
        return Estimate(None, None, None, 0)
    mean, var = m.total / m.n, m.variance
    if var is None:
        return Estimate(mean, None, None, m.n)
    half = t_value(confidence, m.n - 1) * math.sqrt(var / m.n)
    low, high = mean - half, mean + half
    if within is not None:
        low, high = max(low, within[0]), min(high, within[1])
    return Estimate(mean, low, high, m.n)


def welch_diff(first: Moments, second: Moments, confidence: float = 0.95) -> Estimate:
    """mean(second) - mean(first) with Welch's interval (unequal variances, Welch-Satterthwaite
    degrees of freedom), from the moments alone (no interval under two values a side)."""
    if first.n == 0 or second.n == 0:
        return Estimate(None, None, None, min(first.n, second.n))
    d = second.total / second.n - first.total / first.n
    va, vb = first.variance, second.variance
    if va is None or vb is None:
        return Estimate(d, None, None, min(first.n, second.n))
    sa, sb = va / first.n, vb / second.n
    se = math.sqrt(sa + sb)
    if se == 0.0:
        return Estimate(d, d, d, min(first.n, second.n))
    df = (sa + sb) ** 2 / (sa * sa / (first.n - 1) + sb * sb / (second.n - 1))
    half = t_value(confidence, max(1.0, df)) * se
    return Estimate(d, d - half, d + half, min(first.n, second.n))


def excludes_zero(e: Estimate) -> bool | None:
    """Whether the interval lies wholly on one side of 0; None when there is no interval."""
    if e.low is None or e.high is None:
        return None
    return e.low > 0 or e.high < 0


def sign_flip_p(values: Sequence[float]) -> float | None:
    """Two-sided p-value that the values' mean is 0, by flipping signs (a paired permutation
    test): exact over all 2**n sign patterns up to n = 16, else 20,000 fixed-seed draws. Honest
    at tiny n: 3 pairs can never reach p < 0.25, so a gap from 3 pairs is never called real."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return None
    observed = abs(float(x.mean())) - 1e-12  # ties count as extreme
    if x.size <= 16:
        patterns = ((np.arange(2 ** x.size)[:, None] >> np.arange(x.size)) & 1) * 2 - 1
        return float((np.abs((patterns * x).mean(axis=1)) >= observed).mean())
    patterns = np.random.default_rng(SEED).choice([-1, 1], size=(20_000, x.size))
    extreme = int((np.abs((patterns * x).mean(axis=1)) >= observed).sum())
    return (extreme + 1) / (len(patterns) + 1)  # the observed pattern counts as one draw
