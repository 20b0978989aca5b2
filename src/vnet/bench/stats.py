"""Summary statistics for repeated benchmark runs.

Conventions (also printed at the foot of every report):

* ``stdev`` is the sample standard deviation (divisor n - 1).
* ``ci95`` is the half-width of the two-sided 95% confidence interval of the mean,
  Student t with n - 1 degrees of freedom: ``t(0.975, n-1) * stdev / sqrt(n)``.
  It assumes the runs are independent and roughly normal; a handful of repeats is
  what benchmarks can afford, which is why t and not the normal quantile.
* Percentiles use linear interpolation between order statistics (Hyndman & Fan
  type 7; numpy's default ``method="linear"``, R's default, Excel PERCENTILE.INC).
  With fewer than 100 samples p99 lies between the two largest samples.
* n = 1 gives a mean but no spread: ``stdev`` and ``ci95`` are ``None``.
  n = 0 raises :class:`EmptySampleError`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Final

import numpy as np
from scipy.special import stdtrit  # Student's t inverse: scipy.stats takes 0.6 s more to import

CONFIDENCE = 0.95
PERCENTILE_METHOD: Final = "linear"  # Hyndman & Fan type 7


class EmptySampleError(ValueError):
    """Raised when a statistic is asked of zero samples."""


@dataclass(frozen=True)
class Summary:
    """Descriptive statistics of one set of repeated measurements."""

    n: int
    mean: float
    stdev: float | None  # None when n == 1
    ci95: float | None  # half-width of the 95% CI of the mean; None when n == 1
    min: float
    p50: float
    p90: float
    p99: float
    max: float

    @property
    def low(self) -> float | None:
        """Lower end of the 95% CI, or None when it is undefined."""
        return None if self.ci95 is None else self.mean - self.ci95

    @property
    def high(self) -> float | None:
        """Upper end of the 95% CI, or None when it is undefined."""
        return None if self.ci95 is None else self.mean + self.ci95

    @property
    def relative_ci(self) -> float | None:
        """ci95 / |mean|: a quick "is this run stable" number; None if undefined."""
        if self.ci95 is None or self.mean == 0:
            return None
        return self.ci95 / abs(self.mean)

    def to_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


def _as_array(samples: Sequence[float]) -> np.ndarray:
    values = np.asarray(samples, dtype=float)
    if values.ndim != 1:
        raise ValueError(f"samples must be a flat sequence, got shape {values.shape}")
    if values.size == 0:
        raise EmptySampleError("no samples: cannot summarise an empty measurement")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"samples must be finite numbers, got {list(samples)!r}")
    return values


def t_half_width(stdev: float, n: int, confidence: float = CONFIDENCE) -> float:
    """Half-width of the two-sided Student-t confidence interval of a mean of n samples."""
    if n < 2:
        raise ValueError(f"a confidence interval needs at least 2 samples, got n={n}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    t = float(stdtrit(n - 1, 0.5 + confidence / 2))
    return t * stdev / math.sqrt(n)


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation (Hyndman & Fan type 7)."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    return float(np.percentile(_as_array(samples), q, method=PERCENTILE_METHOD))


def summarize(samples: Sequence[float]) -> Summary:
    """Summarise samples; raises EmptySampleError for n = 0, ValueError for NaN/inf."""
    values = _as_array(samples)
    n = int(values.size)
    p50, p90, p99 = (
        float(v) for v in np.percentile(values, [50, 90, 99], method=PERCENTILE_METHOD)
    )
    stdev = float(np.std(values, ddof=1)) if n > 1 else None
    return Summary(
        n=n,
        mean=float(np.mean(values)),
        stdev=stdev,
        ci95=t_half_width(stdev, n) if stdev is not None else None,
        min=float(values.min()),
        p50=p50,
        p90=p90,
        p99=p99,
        max=float(values.max()),
    )


@dataclass(frozen=True)
class Ratio:
    """A ratio of two means with an approximate 95% CI half-width (None if undefined)."""

    value: float
    ci95: float | None

    def as_percent_change(self) -> Ratio:
        """(ratio - 1) * 100: 0.97 -> -3.0, i.e. 3 % below the baseline."""
        ci = None if self.ci95 is None else self.ci95 * 100
        return Ratio(value=(self.value - 1) * 100, ci95=ci)


def ratio(value: Summary, baseline: Summary) -> Ratio:
    """mean(value) / mean(baseline) with the CI propagated to first order.

    Approximation: relative half-widths add in quadrature,
    ``hw_r = |r| * sqrt((hw_v / m_v)^2 + (hw_b / m_b)^2)``. This is the delta method
    for independent runs; it is good when both relative CIs are small (below ~10 %)
    and understates the interval when the baseline CI is wide (Fieller's interval
    would then be asymmetric). The CI is None when either input has none.
    Raises ZeroDivisionError when the baseline mean is 0.
    """
    if baseline.mean == 0:
        raise ZeroDivisionError("baseline mean is 0: ratio undefined")
    r = value.mean / baseline.mean
    if value.ci95 is None or baseline.ci95 is None:
        return Ratio(value=r, ci95=None)
    # Same formula without dividing by value.mean, so a zero numerator (e.g. 0 % loss)
    # still gets an interval.
    hw = math.hypot(value.ci95 / baseline.mean, r * baseline.ci95 / baseline.mean)
    return Ratio(value=r, ci95=abs(hw))
