"""Statistics of repeated benchmark runs: CI, percentiles, edge cases, ratios."""

from __future__ import annotations

import math

import pytest

from vnet.bench.stats import (
    EmptySampleError,
    Ratio,
    Summary,
    percentile,
    ratio,
    summarize,
    t_half_width,
)

ONE_TO_TEN = [float(v) for v in range(1, 11)]


def test_ci_of_one_to_ten_matches_textbook_values() -> None:
    # mean 5.5, sd 3.0277, t(0.975, 9) = 2.2622 -> 2.2622 * 3.0277 / sqrt(10) = 2.1659
    s = summarize(ONE_TO_TEN)
    assert s.n == 10
    assert s.mean == pytest.approx(5.5, abs=1e-12)
    assert s.stdev == pytest.approx(3.0277, abs=1e-3)
    assert s.ci95 == pytest.approx(2.1659, abs=1e-3)
    assert s.low == pytest.approx(5.5 - 2.1659, abs=1e-3)
    assert s.high == pytest.approx(5.5 + 2.1659, abs=1e-3)
    assert (s.min, s.max) == (1.0, 10.0)


def test_t_half_width_uses_student_t_not_normal() -> None:
    # n = 2: t(0.975, 1) = 12.706, far from the normal 1.96.
    assert t_half_width(1.0, 2) == pytest.approx(12.7062 / math.sqrt(2), abs=1e-3)
    assert t_half_width(3.0277, 10) == pytest.approx(2.1659, abs=1e-3)
    assert t_half_width(1.0, 10, confidence=0.99) > t_half_width(1.0, 10)
    with pytest.raises(ValueError, match="at least 2"):
        t_half_width(1.0, 1)
    with pytest.raises(ValueError, match="confidence"):
        t_half_width(1.0, 5, confidence=1.5)


def test_percentiles_interpolate_linearly() -> None:
    s = summarize(ONE_TO_TEN)
    # Type 7: position 1 + (n - 1) * q.
    assert s.p50 == pytest.approx(5.5)
    assert s.p90 == pytest.approx(9.1)
    assert s.p99 == pytest.approx(9.91)
    assert percentile([1, 2, 3, 4], 25) == pytest.approx(1.75)
    assert percentile([4, 1, 3, 2], 0) == 1.0  # order of samples does not matter
    assert percentile([4, 1, 3, 2], 100) == 4.0
    with pytest.raises(ValueError, match=r"0\.\.100"):
        percentile([1.0], 101)


def test_single_sample_has_no_spread_and_no_ci() -> None:
    s = summarize([42.0])
    assert s == Summary(
        n=1, mean=42.0, stdev=None, ci95=None, min=42.0, p50=42.0, p90=42.0, p99=42.0, max=42.0
    )
    assert s.low is None and s.high is None and s.relative_ci is None


def test_no_samples_is_a_clear_error() -> None:
    with pytest.raises(EmptySampleError, match="no samples"):
        summarize([])
    with pytest.raises(EmptySampleError):
        percentile([], 50)
    assert issubclass(EmptySampleError, ValueError)


def test_non_finite_samples_are_rejected() -> None:
    with pytest.raises(ValueError, match="finite"):
        summarize([1.0, float("nan")])
    with pytest.raises(ValueError, match="finite"):
        summarize([float("inf"), 1.0])


def test_identical_samples_give_zero_width_ci() -> None:
    s = summarize([3, 3, 3])
    assert s.stdev == 0.0 and s.ci95 == 0.0
    assert s.relative_ci == 0.0


def test_summary_to_dict_has_all_fields() -> None:
    assert set(summarize(ONE_TO_TEN).to_dict()) == {
        "n",
        "mean",
        "stdev",
        "ci95",
        "min",
        "p50",
        "p90",
        "p99",
        "max",
    }


def _summary(mean: float, ci95: float | None) -> Summary:
    return Summary(
        n=5, mean=mean, stdev=None, ci95=ci95, min=mean, p50=mean, p90=mean, p99=mean, max=mean
    )


def test_ratio_propagates_relative_errors_in_quadrature() -> None:
    r = ratio(_summary(90.0, 9.0), _summary(100.0, 5.0))  # 10 % and 5 % relative
    assert r.value == pytest.approx(0.9)
    assert r.ci95 == pytest.approx(0.9 * math.hypot(0.10, 0.05), rel=1e-12)


def test_ratio_of_a_zero_mean_still_has_an_interval() -> None:
    r = ratio(_summary(0.0, 0.2), _summary(4.0, 0.4))
    assert r.value == 0.0
    assert r.ci95 == pytest.approx(0.05)


def test_ratio_without_ci_and_with_zero_baseline() -> None:
    assert ratio(_summary(2.0, None), _summary(4.0, 0.1)) == Ratio(value=0.5, ci95=None)
    with pytest.raises(ZeroDivisionError):
        ratio(_summary(1.0, 0.1), _summary(0.0, 0.1))


def test_ratio_as_percent_change() -> None:
    change = Ratio(value=0.97, ci95=0.01).as_percent_change()
    assert change.value == pytest.approx(-3.0)
    assert change.ci95 == pytest.approx(1.0)
    assert Ratio(value=1.5, ci95=None).as_percent_change() == Ratio(value=50.0, ci95=None)
