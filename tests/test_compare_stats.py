"""The intervals behind ``chatmon compare``: Wilson and Newcombe against published values, the
bootstrap's determinism and coverage, the sign-flip test's exact p-values, and the clear errors
of ``compare`` itself. The report's intervals from moments (issue 41): Student's t quantiles
against published tables, the t and Welch intervals against their textbook formulas, and their
agreement with the bootstrap from 20 values on."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.compare.data import Selection
from pipeline.compare.stats import (
    MAX_BOOTSTRAP_N,
    Moments,
    bootstrap_diff,
    bootstrap_mean,
    excludes_zero,
    newcombe,
    sign_flip_p,
    t_mean,
    t_value,
    welch_diff,
    wilson,
    z_value,
)
from pipeline.compare.view import CompareError, build
from pipeline.store import db


# Newcombe (1998), "Interval estimation for the difference between independent proportions",
# Table II: Wilson intervals (method 3) and the hybrid score difference (method 10).
@pytest.mark.parametrize(("k", "n", "low", "high"), [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
])
def test_wilson_matches_published_intervals(k: int, n: int, low: float, high: float) -> None:
    e = wilson(k, n)
    assert e.value == pytest.approx(k / n)
    assert e.low == pytest.approx(low, abs=1e-4) and e.high == pytest.approx(high, abs=1e-4)


@pytest.mark.parametrize(("k1", "n1", "k2", "n2", "low", "high"), [
    (0, 10, 0, 10, -0.2775, 0.2775),
    (0, 20, 0, 10, -0.1611, 0.2775),
    (48, 80, 56, 70, 0.0524, 0.3339),  # 56/70 - 48/80
    (3, 10, 9, 10, 0.1705, 0.8090),  # 9/10 - 3/10
    (2, 7, 6, 7, 0.0582, 0.8062),
    (0, 20, 10, 10, 0.6791, 1.0),
    (0, 10, 10, 10, 0.6075, 1.0),
])
def test_newcombe_matches_published_intervals(k1: int, n1: int, k2: int, n2: int, low: float,
                                              high: float) -> None:
    e = newcombe(k1, n1, k2, n2)
    assert e.value == pytest.approx(k2 / n2 - k1 / n1)
    assert e.low == pytest.approx(low, abs=1e-4) and e.high == pytest.approx(high, abs=1e-4)
    assert excludes_zero(e) is (low > 0)


@pytest.mark.parametrize(("k1", "n1", "k2", "n2", "different"), [
    (0, 20, 19, 20, True),  # a template nearly always flagged vs never
    (2, 20, 9, 20, True),
    (2, 20, 5, 20, False),  # a near miss: more, but within chance at n = 20
    (10, 20, 10, 20, False),
    (1, 400, 12, 400, True),
])
def test_rate_differences_larger_than_chance(k1: int, n1: int, k2: int, n2: int,
                                             different: bool) -> None:
    assert excludes_zero(newcombe(k1, n1, k2, n2)) is different


def test_empty_samples_give_no_estimate() -> None:
    assert wilson(0, 0).value is None and newcombe(0, 0, 1, 2).value is None
    assert bootstrap_mean([]).value is None and bootstrap_diff([], [1.0]).value is None
    assert excludes_zero(wilson(0, 0)) is None and sign_flip_p([]) is None


def test_bootstrap_is_deterministic_and_covers_the_mean() -> None:
    rng = np.random.default_rng(1)
    x = list(rng.normal(0.6, 0.1, 40))
    a, b = bootstrap_mean(x), bootstrap_mean(x)
    assert a == b
    assert a.low is not None and a.high is not None and a.low < a.value < a.high  # type: ignore[operator]
    assert a.high - a.low == pytest.approx(2 * 1.96 * 0.1 / np.sqrt(40), rel=0.35)
    assert bootstrap_mean([0.5] * 10).as_dict() == {"value": 0.5, "low": 0.5, "high": 0.5,
                                                    "n": 10}


@pytest.mark.parametrize(("shift", "different"), [(0.2, True), (0.1, True), (0.0, False),
                                                  (0.01, False)])
def test_mean_differences_larger_than_chance(shift: float, different: bool) -> None:
    first = list(np.random.default_rng(7).normal(0.5, 0.1, 30))  # sd 0.1: se of the diff ~0.026
    second = [v + shift for v in reversed(first)]  # the same values, shifted
    d = bootstrap_diff(first, second)
    assert excludes_zero(d) is different
    assert d.value == pytest.approx(shift)


def test_large_samples_use_the_normal_approximation() -> None:
    x = np.random.default_rng(3).normal(1.0, 2.0, MAX_BOOTSTRAP_N + 1)
    e = bootstrap_mean(list(x))
    half = z_value(0.95) * float(np.std(x, ddof=1)) / np.sqrt(x.size)
    assert e.low == pytest.approx(e.value - half) and e.high == pytest.approx(e.value + half)  # type: ignore[operator]


@pytest.mark.parametrize(("values", "p"), [
    ([0.1, 0.2, 0.3], 0.25),  # 3 pairs all one way: the smallest p there is
    ([0.1] * 6, 2 / 64),
    ([0.1, -0.1] * 3, 1.0),
    ([0.3, 0.2, -0.05, 0.25, 0.1, 0.15], 4 / 64),
])
def test_sign_flip_exact_p(values: list[float], p: float) -> None:
    assert sign_flip_p(values) == pytest.approx(p)


def test_confidence_must_be_sensible() -> None:
    with pytest.raises(ValueError, match="confidence"):
        z_value(1.0)


# Student's t, two-sided: (confidence, degrees of freedom, t) from the published tables;
# df 2 and 1 also have closed forms: (2p - 1) / sqrt(2p(1 - p)) and tan(pi (p - 1/2)).
@pytest.mark.parametrize(("confidence", "df", "t"), [
    (0.95, 1, 12.7062), (0.95, 2, 4.3027), (0.95, 5, 2.5706), (0.95, 10, 2.2281),
    (0.95, 19, 2.0930), (0.95, 30, 2.0423), (0.95, 120, 1.9799), (0.99, 10, 3.1693),
    (0.99, 29, 2.7564), (0.90, 20, 1.7247), (0.80, 4, 1.5332), (0.999, 3, 12.9240),
])
def test_t_quantiles_match_the_tables(confidence: float, df: float, t: float) -> None:
    assert t_value(confidence, df) == pytest.approx(t, abs=1e-4)


def test_t_quantiles_between_and_beyond() -> None:
    # fractional degrees (Welch): between the neighbours, falling; far out: the normal's
    values = [t_value(0.95, df) for df in (7, 7.25, 7.5, 8)]
    assert values == sorted(values, reverse=True) and len(set(values)) == 4
    assert t_value(0.95, 10**7) == z_value(0.95)
    assert t_value(0.95, 10**6) == pytest.approx(z_value(0.95), abs=3e-6)
    with pytest.raises(ValueError, match="degrees of freedom"):
        t_value(0.95, 0.5)


def test_moments_add_subtract_and_give_the_sample_variance() -> None:
    x, y = [0.2, 0.4, 0.9, 0.5], [0.1, 0.7, 0.3]
    m = Moments.of(x) + Moments.of(y)
    assert m.n == 7 and m.mean == pytest.approx(np.mean(x + y))
    assert m.variance == pytest.approx(np.var(x + y, ddof=1))
    rest = m - Moments.of(y)
    assert rest.n == 4 and rest.mean == pytest.approx(np.mean(x))
    assert rest.variance == pytest.approx(np.var(x, ddof=1))
    assert Moments().mean is None and Moments.of([1.0]).variance is None
    assert Moments.of([0.3] * 1000).variance == 0.0  # never below 0 from rounding


def test_t_mean_is_the_textbook_interval() -> None:
    x = list(np.random.default_rng(5).normal(0.6, 0.1, 25))
    e = t_mean(Moments.of(x))
    half = 2.0639 * float(np.std(x, ddof=1)) / np.sqrt(25)  # t(0.975, 24)
    assert e.value == pytest.approx(np.mean(x)) and e.n == 25
    assert e.low == pytest.approx(e.value - half, abs=1e-5)  # type: ignore[operator]
    assert e.high == pytest.approx(e.value + half, abs=1e-5)  # type: ignore[operator]
    assert t_mean(Moments()).value is None
    # two replies of 23 off the floor: the t interval would cross 0, the mean cannot
    sparse = Moments.of([1.0, 1.0] + [0.0] * 21)
    assert t_mean(sparse).low < 0 < t_mean(sparse).high  # type: ignore[operator]
    cut = t_mean(sparse, within=(0.0, 2.0))
    assert cut.low == 0.0 and cut.high == t_mean(sparse).high and cut.value == 2 / 23
    one = t_mean(Moments.of([0.4]))
    assert one.value == 0.4 and one.low is None and one.high is None


def test_welch_diff_is_the_textbook_interval() -> None:
    a = list(np.random.default_rng(8).normal(0.5, 0.05, 20))
    b = list(np.random.default_rng(9).normal(0.55, 0.2, 60))
    d = welch_diff(Moments.of(a), Moments.of(b))
    va, vb = np.var(a, ddof=1) / 20, np.var(b, ddof=1) / 60
    df = (va + vb) ** 2 / (va ** 2 / 19 + vb ** 2 / 59)
    half = t_value(0.95, df) * np.sqrt(va + vb)
    assert d.value == pytest.approx(np.mean(b) - np.mean(a)) and d.n == 20
    assert d.low == pytest.approx(d.value - half) and d.high == pytest.approx(d.value + half)  # type: ignore[operator]
    assert 60 < df < 79  # unequal variances: fewer degrees than the pooled 78
    assert welch_diff(Moments(), Moments.of(b)).value is None
    same = welch_diff(Moments.of([0.5] * 30), Moments.of([0.7] * 30))
    assert same.value == pytest.approx(0.2) and excludes_zero(same)


def test_welch_matches_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    a = list(np.random.default_rng(10).uniform(0, 1, 23))
    b = list(np.random.default_rng(11).uniform(0.2, 0.9, 41))
    res = stats.ttest_ind(b, a, equal_var=False)
    low, high = res.confidence_interval(0.95)
    d = welch_diff(Moments.of(a), Moments.of(b))
    assert (d.low, d.high) == pytest.approx((low, high), abs=1e-9)


@pytest.mark.parametrize("n", [20, 50, 500])
def test_moment_intervals_agree_with_the_bootstrap_from_20_values(n: int) -> None:
    """What the report changed (issue 41): from 20 values a group on, each bound of the t
    interval lies within a quarter of the bootstrap interval's half width of the bootstrap's
    (scores in [0, 1], skewed; levels 0, 1, 2)."""
    rng = np.random.default_rng(n)
    for x, y in ((list(rng.beta(2, 5, n)), list(rng.beta(2, 4, n))),
                 (list(rng.choice([0.0, 1.0, 1.0, 2.0], n)), list(rng.choice([0.0, 1.0], n)))):
        for new, old in ((t_mean(Moments.of(x)), bootstrap_mean(x)),
                         (welch_diff(Moments.of(x), Moments.of(y)), bootstrap_diff(x, y))):
            half = (old.high - old.low) / 2  # type: ignore[operator]
            assert new.value == pytest.approx(old.value)
            assert abs(new.low - old.low) <= 0.25 * half  # type: ignore[operator]
            assert abs(new.high - old.high) <= 0.25 * half  # type: ignore[operator]


def test_compare_needs_two_models_with_replies(sqlite_url: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    db.upgrade(sqlite_url)
    engine = db.make_engine(sqlite_url)
    with pytest.raises(CompareError, match="two or more different models"):
        build(engine, ["a"], Selection())
    with pytest.raises(CompareError, match="two or more different models"):
        build(engine, ["a", "a"], Selection())
    with pytest.raises(CompareError, match="no assistant replies for model.*'a', 'b'"):
        build(engine, ["a", "b"], Selection())
    monkeypatch.setenv("CHATMON_DATABASE_URL", sqlite_url)
    res = CliRunner().invoke(cli, ["compare", "--model", "a", "--model", "b"])
    assert isinstance(res.exception, CompareError)  # `chatmon` prints it as one line, exit 2
