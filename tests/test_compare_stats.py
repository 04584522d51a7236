"""The intervals behind ``chatmon compare``: Wilson and Newcombe against published values, the
bootstrap's determinism and coverage, the sign-flip test's exact p-values, and the clear errors
of ``compare`` itself."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.compare.data import Selection
from pipeline.compare.stats import (
    MAX_BOOTSTRAP_N,
    bootstrap_diff,
    bootstrap_mean,
    excludes_zero,
    newcombe,
    sign_flip_p,
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
