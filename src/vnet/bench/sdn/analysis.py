"""Pure judgements on perfbench runs: overload, fairness (Jain) and the noisy tenant's effect.

A system that falls behind the offered load has no steady latency to report:
its queue grows through the run, so the median of the whole window depends on
how long the run was. Such a point is marked "overloaded" with the reasons,
found from the run's own counters and from its per-message records (the
measured window cut in thirds: latency growing from the first third to the
last is a queue filling).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean, median
from typing import Any

# A run "keeps up" while all of these hold.
MAX_LOSS = 0.01  # answered: all but 1 % of what was sent in the window
MIN_RATE_RATIO = 0.97  # achieved: at least 97 % of the target rate
MAX_GROWTH = 2.0  # last third's median at most twice the first third's ...
GROWTH_FLOOR_US = 1_000.0  # ... once it exceeds 1 ms (below that, doubling is jitter)
STANDING_QUEUE_US = 100_000.0  # a median over 100 ms is a queue, whatever its trend
BACKLOG_BYTES = 256 * 1024  # perfbench could not write: the peer set the pace


@dataclass(frozen=True)
class Thirds:
    """Median latency (µs) and lost messages in each third of the measured window."""

    p50_us: tuple[float | None, float | None, float | None]
    lost: tuple[int, int, int]

    @property
    def growth(self) -> float | None:
        """Last third's median over the first's (None without both)."""
        first, last = self.p50_us[0], self.p50_us[2]
        if first is None or last is None or first <= 0:
            return None
        return last / first


def thirds_of(samples: Iterable[tuple[int, float | None]], start_ns: int, end_ns: int) -> Thirds:
    """Split (send time ns, latency µs or None if lost) samples into the window's thirds."""
    third = max(1, (end_ns - start_ns) // 3)
    lat: list[array[float]] = [array("d"), array("d"), array("d")]
    lost = [0, 0, 0]
    for ts, latency in samples:
        if not start_ns <= ts < end_ns:
            continue
        k = min(2, (ts - start_ns) // third)
        if latency is None:
            lost[k] += 1
        else:
            lat[k].append(latency)
    p50 = tuple(median(a) if a else None for a in lat)
    return Thirds(p50_us=(p50[0], p50[1], p50[2]), lost=(lost[0], lost[1], lost[2]))


def read_records(path: Path, skip_tenant: int | None = None) -> Iterable[tuple[int, float | None]]:
    """(request_ts_ns, latency_us or None) from perfbench's records.csv, one row at a time.

    `skip_tenant`: leave out that tenant's messages (its connection_id).
    """
    skip = None if skip_tenant is None else str(skip_tenant).encode()
    with path.open("rb") as f:
        f.readline()  # header
        for line in f:
            # xid,request_type,request_ts_ns,request_size,response_type,response_ts_ns,
            # response_size,latency_us,connection_id
            cols = line.split(b",", 8)
            if len(cols) < 9 or cols[8].strip() == skip:
                continue
            yield int(cols[2]), (float(cols[7]) if cols[7] else None)


def overload_reasons(totals: dict[str, Any], thirds: Thirds | None, backlog: int) -> list[str]:
    """Why a run did not keep up with its offered load (empty: it kept up).

    `totals` is perfbench's "totals" (sent, lost, target_rate, achieved_rate,
    latency); `backlog` the largest send backlog of any tenant in bytes.
    """
    reasons = []
    sent, lost = totals.get("sent", 0), totals.get("lost", 0)
    if sent == 0:
        return ["nothing sent"]
    if lost > MAX_LOSS * sent:
        reasons.append(f"{100 * lost / sent:.1f} % unanswered")
    target, achieved = totals.get("target_rate", 0.0), totals.get("achieved_rate", 0.0)
    if target > 0 and achieved < MIN_RATE_RATIO * target:
        reasons.append(f"sent {achieved:.0f}/s of {target:.0f}/s")
    if backlog >= BACKLOG_BYTES:
        reasons.append(f"send backlog {backlog // 1024} KiB")
    p50 = totals.get("latency", {}).get("p50_us", 0.0)
    if p50 > STANDING_QUEUE_US:
        reasons.append(f"p50 {p50 / 1000:.0f} ms (a standing queue)")
    growth = thirds.growth if thirds is not None else None
    last = thirds.p50_us[2] if thirds is not None else None
    if growth is not None and last is not None and growth > MAX_GROWTH and last > GROWTH_FLOOR_US:
        reasons.append(f"latency grew {growth:.1f}x from first to last third")
    return reasons


# -- fairness and isolation ----------------------------------------------------------------


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index (sum x)^2 / (n * sum x^2): 1 when all equal, 1/n when one has all."""
    if not values:
        raise ValueError("Jain's index of no values")
    if any(v < 0 for v in values):
        raise ValueError("Jain's index needs non-negative values")
    squares = sum(v * v for v in values)
    if squares == 0:
        return 1.0
    return sum(values) ** 2 / (len(values) * squares)


def others_p99(tenants: Sequence[dict[str, Any]], noisy: int) -> list[float]:
    """The p99 latency (µs) of every tenant but the noisy one, from perfbench's per-tenant list."""
    return [
        t["latency"]["p99_us"]
        for t in tenants
        if t["tenant"] != noisy and t["latency"]["count"] > 0
    ]


def noisy_rise(quiet: Sequence[float], noisy: Sequence[float]) -> float:
    """How much the other tenants' p99 rose with the noisy tenant, as a fraction.

    Mean over the other tenants of their p99 with the noisy tenant, over the
    same without it, minus one: 0.1 is a 10 % rise, negative a fall.
    """
    if not quiet or not noisy:
        raise ValueError("need the other tenants' p99 with and without the noisy tenant")
    base = fmean(quiet)
    if base <= 0:
        raise ValueError("the quiet run's p99 must be positive")
    return fmean(noisy) / base - 1.0
