"""Did the controller keep up? Latency through one run, first third against last third.

The bench keeps `concurrency` requests in flight (a closed loop: a new request leaves as
soon as one is answered). A controller that keeps up answers the last third of a run as
fast as the first; one that falls behind (a queue filling, a table growing, a lock held
longer and longer) answers it slower, and its mean latency is no steady figure. The report
then says so instead of printing the mean alone.

A run that offers every request at once (concurrency >= requests / 3) has no steady
state to compare: each request waits behind those before it, so its latency is its place
in the line. That is said too ("burst"), with the spread the line made.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

GROWTH_LIMIT = 1.5  # last third's median over the first third's beyond this: falling behind
THIRDS = 3


@dataclass(frozen=True)
class Pace:
    requests: int
    concurrency: int
    # median end-to-end latency of the first and last third by the time sent (a burst: of
    # the fastest and the slowest third)
    first_ms: float
    last_ms: float
    verdict: str  # "steady", "falling behind" or "burst"

    @property
    def growth(self) -> float:
        return self.last_ms / self.first_ms if self.first_ms > 0 else float("inf")

    @property
    def behind(self) -> bool:
        return self.verdict == "falling behind"

    def describe(self) -> str:
        if self.verdict == "burst":
            return (
                f"burst: {self.requests} requests with {self.concurrency} in flight, latency "
                f"is the place in the line (fastest third p50 {self.first_ms:.1f} ms, "
                f"slowest third {self.last_ms:.1f} ms)"
            )
        thirds = f"first third p50 {self.first_ms:.1f} ms, last third {self.last_ms:.1f} ms"
        said = f"{self.verdict}: {thirds} (x{self.growth:.2f})"
        if self.behind and self.concurrency == 1:
            # one request in flight: no queue can fill; each request cost more than the last
            said += ", with one request in flight: each cost more as the run went on"
        return said


def pace(sent_and_latency: Sequence[tuple[float, float]], concurrency: int) -> Pace:
    """Judge one run from (time sent, end-to-end ms) per request, in any order."""
    if len(sent_and_latency) < THIRDS:
        raise ValueError(f"need at least {THIRDS} requests, got {len(sent_and_latency)}")
    n = len(sent_and_latency)
    burst = concurrency * THIRDS > n
    # a burst has no order to follow: its thirds are the fastest and the slowest answered
    ordered = (
        sorted(ms for _, ms in sent_and_latency)
        if burst
        else [ms for _, ms in sorted(sent_and_latency)]
    )
    third = n // THIRDS
    first = statistics.median(ordered[:third])
    last = statistics.median(ordered[n - third :])
    if burst:
        verdict = "burst"
    elif last > GROWTH_LIMIT * first:
        verdict = "falling behind"
    else:
        verdict = "steady"
    return Pace(n, concurrency, first, last, verdict)
