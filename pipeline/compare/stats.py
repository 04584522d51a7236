"""Confidence intervals for ``chatmon compare``: Wilson score intervals for rates, Newcombe's
hybrid score interval for a difference of two rates, percentile bootstrap for means and their
difference. Deterministic: the bootstrap draws from a generator with a fixed seed, over values in
a fixed order, so the same store gives the same output.

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
